//===- ConvNchw.cpp - NCHW convolutions -----------------------------------===//
//
// Convolution in NCHW: a GEMM over the kernel window per (image, group,
// tile of output channels and pixels), on packed weights through the
// ukernels, or a direct loop nest for few channels. The kernel window is
// unrolled at compile time so each inner loop runs over a constant, in-bounds
// range of output columns.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"
#include "dialects/kiln/ConvStrategy.h"
#include "codegen/kernels/Packing.h"
#include "codegen/kernels/Precision.h"
#include "codegen/kernels/Tiling.h"

#include <algorithm>

using namespace mlir;

namespace kiln::codegen::kernels {

/// A matrix-product conv kernel's arguments: weights, input, the bias if
/// any, the epilogue's sites (from `firstSite` on), the prologue's (from
/// `firstProSite` on), the output.
SmallVector<int> Lowering::convArgs(kiln::ConvOp op, int wBuf, int inBuf, const Epilogue *epi,
                                    int outBuf, int &firstSite, const Epilogue *pro,
                                    int *firstProSite) {
  SmallVector<int> ids{wBuf, inBuf};
  if (op.getBias())
    ids.push_back(bufferOf.lookup(op.getBias()));
  firstSite = ids.size();
  if (epi)
    for (Value v : epi->siteArgs)
      ids.push_back(bufferOf.lookup(v));
  if (firstProSite)
    *firstProSite = ids.size();
  if (pro)
    for (Value v : pro->siteArgs)
      ids.push_back(bufferOf.lookup(v));
  ids.push_back(outBuf);
  return ids;
}

/// The input element of output pixel (oh, ow) under kernel tap (ky, kx) of
/// an NCHW convolution: its offset in the input plane (clamped in bounds)
/// and whether it lies inside the image rather than in the padding.
std::pair<Value, Value> convTap(KernelEmitter &e, Value oh, Value ow, Value ky, Value kx,
                                ArrayRef<int64_t> s, ArrayRef<int64_t> d, ArrayRef<int64_t> pad,
                                int64_t H, int64_t W) {
  ImplicitLocOpBuilder &b = e.b;
  // ih = oh*s0 + ky*d0 - p0 (signed), iw likewise.
  Value ih = arith::SubIOp::create(b, e.add(e.mul(oh, s[0]), e.mul(ky, d[0])), e.idx(pad[0]));
  Value iw = arith::SubIOp::create(b, e.add(e.mul(ow, s[1]), e.mul(kx, d[1])), e.idx(pad[1]));
  auto inside = [&](Value v, int64_t hi) {
    Value lo = arith::CmpIOp::create(b, arith::CmpIPredicate::sge, v, e.idx(0));
    Value up = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, v, e.idx(hi));
    return arith::AndIOp::create(b, lo, up).getResult();
  };
  auto clamp = [&](Value v, int64_t hi) {
    return arith::MaxSIOp::create(b, arith::MinSIOp::create(b, v, e.idx(hi - 1)), e.idx(0))
        .getResult();
  };
  Value valid = arith::AndIOp::create(b, inside(ih, H), inside(iw, W));
  return {e.add(e.mul(clamp(ih, H), W), clamp(iw, W)), valid};
}

LogicalResult Lowering::conv(kiln::ConvOp op, const Epilogue *epi, const Epilogue *pro) {
  // (kiln-rematerialize gives a prologue to NCHW convolutions of the
  // matrix-product path, kiln-fuse to NHWC depthwise ones: on the CPU.)
  if (pro && p.options.gpu)
    return op.emitError("internal error: a convolution prologue on this path");
  if (kiln::attr::isChannelsLast(op))
    return convNhwc(op, epi, pro);
  auto in = shape(op.getInput()), w = shape(op.getWeight()),
       out = shape(op.getResult());
  int64_t N = in[0], C = in[1], H = in[2], W = in[3];
  int64_t O = out[1], OH = out[2], OW = out[3], KH = w[2], KW = w[3];
  int64_t G = static_cast<int64_t>(op.getGroup()), Cg = C / G, Og = O / G;
  int64_t KK = KH * KW, P = OH * OW, Kdim = Cg * KK;
  // Depthwise-like convolutions (few channels per group) have too little
  // reduction and too few rows for a matrix product: the direct loop nest is
  // better there (ConvStrategy.h).
  bool direct = conv_strategy::isDirect(Kdim, Og);
  if (direct && pro)
    return op.emitError("internal error: a convolution prologue on the direct path");
  if (direct)
    return p.options.gpu ? gpuConvDirect(op, epi) : convDirect(op, epi);
  if (p.options.gpu)
    return gpuConv(op, epi);
  // A prologue computes the input from `pro->start` per element gathered.
  Value input = pro ? pro->start : op.getInput();
  if (failed(checkF32(op, {input, op.getWeight(), op.getResult()})))
    return failure();
  auto s = op.getStrides(), d = op.getDilations(), pad = op.getPads();
  // (With a prologue, even a pointwise conv gathers its input: the ukernel
  // reads only stored values.)
  bool pointwise = !pro && KH == 1 && KW == 1 && s[0] == 1 && s[1] == 1 &&
                   llvm::all_of(pad, [](int64_t v) { return v == 0; });
  int inBuf = bufferOf.lookup(input), wBuf = bufferOf.lookup(op.getWeight());
  // Constant weights are packed once, here, the way the ukernel reads them:
  // per group, rows in 6-row groups (zero rows pad the last), k-major (f32);
  // bf16 rows of pairs of k (packBf16A).
  int64_t rowsPad = ceilDiv(Og, 6) * 6;
  bool packed = p.buffers[wBuf].kind == Buffer::Constant;
  // (Tiles for one image when the run's images are computed alone.)
  auto [rb, cb] = productTiles(Og, P, liveSym >= 0 ? G : N * G);
  // Gathered column tiles of whole output rows: every row's zero and copy
  // runs are then known at compile time.
  bool wholeRows = !pointwise && OW <= cb;
  if (wholeRows)
    cb = cb / OW * OW;
  // Channels per gathered chunk: about 64K floats of stack.
  int64_t cc = std::clamp<int64_t>(65536 / (cb * KK), 1, Cg);
  // bf16 (kiln_uk_sbgemm_pa): the weights in bf16 pairs of k, so every
  // chunk must start at an even k.
  bool bf16 = packed && lowersToBf16(op);
  // fp16 (kiln_uk_hgemm_pa): the f32 packing, in half.
  bool f16 = packed && lowersToF16(op);
  if (bf16 && !pointwise && KK % 2 == 1 && cc % 2 == 1 && cc < Cg) {
    if (cc > 1)
      --cc;
    else
      bf16 = false;
  }
  int64_t Kp = bf16 ? (Kdim + 1) / 2 * 2 : Kdim;
  const float *wSrc =
      packed ? reinterpret_cast<const float *>(p.weights.data() + p.buffers[wBuf].offset)
             : nullptr;
  if (bf16) {
    wBuf = addConstantData(packBf16A(G, Og, Kdim, [&](int64_t g, int64_t o, int64_t k) {
      return wSrc[(g * Og + o) * Kdim + k];
    }));
  } else if (packed) {
    std::vector<float> pk(G * rowsPad * Kdim, 0.0f);
    for (int64_t g = 0; g < G; ++g)
      for (int64_t o = 0; o < Og; ++o)
        for (int64_t k = 0; k < Kdim; ++k)
          pk[(g * rowsPad + o / 6 * 6) * Kdim + k * 6 + o % 6] = wSrc[(g * Og + o) * Kdim + k];
    wBuf = addConstantData(weightBytes(pk, f16));
  }
  // Where the ukernel finds weight row (group g, row o0) at column k0 (in
  // bf16 elements for bf16).
  auto weightAt = [&](KernelEmitter &e, Value g, Value o0, Value k0) {
    if (bf16)
      return e.add(e.mul(e.add(e.mul(g, Og), o0), Kp), k0);
    if (packed)
      return e.add(e.mul(e.add(e.mul(g, rowsPad), o0), Kp), e.mul(k0, 6));
    return e.add(e.mul(e.add(e.mul(g, Og), o0), Kdim), k0);
  };
  int64_t lda = bf16 ? Kp : packed ? 6 * Kdim : Kdim;
  // W rows [o0, o0 + rows) x columns [k0, k0 + k) times B into C.
  auto product = [&](KernelEmitter &e, Value rows, Value cols, Value k, Value g, Value o0,
                     Value k0, Value bAddr, int64_t ldb, Value cAddr, bool acc) {
    if (bf16)
      e.ukernel("kiln_uk_sbgemm_pa", rows, cols, k, e.addr16(0, weightAt(e, g, o0, k0)), lda,
                bAddr, ldb, cAddr, P, acc);
    else if (f16)
      e.ukernel("kiln_uk_hgemm_pa", rows, cols, k, e.addr16(0, weightAt(e, g, o0, k0)), lda,
                bAddr, ldb, cAddr, P, acc);
    else
      e.sgemmPtr(rows, cols, k, e.addr(0, weightAt(e, g, o0, k0)), lda, bAddr, ldb, cAddr, P,
                 acc, packed);
  };
  // out[n][g*Og + o][p] = bias + sum_k W[g*Og + o][k] * col[n][g*Kdim + k][p],
  // where col (im2col) is the input pointwise and otherwise gathered inside
  // the workgroup: a chunk of channels at a time into a stack buffer of
  // [chunk * KK x cb] that the ukernel consumes right away (implicit GEMM; no
  // im2col tensor in memory).
  bool hasBias = static_cast<bool>(op.getBias());
  // An epilogue that first adds a tensor of the output's shape to the
  // convolution (kiln-rematerialize's partial products over a split input,
  // a residual): each tile starts from that tensor rather than zero, and
  // the kernel may write over it (kiln-plan-memory), the products
  // accumulating in place. `epi` keeps the ops after the add.
  std::optional<Epilogue> afterAdd;
  int accSite = accumulatedSite(epi, out, afterAdd, [&](ArrayRef<int64_t> st) {
    return st[1] == P && st[2] == OW && st[3] == 1 && (N == 1 || st[0] == O * P);
  });
  const Epilogue *tail = accSite < 0 ? epi : afterAdd->ops.empty() ? nullptr : &*afterAdd;
  int outBuf = newBuffer(Buffer::Arena, N * O * P * 4);
  int firstSite, firstProSite;
  SmallVector<int> ids = convArgs(op, wBuf, inBuf, epi, outBuf, firstSite, pro, &firstProSite);
  int o = ids.size() - 1;
  // Input element `at` of image n, absolute channel c, after the prologue
  // (sites are per channel: kiln-rematerialize's condition).
  auto inputAt = [&](KernelEmitter &e, Value n, Value c, Value at) -> Value {
    Value x = e.load(1, at);
    if (!pro)
      return x;
    return pro->apply(e, x, [&](int k) {
      auto &st = pro->siteStrides[k];
      return e.load(firstProSite + k, e.add(e.mul(n, st[0]), e.mul(c, st[1])));
    });
  };
  int64_t rTiles = ceilDiv(Og, rb), cTiles = ceilDiv(P, cb);
  int64_t flops = estimateFlops(op);
  if (epi)
    for (Operation *o : epi->ops)
      flops += estimateFlops(o);
  // The prologue runs on every element each row tile gathers: once per tap
  // per row tile, where a kernel of its own would run it once.
  int64_t proFlops = 0;
  if (pro)
    for (Operation *o : pro->ops)
      proFlops += estimateFlops(o);
  flops += proFlops * KK * rTiles;
  liveRows(1, 1, G * rTiles * cTiles);
  emitKernel(op.getLoc(), "conv", ids, N * G * rTiles * cTiles, [&](KernelEmitter &e) {
    Value ct = e.rem(e.wg, cTiles), rest = e.div(e.wg, cTiles);
    Value rt = e.rem(rest, rTiles);
    rest = e.div(rest, rTiles);
    Value g = e.rem(rest, G), n = e.div(rest, G);
    Value o0 = e.mul(rt, rb), p0 = e.mul(ct, cb);
    Value rows = e.minI(e.idx(rb), arith::SubIOp::create(e.b, e.idx(Og), o0));
    Value cols = e.minI(e.idx(cb), arith::SubIOp::create(e.b, e.idx(P), p0));
    Value oc0 = e.add(e.mul(g, Og), o0);
    Value outOff = e.add(e.add(e.mul(n, O * P), e.mul(oc0, P)), p0);
    // The gathered path accumulates chunk by chunk onto the bias (or zero),
    // plus the added tensor (where the output is that tensor, in place, the
    // bias alone is added).
    if (hasBias || !pointwise || accSite >= 0)
      e.loop(e.idx(0), rows, [&](Value r) {
        Value bias = hasBias ? e.load(2, e.add(oc0, r)) : e.f32(0.0f);
        Value rowOff = e.add(outOff, e.mul(r, P));
        e.loop(e.idx(0), cols, [&](Value j) {
          Value at = e.add(rowOff, j);
          Value init = bias;
          if (accSite >= 0) {
            Value acc = e.load(firstSite + accSite, at);
            init = hasBias ? arith::AddFOp::create(e.b, acc, bias).getResult() : acc;
          }
          e.store(init, o, at);
        });
      });
    Value chan0 = e.add(e.mul(n, C), e.mul(g, Cg)); // first input plane of the group
    if (pointwise) {
      product(e, rows, cols, e.idx(Kdim), g, o0, e.idx(0), e.addr(1, e.add(e.mul(chan0, P), p0)),
              P, e.addr(o, outOff), hasBias || accSite >= 0);
    } else {
      Value col = e.scratch(cc * KK * cb);
      // No padding reaches a window (every tap reads inside the input).
      bool windowsInside = llvm::all_of(pad, [](int64_t v) { return v == 0; }) &&
                           (OH - 1) * s[0] + (KH - 1) * d[0] < H &&
                           (OW - 1) * s[1] + (KW - 1) * d[1] < W;
      // Output rows touched by this column tile.
      Value ohFirst = e.div(p0, OW);
      Value ohEnd = e.add(e.div(arith::SubIOp::create(e.b, e.add(p0, cols), e.idx(1)), OW),
                          e.idx(1));
      auto maxI = [&](Value a, Value b2) { return arith::MaxUIOp::create(e.b, a, b2).getResult(); };
      // This column tile's part of output row oh: ow in [a, z), stored at
      // dst + ow (rowBase: the tap's row of the gathered chunk).
      auto rowSpan = [&](Value oh, Value rowBase) {
        Value rowStart = e.mul(oh, OW);
        Value a = arith::SubIOp::create(e.b, maxI(p0, rowStart), rowStart);
        Value z = arith::SubIOp::create(
            e.b, e.minI(e.add(p0, cols), e.add(rowStart, e.idx(OW))), rowStart);
        Value dst = arith::SubIOp::create(e.b, e.add(rowBase, rowStart), p0);
        return std::make_tuple(a, z, dst);
      };
      e.loop(e.idx(0), e.idx(Cg), [&](Value c0) {
        Value ccn = e.minI(e.idx(cc), arith::SubIOp::create(e.b, e.idx(Cg), c0));
        e.loop(e.idx(0), ccn, [&](Value ci) {
          Value plane = e.mul(e.add(chan0, e.add(c0, ci)), H * W);
          Value chan = e.add(e.mul(g, Cg), e.add(c0, ci)); // in the image
          if (windowsInside && KK > 64) {
            // Large kernels whose windows all lie inside the input (a
            // ViT's 16 x 16 patches): the taps loop at run time, every one
            // a copy of whole rows (unrolled, 256 taps made an 18K-line
            // kernel that took 30 s to compile).
            e.loop(e.idx(0), e.idx(KH), [&](Value ky) {
              e.loop(e.idx(0), e.idx(KW), [&](Value kx) {
                Value rowBase = e.mul(e.add(e.mul(ci, KK), e.add(e.mul(ky, KW), kx)), cb);
                e.loop(ohFirst, ohEnd, [&](Value oh) {
                  auto [a, z, dst] = rowSpan(oh, rowBase);
                  Value ih = e.add(e.mul(oh, s[0]), e.mul(ky, d[0]));
                  Value src = e.add(e.add(plane, e.mul(ih, W)), e.mul(kx, d[1]));
                  e.loop(a, z, [&](Value ow) {
                    e.storeM(inputAt(e, n, chan, e.add(src, e.mul(ow, s[1]))), col,
                             e.add(dst, ow));
                  });
                });
              });
            });
            return;
          }
          for (int64_t ky = 0; ky < KH; ++ky) {
            int64_t off0 = ky * d[0] - pad[0];
            for (int64_t kx = 0; kx < KW; ++kx) {
              int64_t off1 = kx * d[1] - pad[1];
              // Input columns iw = ow*s1 + off1 inside [0, W) for ow in [owLo, owHi).
              int64_t owLo = std::min<int64_t>(OW, ceilDiv(std::max<int64_t>(-off1, 0), s[1]));
              int64_t owHi = std::max<int64_t>(
                  owLo, std::min<int64_t>(OW, W - 1 - off1 < 0 ? 0 : (W - 1 - off1) / s[1] + 1));
              Value rowBase = e.mul(e.add(e.mul(ci, KK), e.idx(ky * KW + kx)), cb);
              if (wholeRows) {
                // Output rows with input row ih = oh*s0 + off0 in [0, H):
                // [ohLo, ohHi); the tile's rows split into zero rows,
                // gathered rows (zero, copy, zero runs of constant length),
                // zero rows.
                int64_t ohLo = std::min<int64_t>(OH, ceilDiv(std::max<int64_t>(-off0, 0), s[0]));
                int64_t ohHi = std::max<int64_t>(
                    ohLo, std::min<int64_t>(OH, H - 1 - off0 < 0 ? 0 : (H - 1 - off0) / s[0] + 1));
                Value r1 = e.minI(maxI(ohFirst, e.idx(ohLo)), ohEnd);
                Value r2 = e.minI(maxI(r1, e.idx(ohHi)), ohEnd);
                auto dstOf = [&](Value oh) {
                  return e.add(rowBase, e.mul(arith::SubIOp::create(e.b, oh, ohFirst), OW));
                };
                auto zeroRun = [&](Value dst, int64_t from, int64_t to) {
                  e.loop(from, to, [&](Value ow) { e.storeM(e.f32(0.0f), col, e.add(dst, ow)); });
                };
                e.loop(ohFirst, r1, [&](Value oh) { zeroRun(dstOf(oh), 0, OW); });
                e.loop(r1, r2, [&](Value oh) {
                  Value dst = dstOf(oh);
                  zeroRun(dst, 0, owLo);
                  // ih >= 0 in this range; subtract a negative offset late.
                  Value ih = off0 >= 0 ? e.add(e.mul(oh, s[0]), e.idx(off0))
                                       : arith::SubIOp::create(e.b, e.mul(oh, s[0]), e.idx(-off0))
                                             .getResult();
                  // src + ow*s1 is input column iw = ow*s1 + off1.
                  Value src = e.add(plane, e.mul(ih, W));
                  if (off1 >= 0)
                    src = e.add(src, e.idx(off1));
                  else
                    src = arith::SubIOp::create(e.b, src, e.idx(-off1));
                  e.loop(owLo, owHi, [&](Value ow) {
                    e.storeM(inputAt(e, n, chan, e.add(src, e.mul(ow, s[1]))), col,
                             e.add(dst, ow));
                  });
                  zeroRun(dst, owHi, OW);
                });
                e.loop(r2, ohEnd, [&](Value oh) { zeroRun(dstOf(oh), 0, OW); });
                continue;
              }
              e.loop(ohFirst, ohEnd, [&](Value oh) {
                auto [a, z, dst] = rowSpan(oh, rowBase);
                // ih = oh*s0 + off0 may be negative: compare as signed.
                Value ihS = arith::AddIOp::create(
                    e.b, arith::IndexCastOp::create(e.b, e.b.getI64Type(), e.mul(oh, s[0])),
                    e.i64(off0));
                Value inRow = arith::AndIOp::create(
                    e.b,
                    arith::CmpIOp::create(e.b, arith::CmpIPredicate::sge, ihS, e.i64(0)),
                    arith::CmpIOp::create(e.b, arith::CmpIPredicate::slt, ihS, e.i64(H)));
                auto zero = [&](Value from, Value to) {
                  e.loop(from, to, [&](Value ow) { e.storeM(e.f32(0.0f), col, e.add(dst, ow)); });
                };
                auto ifOp = scf::IfOp::create(e.b, inRow, /*withElseRegion=*/true);
                {
                  OpBuilder::InsertionGuard guard(e.b);
                  e.b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
                  Value lo = e.minI(maxI(a, e.idx(owLo)), z);
                  Value hi = maxI(lo, e.minI(z, e.idx(owHi)));
                  zero(a, lo);
                  Value ihI = arith::IndexCastOp::create(e.b, e.b.getIndexType(), ihS);
                  Value src = e.add(plane, e.mul(ihI, W));
                  e.loop(lo, hi, [&](Value ow) {
                    Value iw = e.add(e.mul(ow, s[1]), e.idx(off1));
                    if (off1 < 0) // ow >= owLo keeps iw >= 0; fold the offset late
                      iw = arith::SubIOp::create(e.b, e.mul(ow, s[1]), e.idx(-off1));
                    e.storeM(inputAt(e, n, chan, e.add(src, iw)), col, e.add(dst, ow));
                  });
                  zero(hi, z);
                  e.b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
                  zero(a, z);
                }
              });
            }
          }
        });
        // out tile (+)= W[oc0.., c0*KK ..] x col
        product(e, rows, cols, e.mul(ccn, KK), g, o0, e.mul(c0, KK), e.addrM(col, e.idx(0)), cb,
                e.addr(o, outOff), true);
      }, cc);
    }
    if (tail)
      e.loop(e.idx(0), rows, [&](Value r) {
        Value oc = e.add(oc0, r);
        Value rowOff = e.add(outOff, e.mul(r, P));
        e.loop(e.idx(0), cols, [&](Value j) {
          Value at = e.add(rowOff, j);
          e.store(convEpilogue(e, tail, firstSite, n, oc, e.add(p0, j), e.load(o, at)),
                  o, at);
        });
      });
  }, flops);
  if (accSite >= 0)
    p.launches.back().inPlace = {firstSite + accSite};
  if (pro) {
    Launch &l = p.launches.back();
    for (Operation *o : pro->ops)
      l.recomputes += (l.recomputes.empty() ? "" : "+") + o->getName().stripDialect().str();
    l.extraFlops = proFlops * (KK * rTiles - 1);
  }
  bufferOf[op.getResult()] = outBuf;
  return success();
}

LogicalResult Lowering::convDirect(kiln::ConvOp op, const Epilogue *epi) {
  auto in = shape(op.getInput()), w = shape(op.getWeight()),
       out = shape(op.getResult());
  int64_t N = in[0], C = in[1], H = in[2], W = in[3];
  int64_t O = out[1], OH = out[2], OW = out[3], KH = w[2], KW = w[3];
  int64_t G = static_cast<int64_t>(op.getGroup()), Cg = C / G, Og = O / G;
  auto s = op.getStrides(), d = op.getDilations(), pad = op.getPads();
  SmallVector<Value> ins{op.getInput(), op.getWeight()};
  bool hasBias = static_cast<bool>(op.getBias());
  if (hasBias)
    ins.push_back(op.getBias());
  int firstSite = ins.size();
  if (epi)
    ins.append(epi->siteArgs.begin(), epi->siteArgs.end());
  int outBuf = ins.size();

  // Depthwise convolutions with stride 1 or 2: copy the plane into S*S
  // zero-padded phase planes (rows and columns split by their index mod the
  // stride S), so every tap reads one phase plane at unit stride; then run
  // every tap over the flattened phase rows in one contiguous, vectorizable
  // loop (the columns past OW are computed and dropped). Rows of small
  // planes (7, 14) are shorter than a vector, so the row-by-row form below
  // would never vectorize.
  int64_t S = s[0], Hp = H + pad[0] + pad[2], Wp = W + pad[1] + pad[3];
  int64_t Hh = ceilDiv(Hp, S), Wh = ceilDiv(Wp, S);
  // (With stride 2 on wide planes the scattered phase copy costs more than
  // the row-by-row form, whose rows are long enough to vectorize.)
  if (Cg == 1 && Og == 1 && s[0] == s[1] && (S == 1 || (S == 2 && OW < 32)) &&
      d[0] == 1 && d[1] == 1 && KH * KW <= 49 && S * S * Hh * Wh <= 32768) {
    int64_t phase = Hh * Wh;
    liveRows(1, 1, O);
    return launch(op, ins, N * O, [&](KernelEmitter &e) {
      Value n = e.div(e.wg, O), oc = e.rem(e.wg, O);
      Value planes = e.scratch(S * S * phase + KW);
      Value acc = e.scratch(OH * Wh);
      e.loop(0, S * S * phase + KW, [&](Value i) { e.storeM(e.f32(0.0f), planes, i); });
      Value inPlane = e.mul(e.wg, H * W); // N*C planes, C == O
      e.loop(0, H, [&](Value y) {
        Value src = e.add(inPlane, e.mul(y, W));
        Value py = e.add(y, e.idx(pad[0]));
        Value rowBase = e.add(e.mul(e.rem(py, S), S * phase), e.mul(e.div(py, S), Wh));
        e.loop(0, W, [&](Value x) {
          Value px = e.add(x, e.idx(pad[1]));
          Value dst = e.add(rowBase, e.add(e.mul(e.rem(px, S), phase), e.div(px, S)));
          e.storeM(e.load(0, e.add(src, x)), planes, dst);
        });
      });
      SmallVector<Value> taps;
      for (int64_t t = 0; t < KH * KW; ++t)
        taps.push_back(e.load(1, e.add(e.mul(oc, KH * KW), e.idx(t))));
      Value bias = hasBias ? e.load(2, oc) : e.f32(0.0f);
      e.loop(0, OH * Wh, [&](Value q) {
        Value sum = bias;
        for (int64_t ky = 0; ky < KH; ++ky)
          for (int64_t kx = 0; kx < KW; ++kx) {
            int64_t off = ((ky % S) * S + kx % S) * phase + (ky / S) * Wh + kx / S;
            sum = e.fadd(sum, e.fmul(taps[ky * KW + kx],
                                     e.loadM(planes, e.add(q, e.idx(off)))),
                         true);
          }
        e.storeM(sum, acc, q);
      });
      Value outBase = e.mul(e.wg, OH * OW);
      e.loop(0, OH, [&](Value oh) {
        e.loop(0, OW, [&](Value ow) {
          Value pix = e.add(e.mul(oh, OW), ow);
          Value v = e.loadM(acc, e.add(e.mul(oh, Wh), ow));
          e.store(convEpilogue(e, epi, firstSite, n, oc, pix, v), outBuf,
                  e.add(outBase, pix));
        });
      });
    });
  }
  liveRows(1, 1, O);
  return launch(op, ins, N * O, [&](KernelEmitter &e) {
    Value n = e.div(e.wg, O), oc = e.rem(e.wg, O);
    Value g = e.div(oc, Og);
    Value outBase = e.mul(e.wg, OH * OW);
    Value bias = hasBias ? e.load(2, oc) : e.f32(0.0f);
    e.loop(0, OH * OW, [&](Value i) { e.store(bias, outBuf, e.add(outBase, i)); });
    Value inImage = e.mul(n, C * H * W);
    Value wBase = e.mul(oc, Cg * KH * KW);
    e.loop(0, Cg, [&](Value c) {
      Value inPlane = e.add(inImage, e.mul(e.add(e.mul(g, Cg), c), H * W));
      Value wPlane = e.add(wBase, e.mul(c, KH * KW));
      for (int64_t ky = 0; ky < KH; ++ky) {
        // Output rows whose input row oh*s0 + ky*d0 - p0 lies inside [0, H).
        int64_t off0 = ky * d[0] - pad[0];
        int64_t ohLo = std::max<int64_t>(0, ceilDiv(std::max<int64_t>(-off0, 0), s[0]));
        int64_t ohHi = std::min<int64_t>(OH, H - 1 - off0 < 0 ? 0 : (H - 1 - off0) / s[0] + 1);
        for (int64_t kx = 0; kx < KW; ++kx) {
          int64_t off1 = kx * d[1] - pad[1];
          int64_t owLo = std::max<int64_t>(0, ceilDiv(std::max<int64_t>(-off1, 0), s[1]));
          int64_t owHi = std::min<int64_t>(OW, W - 1 - off1 < 0 ? 0 : (W - 1 - off1) / s[1] + 1);
          if (ohLo >= ohHi || owLo >= owHi)
            continue;
          Value wv = e.load(1, e.add(wPlane, e.idx(ky * KW + kx)));
          e.loop(ohLo, ohHi, [&](Value oh) {
            Value inRow = e.add(inPlane, e.mul(e.add(e.mul(oh, s[0]), e.idx(off0)), W));
            Value outRow = e.add(outBase, e.mul(oh, OW));
            e.loop(owLo, owHi, [&](Value ow) {
              Value src = e.add(inRow, e.add(e.mul(ow, s[1]), e.idx(off1)));
              Value dst = e.add(outRow, ow);
              Value acc = e.load(outBuf, dst);
              e.store(e.fadd(acc, e.fmul(wv, e.load(0, src))), outBuf, dst);
            });
          });
        }
      }
    });
    if (epi)
      e.loop(0, OH * OW, [&](Value pix) {
        Value at = e.add(outBase, pix);
        e.store(convEpilogue(e, epi, firstSite, n, oc, pix, e.load(outBuf, at)), outBuf,
                at);
      });
  });
}

} // namespace kiln::codegen::kernels
