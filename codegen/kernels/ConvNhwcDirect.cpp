//===- ConvNhwcDirect.cpp - NHWC direct and depthwise convolutions --------===//
//
// Convolution in NHWC as a direct loop nest: depthwise and grouped
// convolutions with few channels per group, vectorized along channels.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"
#include "codegen/kernels/Precision.h"
#include "dialects/kiln/ConvStrategy.h"

#include <algorithm>
#include <functional>

using namespace mlir;

namespace kiln::codegen::kernels {

/// Direct NHWC convolution, one workgroup per output row: depthwise and
/// other thin groups (and weights that are not constants). Taps accumulate
/// into the output row, innermost over the contiguous output channels.
/// A depthwise conv in the register form may have a prologue (its input
/// computed from an 8-bit activation: kiln-fuse's byte convolutions) and an
/// epilogue that ends in another element type (the next 8-bit activation).
LogicalResult Lowering::convNhwcDirect(kiln::ConvOp op, const Epilogue *epi,
                                       const Epilogue *pro) {
  auto in = shape(op.getInput()), w = shape(op.getWeight()), out = shape(op.getResult());
  int64_t N = in[0], H = in[1], W = in[2], C = in[3];
  int64_t OH = out[1], OW = out[2], O = out[3], KH = w[2], KW = w[3];
  int64_t G = static_cast<int64_t>(op.getGroup()), Cg = C / G, Og = O / G, KK = KH * KW;
  auto s = op.getStrides(), d = op.getDilations(), pad = op.getPads();
  int wBuf = bufferOf.lookup(op.getWeight());
  // Constant weights become [tap][c][O] (o contiguous); others are read OIHW.
  bool packed = p.buffers[wBuf].kind == Buffer::Constant;
  SmallVector<Value> ins{pro ? pro->start : op.getInput(), op.getWeight()};
  bool hasBias = static_cast<bool>(op.getBias());
  if (hasBias)
    ins.push_back(op.getBias());
  int firstSite = ins.size();
  if (epi)
    ins.append(epi->siteArgs.begin(), epi->siteArgs.end());
  int firstProSite = ins.size();
  if (pro)
    ins.append(pro->siteArgs.begin(), pro->siteArgs.end());
  int outBuf = ins.size();
  // The result's element type: the epilogue's (an 8-bit activation), else f32.
  Type outElem = epi ? elemType(epi->yielded) : elemType(op.getResult());
  int packedBuf = -1;
  if (packed) {
    std::vector<float> pk(KK * Cg * O);
    const float *src = reinterpret_cast<const float *>(p.weights.data() + p.buffers[wBuf].offset);
    for (int64_t oc = 0; oc < O; ++oc)
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t t = 0; t < KK; ++t)
          pk[(t * Cg + c) * O + oc] = src[(oc * Cg + c) * KK + t];
    packedBuf = addConstantData(ArrayRef<char>(reinterpret_cast<const char *>(pk.data()),
                                               pk.size() * sizeof(float)));
  }
  // Weight (tap t, channel c, output channel oc); `lanes` output channels
  // from oc on when packed.
  auto weight = [&](KernelEmitter &e, int64_t t, Value c, Value oc) {
    if (packed)
      return e.vload(1, e.add(e.mul(e.add(e.idx(t * Cg), c), O), oc));
    return e.load(1, e.add(e.mul(e.add(e.mul(oc, Cg), c), KK), e.idx(t)));
  };
  // Output channels, vectorized when the weights are packed (contiguous).
  auto channels = [&](KernelEmitter &e, int64_t lo, int64_t hi,
                      const std::function<void(Value)> &body) {
    if (packed)
      e.vecLoop(lo, hi, body);
    else
      e.loop(lo, hi, body);
  };
  // Depthwise with packed weights: the KH input rows this output row reads
  // are copied, zero-padded, into a stack buffer; then every output pixel's
  // taps accumulate in registers (16 channels at a time, taps unrolled, no
  // bounds checks) and a light epilogue applies before the one store. A
  // costly one (a SiLU's exp and division) runs over the finished row
  // instead, while it is in L1: inside the tap loop its temporaries and
  // constants would push the taps' weights out of the registers (a 5x5
  // conv's 25 weights, 4 accumulators), spilling them every pixel.
  int64_t padL = pad[1], Wp = W + pad[1] + pad[3];
  bool dwRegisters =
      packed && Cg == 1 && Og == 1 && conv_strategy::depthwiseInRegisters(KH, KW, Wp, C);
  bool typedOut = !outElem.isF32();
  if ((pro || typedOut) &&
      !(dwRegisters && (!pro || conv_strategy::byteRingFits(KH, d[0], Wp))))
    return op.emitError("internal error: an 8-bit input or result on a direct convolution "
                        "outside the depthwise register form");
  // (A result stored in another type has no f32 row to finish in place;
  // the prologue's form computes each row a channel block at a time.)
  const Epilogue *tapEpi = lightEpilogue(epi) || typedOut || pro ? epi : nullptr;
  // Input element(s) at `at` through the prologue, as f32.
  auto input = [&](KernelEmitter &e, Value at) -> Value {
    Value x = asF32(e, e.vload(0, at));
    if (!pro)
      return x;
    // (kiln-fuse's prologues read scalars: a zero point.)
    return pro->apply(e, x, [&](int k) { return e.splat(e.load(firstProSite + k, e.idx(0))); });
  };
  // The epilogue over output row oh of image n (at outRow), finished.
  auto epilogueOverRow = [&](KernelEmitter &e, Value n, Value oh, Value outRow) {
    e.loop(0, OW, [&](Value ow) {
      Value pix = e.add(e.mul(oh, OW), ow), dst = e.add(outRow, e.mul(ow, O));
      e.vecLoop(0, O, [&](Value oc) {
        Value at = e.add(dst, oc);
        e.vstore(convEpilogueNhwc(e, epi, firstSite, n, pix, oc, e.vload(outBuf, at)), outBuf,
                 at);
      });
    });
  };
  // Depthwise: a band of output rows per workgroup (about 8 per image),
  // so the input rows that consecutive output rows share stay in the
  // core's caches.
  int64_t band = dwRegisters ? std::max<int64_t>(1, OH / 8) : 1, bands = ceilDiv(OH, band);
  liveRows(1, 1, bands);
  std::optional<int> outBuffer;
  if (typedOut)
    outBuffer = newBuffer(Buffer::Arena, std::max<int64_t>(elems(op.getResult()), 1) *
                                             widthOf(outElem), outElem);
  LogicalResult r = launch(op, ins, N * bands, [&](KernelEmitter &e) {
    if (dwRegisters) {
      Value n = e.div(e.wg, bands), oh0 = e.mul(e.rem(e.wg, bands), band);
      Value ohEnd = e.minI(e.add(oh0, e.idx(band)), e.idx(OH));
      Value inImg = e.mul(n, H * W * C);
      using Tap = std::function<Value(int64_t, int64_t, Value, Value, bool)>;
      // Output row oh (at outRow) of the channels at c (the current lanes),
      // their taps' weights `taps` in registers; `tap(ky, kx, ow, c, edge)`
      // reads the input under one tap, checking the columns when `edge`
      // (pixels outside [owLo, owHi)).
      auto blockRow = [&](Value oh, Value outRow, Value c, ArrayRef<Value> taps, Value bias,
                          int64_t owLo, int64_t owHi, const Tap &tap) {
        // P pixels at a time: P independent chains of taps, and (stride 1)
        // the input vectors that neighbouring pixels share loaded once.
        auto group = [&](Value ow, int64_t P, bool edge) {
          SmallVector<Value> acc(P, bias);
          for (int64_t ky = 0; ky < KH; ++ky)
            for (int64_t kx = 0; kx < KW; ++kx)
              for (int64_t q = 0; q < P; ++q)
                acc[q] = e.fma(tap(ky, kx, q ? e.add(ow, e.idx(q)) : ow, c, edge),
                               taps[ky * KW + kx], acc[q]);
          for (int64_t q = 0; q < P; ++q) {
            Value owq = q ? e.add(ow, e.idx(q)) : ow;
            Value pix = e.add(e.mul(oh, OW), owq);
            e.vstore(convEpilogueNhwc(e, tapEpi, firstSite, n, pix, c, acc[q]), outBuf,
                     e.add(e.add(outRow, e.mul(owq, O)), c));
          }
        };
        auto pixels = [&](int64_t from, int64_t to, bool edge) {
          constexpr int64_t P = 4;
          int64_t mid = edge ? from : from + (to - from) / P * P;
          if (mid > from)
            e.loop(e.idx(from), e.idx(mid), [&](Value ow) { group(ow, P, false); }, P);
          e.loop(mid, to, [&](Value ow) { group(ow, 1, edge); });
        };
        pixels(0, owLo, true);
        pixels(owLo, owHi, false);
        pixels(owHi, OW, true);
      };
      auto weightsOf = [&](Value c) {
        SmallVector<Value> taps;
        for (int64_t t = 0; t < KK; ++t)
          taps.push_back(weight(e, t, e.idx(0), c));
        return taps;
      };
      auto biasOf = [&](Value c) { return hasBias ? e.vload(2, c) : e.f32(0.0f); };
      auto outRowOf = [&](Value oh) { return e.mul(e.add(e.mul(n, OH), oh), OW * O); };
      if (pro) {
        // An input computed by a prologue (an 8-bit activation's
        // dequantization): channels outer, 16 at a time, each input row
        // of the band through the prologue once, into a ring of the R rows
        // one output row's taps span (zero-padded, 16 floats a pixel: 22 KB
        // for a 3x3 window over 112 columns, in L1); then the band's output
        // rows, the taps' weights in registers throughout.
        int64_t R = (KH - 1) * d[0] + 1;
        Value ring = e.scratch(R * Wp * 16);
        e.vecLoop(0, C, [&](Value c) {
          auto zero = [&](Value slot, int64_t from, int64_t to) {
            e.loop(from, to, [&](Value px) {
              e.vstoreM(e.f32(0.0f), ring, e.mul(e.add(e.mul(slot, Wp), px), 16));
            });
          };
          e.loop(0, R, [&](Value slot) {
            zero(slot, 0, padL);
            zero(slot, padL + W, Wp);
          });
          // Input row ih (padded: zeros outside [0, H)) into its slot.
          auto fill = [&](Value ih) {
            Value slot = e.rem(e.add(ih, e.idx(pad[0])), R);
            ifElse(e, inRangeS(e, ih, 0, H), [&] {
              Value src = e.add(inImg, e.add(e.mul(ih, W * C), c));
              e.loop(0, W, [&](Value iw) {
                e.vstoreM(input(e, e.add(src, e.mul(iw, C))), ring,
                          e.mul(e.add(e.mul(slot, Wp), e.add(iw, e.idx(padL))), 16));
              });
            }, [&] { zero(slot, padL, padL + W); });
          };
          SmallVector<Value> taps = weightsOf(c);
          Value bias = biasOf(c);
          e.loop(oh0, ohEnd, [&](Value oh) {
            // (ih + pad[0] >= 0 for every row an output row reads.)
            Value top = e.mul(oh, s[0]); // its first row, plus pad[0]
            // The rows new to this output row: all R at the band's start,
            // else the last min(s, R).
            Value first = arith::SelectOp::create(
                e.b, arith::CmpIOp::create(e.b, arith::CmpIPredicate::eq, oh, oh0), e.idx(0),
                e.idx(std::max<int64_t>(R - s[0], 0)));
            e.loop(first, e.idx(R), [&](Value j) { fill(signedSub(e, e.add(top, j), pad[0])); });
            SmallVector<Value> slotBase;
            for (int64_t ky = 0; ky < KH; ++ky)
              slotBase.push_back(e.mul(e.rem(e.add(top, e.idx(ky * d[0])), R), Wp * 16));
            blockRow(oh, outRowOf(oh), c, taps, bias, 0, OW,
                     [&](int64_t ky, int64_t kx, Value ow, Value, bool) -> Value {
                       return e.vloadM(ring, e.add(slotBase[ky],
                                                   e.mul(e.add(e.mul(ow, s[1]),
                                                               e.idx(kx * d[1])), 16)));
                     });
          });
        });
        return;
      }
      // (The border rows' copy: allocated once, outside the loop.)
      Value rows = e.scratch(KH * Wp * C);
      e.loop(oh0, ohEnd, [&](Value oh) {
      Value outRow = outRowOf(oh);
      // Channels outer, 16 at a time, with their taps' weights held in
      // registers for the whole row; the row's pixels inner.
      auto rowPass = [&](int64_t owLo, int64_t owHi, const Tap &tap) {
        e.vecLoop(0, C, [&](Value c) {
          blockRow(oh, outRow, c, weightsOf(c), biasOf(c), owLo, owHi, tap);
        });
      };
      // Rows whose taps all read inside the input (all but the padded
      // borders): the taps read the input where it is, the columns checked
      // only at the row's ends.
      Value ih0 = signedSub(e, e.mul(oh, s[0]), pad[0]);
      ifElse(e, inRangeS(e, ih0, 0, H - (KH - 1) * d[0]), [&] {
        int64_t owLo = 0, owHi = OW;
        for (int64_t kx = 0; kx < KW; ++kx) {
          auto [lo, hi] = validRange(OW, s[1], kx * d[1] - pad[1], W);
          owLo = std::max(owLo, lo);
          owHi = std::min(owHi, hi);
        }
        owHi = std::max(owHi, owLo);
        Value base = e.add(inImg, e.mul(ih0, W * C));
        rowPass(owLo, owHi, [&](int64_t ky, int64_t kx, Value ow, Value c, bool edge) -> Value {
          Value row = e.add(base, e.idx(ky * d[0] * W * C));
          Value iw = signedSub(e, e.add(e.mul(ow, s[1]), e.idx(kx * d[1])), pad[1]);
          if (!edge)
            return asF32(e, e.vload(0, e.add(row, e.add(e.mul(iw, C), c))));
          Value ok = inRangeS(e, iw, 0, W);
          Value at = arith::SelectOp::create(e.b, ok, iw, e.idx(0));
          Value x = asF32(e, e.vload(0, e.add(row, e.add(e.mul(at, C), c))));
          return arith::SelectOp::create(e.b, ok, x, e.f32(0.0f)).getResult();
        });
      }, [&] {
        // Border rows: the KH input rows, zero-padded, copied into a
        // stack buffer first.
        for (int64_t ky = 0; ky < KH; ++ky) {
          Value ih = signedSub(e, e.add(e.mul(oh, s[0]), e.idx(ky * d[0])), pad[0]);
          int64_t dst = ky * Wp * C;
          auto zero = [&](int64_t from, int64_t to) {
            e.vecLoop(from, to, [&](Value i) { e.vstoreM(e.f32(0.0f), rows, i); });
          };
          ifElse(e, inRangeS(e, ih, 0, H), [&] {
            Value src = e.add(inImg, e.mul(ih, W * C));
            zero(dst, dst + padL * C);
            e.vecLoop(0, W * C, [&](Value i) {
              e.vstoreM(asF32(e, e.vload(0, e.add(src, i))), rows,
                        e.add(i, e.idx(dst + padL * C)));
            });
            zero(dst + (padL + W) * C, dst + Wp * C);
          }, [&] { zero(dst, dst + Wp * C); });
        }
        rowPass(0, OW, [&](int64_t ky, int64_t kx, Value ow, Value c, bool) -> Value {
          Value at = e.add(e.add(e.mul(ow, s[1] * C), c), e.idx((ky * Wp + kx * d[1]) * C));
          return e.vloadM(rows, at);
        });
      });
      if (epi && !tapEpi)
        epilogueOverRow(e, n, oh, outRow);
      });
      return;
    }
    Value n = e.div(e.wg, OH), oh = e.rem(e.wg, OH);
    Value outRow = e.mul(e.wg, OW * O);
    e.loop(0, OW, [&](Value ow) {
      Value dst = e.add(outRow, e.mul(ow, O));
      e.vecLoop(0, O, [&](Value oc) {
        e.vstore(hasBias ? e.vload(2, oc) : e.f32(0.0f), outBuf, e.add(dst, oc));
      });
    });
    Value inImg = e.mul(n, H * W * C);
    for (int64_t ky = 0; ky < KH; ++ky) {
      Value ih = signedSub(e, e.add(e.mul(oh, s[0]), e.idx(ky * d[0])), pad[0]);
      ifElse(e, inRangeS(e, ih, 0, H), [&] {
        Value inRow = e.add(inImg, e.mul(ih, W * C));
        for (int64_t kx = 0; kx < KW; ++kx) {
          int64_t t = ky * KW + kx, off1 = kx * d[1] - pad[1];
          auto [owLo, owHi] = validRange(OW, s[1], off1, W);
          e.loop(owLo, owHi, [&](Value ow) {
            Value iw = off1 >= 0 ? e.add(e.mul(ow, s[1]), e.idx(off1))
                                 : signedSub(e, e.mul(ow, s[1]), -off1);
            Value src = e.add(inRow, e.mul(iw, C));
            Value dst = e.add(outRow, e.mul(ow, O));
            if (Cg == 1 && Og == 1) {
              // Depthwise: channel g reads channel g.
              channels(e, 0, O, [&](Value g) {
                Value acc = e.vload(outBuf, e.add(dst, g));
                Value x = e.vload(0, e.add(src, g));
                e.vstore(e.fadd(acc, e.fmul(x, weight(e, t, e.idx(0), g))), outBuf,
                         e.add(dst, g));
              });
              return;
            }
            e.loop(0, G, [&](Value g) {
              e.loop(0, Cg, [&](Value c) {
                Value x = e.load(0, e.add(src, e.add(e.mul(g, Cg), c)));
                channels(e, 0, Og, [&](Value oo) {
                  Value oc = e.add(e.mul(g, Og), oo);
                  Value at = e.add(dst, oc);
                  Value acc = e.vload(outBuf, at);
                  e.vstore(e.fadd(acc, e.fmul(e.splat(x), weight(e, t, c, oc))), outBuf, at);
                });
              });
            });
          });
        }
      });
    }
    if (epi)
      epilogueOverRow(e, n, oh, outRow);
  }, outBuffer);
  if (failed(r))
    return r;
  Launch &l = p.launches.back();
  l.layout = "NHWC";
  if (packed) // the kernel reads the packed copy, not the OIHW weights
    l.buffers[1] = packedBuf;
  return success();
}

} // namespace kiln::codegen::kernels
