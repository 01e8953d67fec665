//===- Pool.cpp - pooling -------------------------------------------------===//
//
// MaxPool, AveragePool and GlobalAveragePool, in NCHW and in NHWC.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"
#include "codegen/kernels/Precision.h"

#include <algorithm>
#include <functional>
#include <limits>

using namespace mlir;

namespace kiln::codegen::kernels {

/// NHWC max/average pooling: a band of output rows per workgroup (about 8
/// per image); each output pixel's window reduces in registers, 16
/// channels at a time, taps unrolled (those outside the input read as the
/// identity), one store per output vector.
template <typename PoolOp> LogicalResult Lowering::poolNhwc(PoolOp op, bool isMax) {
  auto in = shape(op.getInput()), out = shape(op.getResult());
  int64_t N = in[0], H = in[1], W = in[2], C = in[3], OH = out[1], OW = out[2];
  auto k = op.getKernelShape(), s = op.getStrides(), d = op.getDilations(),
       pad = op.getPads();
  bool includePad = op.getCountIncludePad();
  int64_t band = std::max<int64_t>(1, OH / 8), bands = ceilDiv(OH, band);
  liveRows(1, 1, bands);
  LogicalResult r = launch(op, {op.getInput()}, N * bands, [&](KernelEmitter &e) {
    Value n = e.div(e.wg, bands), oh0 = e.mul(e.rem(e.wg, bands), band);
    Value inImg = e.mul(n, H * W * C);
    // Average: the window's element count, from the rows and columns it covers.
    auto count1 = [&](Value o, int64_t kk, int64_t st, int64_t dl, int64_t p0,
                      int64_t size, int64_t pEnd) {
      Value cnt = e.idx(0);
      for (int64_t t = 0; t < kk; ++t) {
        Value i = signedSub(e, e.add(e.mul(o, st), e.idx(t * dl)), p0);
        Value ok = includePad ? inRangeS(e, i, -p0, size + pEnd) : inRangeS(e, i, 0, size);
        cnt = arith::SelectOp::create(e.b, ok, e.add(cnt, e.idx(1)), cnt);
      }
      return cnt;
    };
    // Tap t of a window along one axis: its index clamped into the input,
    // and whether it lies inside.
    auto taps = [&](Value o, int64_t kk, int64_t st, int64_t dl, int64_t p0, int64_t size) {
      SmallVector<std::pair<Value, Value>> t;
      for (int64_t i = 0; i < kk; ++i) {
        Value x = signedSub(e, e.add(e.mul(o, st), e.idx(i * dl)), p0);
        Value ok = inRangeS(e, x, 0, size);
        t.push_back({arith::SelectOp::create(e.b, ok, x, e.idx(0)), ok});
      }
      return t;
    };
    // Max pooling's inner windows (every tap inside the input): the taps
    // read where they are, no clamps or selects, and reduce with VMAXPS
    // (x > acc ? x : acc, one instruction where maximumf is a max, a
    // compare and a blend), their NaNs tracked on the side (an unordered
    // compare, OR-ed) so that a NaN anywhere in the window still makes
    // the result NaN.
    auto rangeOf = [&](int64_t kk, int64_t outSize, int64_t st, int64_t dl, int64_t p0,
                       int64_t size) {
      int64_t lo = 0, hi = outSize;
      for (int64_t t = 0; t < kk; ++t) {
        auto [a, b] = validRange(outSize, st, t * dl - p0, size);
        lo = std::max(lo, a);
        hi = std::min(hi, b);
      }
      return std::pair<int64_t, int64_t>{lo, std::max(lo, hi)};
    };
    auto [ohLo, ohHi] = rangeOf(k[0], OH, s[0], d[0], pad[0], H);
    auto [owLo, owHi] = rangeOf(k[1], OW, s[1], d[1], pad[1], W);
    auto innerMax = [&](Value oh, Value ow, Value dst) {
      Value ih0 = signedSub(e, e.mul(oh, s[0]), pad[0]);
      Value iw0 = signedSub(e, e.mul(ow, s[1]), pad[1]);
      Value corner = e.add(inImg, e.mul(e.add(e.mul(ih0, W), iw0), C));
      e.vecLoop(0, C, [&](Value c) {
        Value acc, nan;
        for (int64_t ky = 0; ky < k[0]; ++ky)
          for (int64_t kx = 0; kx < k[1]; ++kx) {
            Value at = e.add(corner, e.idx((ky * d[0] * W + kx * d[1]) * C));
            Value x = asF32(e, e.vload(0, e.add(at, c)));
            Value isNan = arith::CmpFOp::create(e.b, arith::CmpFPredicate::UNO, x, x);
            if (!acc) {
              acc = x, nan = isNan;
              continue;
            }
            Value gt = arith::CmpFOp::create(e.b, arith::CmpFPredicate::OGT, x, acc);
            acc = arith::SelectOp::create(e.b, gt, x, acc);
            nan = arith::OrIOp::create(e.b, nan, isNan);
          }
        acc = arith::SelectOp::create(e.b, nan, e.f32(std::nanf("")), acc);
        e.vstore(acc, 1, e.add(dst, c));
      });
    };
    bool innerPath = isMax && ohHi > ohLo && owHi > owLo;
    e.loop(oh0, e.minI(e.add(oh0, e.idx(band)), e.idx(OH)), [&](Value oh) {
      Value outRow = e.mul(e.add(e.mul(n, OH), oh), OW * C);
      auto rowTaps = taps(oh, k[0], s[0], d[0], pad[0], H);
      Value rowsIn = isMax ? Value() : count1(oh, k[0], s[0], d[0], pad[0], H, pad[2]);
      auto pixels = [&](Value from, Value to) {
      e.loop(from, to, [&](Value ow) {
        auto colTaps = taps(ow, k[1], s[1], d[1], pad[1], W);
        Value scale;
        if (!isMax) {
          Value cnt = e.mul(rowsIn, count1(ow, k[1], s[1], d[1], pad[1], W, pad[3]));
          scale = arith::DivFOp::create(
              e.b, e.f32(1.0f),
              arith::UIToFPOp::create(e.b, e.b.getF32Type(),
                                      arith::IndexCastOp::create(e.b, e.b.getI64Type(), cnt)));
        }
        Value dst = e.add(outRow, e.mul(ow, C));
        e.vecLoop(0, C, [&](Value c) {
          Value identity = e.f32(isMax ? -std::numeric_limits<float>::infinity() : 0.0f);
          Value acc = identity;
          for (auto [ih, rowOk] : rowTaps)
            for (auto [iw, colOk] : colTaps) {
              Value ok = arith::AndIOp::create(e.b, rowOk, colOk);
              Value at = e.add(e.add(inImg, e.mul(e.add(e.mul(ih, W), iw), C)), c);
              Value x = arith::SelectOp::create(e.b, ok, asF32(e, e.vload(0, at)), identity);
              acc = isMax ? arith::MaximumFOp::create(e.b, acc, x).getResult() : e.fadd(acc, x);
            }
          if (!isMax)
            acc = e.fmul(acc, e.splat(scale));
          e.vstore(acc, 1, e.add(dst, c));
        });
      });
      };
      if (!innerPath) {
        pixels(e.idx(0), e.idx(OW));
        return;
      }
      ifElse(e, inRangeS(e, oh, ohLo, ohHi), [&] {
        pixels(e.idx(0), e.idx(owLo));
        e.loop(owLo, owHi, [&](Value ow) { innerMax(oh, ow, e.add(outRow, e.mul(ow, C))); });
        pixels(e.idx(owHi), e.idx(OW));
      }, [&] { pixels(e.idx(0), e.idx(OW)); });
    });
  });
  if (succeeded(r))
    p.launches.back().layout = "NHWC";
  return r;
}

/// NHWC global average pooling: a workgroup per (image, block of channels)
/// sums the pixels, channels innermost.
LogicalResult Lowering::globalAvgPoolNhwc(kiln::GlobalAvgPoolOp op) {
  auto in = shape(op.getInput());
  int64_t N = in[0], P = in[1] * in[2], C = in[3];
  int64_t cb = std::min<int64_t>(C, 256), cBlocks = ceilDiv(C, cb);
  liveRows(1, 1, cBlocks);
  LogicalResult r = launch(op, {op.getInput()}, N * cBlocks, [&](KernelEmitter &e) {
    Value n = e.div(e.wg, cBlocks), c0 = e.mul(e.rem(e.wg, cBlocks), cb);
    Value cn = e.minI(e.idx(cb), arith::SubIOp::create(e.b, e.idx(C), c0));
    Value dst = e.add(e.mul(n, C), c0);
    e.vecLoop(e.idx(0), cn, [&](Value c) { e.vstore(e.f32(0.0f), 1, e.add(dst, c)); });
    Value src0 = e.add(e.mul(n, P * C), c0);
    e.loop(0, P, [&](Value px) {
      Value src = e.add(src0, e.mul(px, C));
      e.vecLoop(e.idx(0), cn, [&](Value c) {
        e.vstore(e.fadd(e.vload(1, e.add(dst, c)), e.vload(0, e.add(src, c))), 1, e.add(dst, c));
      });
    });
    e.vecLoop(e.idx(0), cn, [&](Value c) {
      e.vstore(e.fmul(e.vload(1, e.add(dst, c)), e.f32(1.0f / static_cast<float>(P))), 1,
               e.add(dst, c));
    });
  });
  if (succeeded(r))
    p.launches.back().layout = "NHWC";
  return r;
}

template <typename PoolOp> LogicalResult Lowering::pool(PoolOp op, bool isMax) {
  if (kiln::attr::isChannelsLast(op))
    return poolNhwc(op, isMax);
  auto in = shape(op.getInput()), out = shape(op.getResult());
  int64_t H = in[2], W = in[3], OH = out[2], OW = out[3];
  auto k = op.getKernelShape(), s = op.getStrides(), d = op.getDilations(),
       pad = op.getPads();
  bool includePad = op.getCountIncludePad();
  auto inRange = [](KernelEmitter &e, Value v, int64_t lo, int64_t hi) {
    Value a = arith::CmpIOp::create(e.b, arith::CmpIPredicate::sge, v, e.idx(lo));
    Value c = arith::CmpIOp::create(e.b, arith::CmpIPredicate::slt, v, e.idx(hi));
    return arith::AndIOp::create(e.b, a, c).getResult();
  };
  // ih = oh*s0 + ky*d0 - p0, iw likewise (signed index arithmetic).
  auto coords = [&](KernelEmitter &e, Value oh, Value ow, Value ky, Value kx) {
    Value ih = arith::SubIOp::create(e.b, e.add(e.mul(oh, s[0]), e.mul(ky, d[0])), e.idx(pad[0]));
    Value iw = arith::SubIOp::create(e.b, e.add(e.mul(ow, s[1]), e.mul(kx, d[1])), e.idx(pad[1]));
    return std::make_pair(ih, iw);
  };
  // One tap: acc combined with the input at (ih, iw) when it is inside.
  auto tap = [&](KernelEmitter &e, Value inPlane, Value ih, Value iw, Value acc) -> Value {
    Value valid = arith::AndIOp::create(e.b, inRange(e, ih, 0, H), inRange(e, iw, 0, W));
    // Clamp the address so the load is always in bounds, then select.
    Value ihc = arith::MaxSIOp::create(e.b, arith::MinSIOp::create(e.b, ih, e.idx(H - 1)), e.idx(0));
    Value iwc = arith::MaxSIOp::create(e.b, arith::MinSIOp::create(e.b, iw, e.idx(W - 1)), e.idx(0));
    Value x = e.load(0, e.add(inPlane, e.add(e.mul(ihc, W), iwc)));
    Value next = isMax ? arith::MaximumFOp::create(e.b, acc, x).getResult() : e.fadd(acc, x);
    return arith::SelectOp::create(e.b, valid, next, acc);
  };
  // Whether a tap counts towards an average's divisor.
  auto counted = [&](KernelEmitter &e, Value ih, Value iw) {
    return includePad ? arith::AndIOp::create(e.b, inRange(e, ih, -pad[0], H + pad[2]),
                                              inRange(e, iw, -pad[1], W + pad[3])).getResult()
                      : arith::AndIOp::create(e.b, inRange(e, ih, 0, H),
                                              inRange(e, iw, 0, W)).getResult();
  };
  // Windows up to 8x8 taps unroll; larger ones (PyTorch's tests pool 60x80)
  // run as loops so the kernel stays small.
  bool unroll = k[0] * k[1] <= 64;
  // The pooled value at (oh, ow) of the plane starting at inPlane.
  auto window = [&](KernelEmitter &e, Value inPlane, Value oh, Value ow) {
    Value acc = e.f32(isMax ? -std::numeric_limits<float>::infinity() : 0.0f);
    Value count = e.f32(0.0f);
    auto countTap = [&](Value ih, Value iw, Value c) {
      return arith::SelectOp::create(e.b, counted(e, ih, iw), e.fadd(c, e.f32(1.0f)), c)
          .getResult();
    };
    if (unroll) {
      for (int64_t ky = 0; ky < k[0]; ++ky)
        for (int64_t kx = 0; kx < k[1]; ++kx) {
          auto [ih, iw] = coords(e, oh, ow, e.idx(ky), e.idx(kx));
          acc = tap(e, inPlane, ih, iw, acc);
          if (!isMax)
            count = countTap(ih, iw, count);
        }
    } else {
      // Two loop nests (the sum or max, then the divisor): each carries one value.
      auto nest = [&](Value init, const std::function<Value(Value, Value, Value)> &f) {
        return e.reduce(e.idx(0), e.idx(k[0]), init, [&](Value ky, Value a) {
          return e.reduce(e.idx(0), e.idx(k[1]), a, [&](Value kx, Value a2) {
            auto [ih, iw] = coords(e, oh, ow, ky, kx);
            return f(ih, iw, a2);
          });
        });
      };
      acc = nest(acc, [&](Value ih, Value iw, Value a) { return tap(e, inPlane, ih, iw, a); });
      if (!isMax)
        count = nest(count, countTap);
    }
    if (!isMax)
      acc = arith::DivFOp::create(e.b, acc, count);
    return acc;
  };
  if (p.options.gpu) {
    // A grid-stride loop over the output elements, a thread per window.
    int64_t total = in[0] * in[1] * OH * OW;
    int64_t blocks = std::clamp<int64_t>(ceilDiv(total, kGpuThreads), 1, kGpuMaxBlocks);
    return gpuLaunch(op, {op.getInput()}, blocks, kGpuThreads, false, [&](KernelEmitter &e) {
      Value first = e.add(e.mul(e.bid(), kGpuThreads), e.tid());
      // (Live extents: the windows of the live images, a prefix.)
      Value n = GpuLivePrefix{liveSym, in[0], in[1] * OH * OW}.count(e);
      e.loop(first, n ? n : e.idx(total), [&](Value i) {
        Value plane = e.div(i, OH * OW), pix = e.rem(i, OH * OW);
        e.store(window(e, e.mul(plane, H * W), e.div(pix, OW), e.rem(pix, OW)), 1, i);
      }, blocks * kGpuThreads);
    });
  }
  liveRows(1, 1, in[1]);
  return launch(op, {op.getInput()}, in[0] * in[1], [&](KernelEmitter &e) {
    Value inPlane = e.mul(e.wg, H * W), outPlane = e.mul(e.wg, OH * OW);
    e.loop(0, OH, [&](Value oh) {
      e.loop(0, OW, [&](Value ow) {
        e.store(window(e, inPlane, oh, ow), 1, e.add(outPlane, e.add(e.mul(oh, OW), ow)));
      });
    });
  });
}

LogicalResult Lowering::globalAvgPool(kiln::GlobalAvgPoolOp op) {
  if (kiln::attr::isChannelsLast(op))
    return globalAvgPoolNhwc(op);
  auto in = shape(op.getInput());
  int64_t planes = in[0] * in[1], inner = elems(op.getInput()) / std::max<int64_t>(planes, 1);
  if (p.options.gpu)
    // A block per plane: its sum reduced over the block.
    return gpuRows(op, {op.getInput()}, planes, [&](KernelEmitter &e, Value plane, int64_t n) {
      Value base = e.mul(plane, inner);
      Value part = e.reduce(e.tid(), e.idx(inner), e.f32(0.0f), [&](Value i, Value acc) {
        return e.fadd(acc, e.load(0, e.add(base, i)));
      }, n);
      Value sum = e.blockReduce(part, n, e.shared(n / 32),
                                [&](Value a, Value c) { return e.fadd(a, c); }, 0.0f);
      e.ifThen(arith::CmpIOp::create(e.b, arith::CmpIPredicate::eq, e.tid(), e.idx(0)), [&] {
        e.store(arith::DivFOp::create(e.b, sum, e.f32(static_cast<float>(inner))), 1, plane);
      });
    }, {in[0], in[1]}, {liveSym, -1}); // (the live images' planes)
  liveRows(1, 1, in[1]);
  return launch(op, {op.getInput()}, planes, [&](KernelEmitter &e) {
    Value base = e.mul(e.wg, inner);
    Value sum = e.reduce(e.idx(0), e.idx(inner), e.f32(0.0f), [&](Value i, Value acc) {
      return e.fadd(acc, e.load(0, e.add(base, i)), true);
    });
    e.store(arith::DivFOp::create(e.b, sum, e.f32(static_cast<float>(inner))), 1, e.wg);
  });
}

// lowerOp (Lowering.cpp) calls the pools' builders.
template LogicalResult Lowering::pool(kiln::MaxPoolOp op, bool isMax);
template LogicalResult Lowering::pool(kiln::AvgPoolOp op, bool isMax);

} // namespace kiln::codegen::kernels
