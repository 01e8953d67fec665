//===- ConvNhwc.cpp - NHWC convolutions as products -----------------------===//
//
// Convolution in NHWC (kiln-select-layout's channels-last regions): 1x1
// convolutions as one product over pixels, others over gathered input rows
// (or im2col for bf16), and 3x3 stride-1 convolutions in Winograd's form.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"
#include "dialects/kiln/ConvStrategy.h"
#include "codegen/kernels/Packing.h"
#include "codegen/kernels/Precision.h"
#include "codegen/kernels/Tiling.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <algorithm>
#include <functional>

using namespace mlir;

namespace kiln::codegen::kernels {

/// Winograd F(2x2, 3x3) convolutions: which convs take it is ConvStrategy.h's
/// (kWinogradMinChannels, kWinogradMinPixels, kWinogradTunePixels,
/// kWinograd43MinPixels); here, about kWinogradTiles tiles (rows of the 16
/// products) per workgroup, whose scratch (the transformed input and the
/// products) stays within kWinogradScratch floats of stack.
using conv_strategy::kWinograd43MinPixels;
using conv_strategy::kWinogradMinPixels;
using conv_strategy::kWinogradTunePixels;
constexpr int64_t kWinogradTiles = 96, kWinogradScratch = 98304;

LogicalResult Lowering::convNhwc(kiln::ConvOp op, const Epilogue *epi, const Epilogue *pro) {
  auto in = shape(op.getInput()), w = shape(op.getWeight()), out = shape(op.getResult());
  int64_t N = in[0], H = in[1], W = in[2], C = in[3];
  int64_t OH = out[1], OW = out[2], O = out[3], KH = w[2], KW = w[3];
  int64_t G = static_cast<int64_t>(op.getGroup()), Cg = C / G, Og = O / G;
  int64_t KK = KH * KW, P = OH * OW, Kdim = Cg * KK, M = N * P;
  int wBuf = bufferOf.lookup(op.getWeight());
  bool constWeight = p.buffers[wBuf].kind == Buffer::Constant;
  if (conv_strategy::isDirect(Kdim, Og) || !constWeight)
    return convNhwcDirect(op, epi, pro);
  if (pro)
    return op.emitError("internal error: a convolution prologue on the NHWC product path");
  if (failed(checkF32(op, {op.getInput(), op.getWeight(), op.getResult()})))
    return failure();
  auto s = op.getStrides(), d = op.getDilations(), pad = op.getPads();
  bool pointwise = KK == 1 && s[0] == 1 && s[1] == 1 &&
                   llvm::all_of(pad, [](int64_t v) { return v == 0; });
  // out[pixel][g*Og + o] = bias + sum_k col[pixel][g*Kdim + k] * B[g][k][o]:
  // the weights become B[g][(ky*KW + kx)*Cg + c][o] at compile time, the
  // pixel-major im2col rows are the input itself (pointwise) or are
  // gathered per workgroup, a chunk of taps or channels at a time.
  bool hasBias = static_cast<bool>(op.getBias());
  // Tiles: up to 144 pixel rows (balanced, in 6-row ukernel groups) by up
  // to 512 channels (whole 32-column panels); channels split further, down
  // to 64, until there are enough tiles (late layers have few pixels).
  // (Sized for one image when the run's images are computed alone.)
  int64_t Mt = liveSym >= 0 && M % N == 0 ? M / N : M;
  int64_t rTiles0 = ceilDiv(Mt, 144);
  int64_t rb = rTiles0 == 1 ? Mt : ceilDiv(ceilDiv(Mt, rTiles0), 6) * 6;
  int64_t cb = Og <= 512 ? Og : 512;
  auto tileCount = [&] { return G * ceilDiv(Mt, rb) * ceilDiv(Og, cb); };
  // bf16: pixel rows first, in 32-row blocks (the AMX ukernel's) of up to
  // 128, then channels: each column tile gathers (or, pointwise, rounds)
  // its rows again, so fewer column tiles gather less (ResNet-50 bf16
  // 12.6 -> 10.4 ms on 2 threads).
  if (lowersToBf16(op)) {
    int64_t r0 = ceilDiv(Mt, 128);
    rb = r0 == 1 ? Mt : ceilDiv(ceilDiv(Mt, r0), 32) * 32;
    while (tileCount() < kMinTiles && rb > 32)
      rb = std::max<int64_t>(32, ceilDiv(rb / 2, 32) * 32);
  }
  while (tileCount() < kMinTiles && cb > 64)
    cb = std::max<int64_t>(64, ceilDiv(cb / 2, 32) * 32);
  while (tileCount() < kMinTiles && rb > 24)
    rb = std::max<int64_t>(24, ceilDiv(rb / 2, 6) * 6);
  int64_t rTiles = ceilDiv(M, rb), cTiles = ceilDiv(Og, cb);
  // Gather chunks of about 64K floats: whole taps when a tap's channels fit
  // (tpc taps per chunk), otherwise cc channels of one tap.
  constexpr int64_t kChunkFloats = 65536;
  int64_t cc = std::min<int64_t>(Cg, std::max<int64_t>(8, kChunkFloats / rb));
  cc = ceilDiv(Cg, ceilDiv(Cg, cc)); // balanced
  int64_t tpc = cc == Cg ? std::clamp<int64_t>(kChunkFloats / (rb * Cg), 1, KK) : 1;
  // bf16 (kiln_uk_sbgemm_pb): B in 32-column panels of bf16 pairs of k, so
  // every chunk must start at an even k (even channel counts).
  // (An odd channel count still works when one chunk is the whole K, as
  // in an RGB stem: that chunk starts at k = 0.)
  bool oneChunk = cc == Cg && tpc == KK;
  // bf16 whose rows more than one column tile would gather: every row is
  // gathered once, whole, into an arena buffer of bf16 rows (a kernel of
  // its own) that the column tiles read in place (ResNet-50's stage 3 and 4
  // 3x3 convs, few pixels and many channels: 0.48 -> 0.2 ms).
  bool im2col = lowersToBf16(op) && !pointwise && G == 1 && liveSym < 0 && cTiles > 1 &&
                cb % 32 == 0;
  if (im2col) {
    // Rows are gathered once now: tiles of up to 128 rows (whole 32-row
    // blocks) split columns first, so that each weight panel streams
    // through one row tile (stage 4: 49 rows, 4.7 MB of weights).
    int64_t r1 = ceilDiv(M, 128);
    rb = std::min(M, ceilDiv(ceilDiv(M, r1), 32) * 32);
    cb = Og <= 512 ? Og : 512;
    while (tileCount() < kMinTiles && cb > 64)
      cb = std::max<int64_t>(64, ceilDiv(cb / 2, 32) * 32);
    rTiles = ceilDiv(M, rb), cTiles = ceilDiv(Og, cb);
  }
  bool bf16 = lowersToBf16(op) &&
              (im2col || ((Cg % 2 == 0 || oneChunk || pointwise) && (cc == Cg || cc % 2 == 0))) &&
              (ceilDiv(Og, cb) == 1 || cb % 32 == 0);
  // fp16 (kiln_uk_hgemm): the f32 layout, in half.
  bool f16 = !bf16 && lowersToF16(op);
  // f32 (kiln_uk_sgemm_pb): B in 32-column panels read in place (column
  // tiles are whole panels).
  bool f32Panels = !bf16 && !f16 && (ceilDiv(Og, cb) == 1 || cb % 32 == 0);
  int64_t Kp = (Kdim + 1) / 2 * 2, panels = ceilDiv(Og, 32);
  // f32 3x3 convolutions of stride 1 in Winograd's F(2x2, 3x3) form
  // (kiln_uk_winograd_f23; off with --disable-pass=kiln-winograd): each
  // 2x2 block of output pixels (a tile) takes 16 multiply-adds per channel
  // pair instead of 36, as 16 matrix products over the channels, one per
  // position of the 4x4 transform domain, with the tiles as rows.
  // Workgroups are bands of tile rows of one image by column ranges (whole
  // panels). Convolutions of fewer pixels than a 7 x 7 image are left to
  // the direct products: their weights (16/9 as many bytes transformed)
  // stream from memory at batch 1, and few tiles reuse them.
  // With --winograd-f43, larger convs take F(4x4, 3x3)
  // (kiln_uk_winograd_f43): 4x4 tiles, a 6x6 domain (36 products), V held
  // for 6 positions at a time.
  Value inElem = op.getInput();
  bool wino43 = p.options.winograd43 && P >= kWinograd43MinPixels;
  int64_t wm = wino43 ? 4 : 2, wPos = (wm + 2) * (wm + 2), wV = wino43 ? 6 : 1;
  int64_t TH = ceilDiv(OH, wm), TW = ceilDiv(OW, wm), band = 0, bands = 0;
  // (--autotune measures Winograd on convs down to kWinogradTunePixels
  // and chooses per conv; a plain build keeps kWinogradMinPixels.)
  bool winogradCan =
      p.options.winograd && !bf16 && !f16 && conv_strategy::winogradShape(G, KH, KW, s, d, C, O) &&
      P >= kWinogradTunePixels &&
      llvm::cast<RankedTensorType>(inElem.getType()).getElementType().isF32() &&
      !(p.buffers[bufferOf.lookup(inElem)].elem &&
        p.buffers[bufferOf.lookup(inElem)].elem.isBF16());
  int64_t wcb = 0; // (the Winograd workgroups' column count)
  auto winogradScratch = [&] { return band * TW * (wV * C + wPos * wcb) + C; };
  if (winogradCan) {
    // About kWinogradTiles tiles per band (the products' rows), scratch
    // within kWinogradScratch floats of stack; then columns (whole panels,
    // down to 64) and bands halve until there are kMinTiles workgroups.
    wcb = O <= 128 ? O : 128;
    band = std::clamp<int64_t>(ceilDiv(kWinogradTiles, TW), 1, TH);
    while (winogradScratch() > kWinogradScratch && band > 1)
      --band;
    while (winogradScratch() > kWinogradScratch && wcb > 32)
      wcb = std::max<int64_t>(32, ceilDiv(wcb / 2, 32) * 32);
    int64_t images = liveSym >= 0 ? 1 : N;
    auto count = [&] { return images * ceilDiv(TH, band) * ceilDiv(O, wcb); };
    while (count() < kMinTiles && wcb > 64)
      wcb = std::max<int64_t>(64, ceilDiv(wcb / 2, 32) * 32);
    while (count() < kMinTiles && band > 1)
      band = ceilDiv(band, 2);
    band = ceilDiv(TH, ceilDiv(TH, band)); // balanced: 7 tile rows are 4 + 3, not 6 + 1
    // (Rows too wide for the scratch even one tile row and 32 columns at a
    // time keep the direct products and their tiles.)
    winogradCan = winogradScratch() <= kWinogradScratch;
  }
  bool winogradDefault = winogradCan && P >= kWinogradMinPixels;
  int wantWinograd = tuning().winograd;
  bool winograd = wantWinograd < 0 ? winogradDefault : winogradCan && wantWinograd == 1;
  if (winogradCan)
    opTunable |= kTuneWinograd | (winogradDefault ? unsigned(kTuneWinogradDefault) : 0u);
  opWinograd = winograd;
  if (winograd) {
    cb = wcb;
    bands = ceilDiv(TH, band);
    rTiles = N * bands;
    cTiles = ceilDiv(O, cb);
  }
  {
    const float *src = reinterpret_cast<const float *>(p.weights.data() + p.buffers[wBuf].offset);
    auto w = [&](int64_t g, int64_t k, int64_t o) {
      int64_t t = k / Cg, c = k % Cg;
      return src[((g * Og + o) * Cg + c) * KK + t];
    };
    if (winograd) {
      // U = G g G^T per (c, o); per position xi = a * i + j of the a x a
      // domain, panels of [C x O]. F(2x2, 3x3): G = [1 0 0; .5 .5 .5;
      // .5 -.5 .5; 0 0 1]; F(4x4, 3x3): the G of the points 0, 1, -1, 1/2,
      // -2 and infinity, rows scaled as kiln_uk_winograd_f43's B^T is.
      static const double kG2[4][3] = {{1, 0, 0}, {.5, .5, .5}, {.5, -.5, .5}, {0, 0, 1}};
      static const double kG4[6][3] = {{1.0 / 2, 0, 0},
                                       {1.0 / 6, 1.0 / 6, 1.0 / 6},
                                       {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                       {-16.0 / 15, -8.0 / 15, -4.0 / 15},
                                       {1.0 / 30, -1.0 / 15, 2.0 / 15},
                                       {0, 0, 1.0 / 2}};
      const double(*kG)[3] = wino43 ? kG4 : kG2;
      int64_t a = wm + 2;
      wBuf = addConstantData(weightBytes(
          packPanels(wPos, C, O,
                     [&](int64_t xi, int64_t c, int64_t o) {
                       double u = 0;
                       for (int ky = 0; ky < 3; ++ky)
                         for (int kx = 0; kx < 3; ++kx)
                           u += kG[xi / a][ky] * src[(o * C + c) * 9 + ky * 3 + kx] *
                                kG[xi % a][kx];
                       return static_cast<float>(u);
                     }),
          false));
    } else if (bf16) {
      wBuf = addConstantData(packBf16B(G, Kdim, Og, w));
    } else if (f32Panels) {
      wBuf = addConstantData(weightBytes(packPanels(G, Kdim, Og, w), false));
    } else {
      std::vector<float> pk(G * Kdim * Og);
      for (int64_t g = 0; g < G; ++g)
        for (int64_t k = 0; k < Kdim; ++k)
          for (int64_t o = 0; o < Og; ++o)
            pk[(g * Kdim + k) * Og + o] = w(g, k, o);
      wBuf = addConstantData(weightBytes(pk, f16));
    }
  }
  // Gathers taps [t0, t1), channels [cBase, cBase + n) of group g of
  // pixel row px (the input is buffer 1): put(value, k) for each k of
  // [0, (t1 - t0) * n), zeros where the window leaves the input; `value`
  // is a vector of e.lanes values from k on, of which only the lanes of
  // `mask` (when given) are to be stored.
  using Put = std::function<void(Value, Value, Value)>;
  auto gatherRow = [&](KernelEmitter &e, Value px, Value g, int64_t t0, int64_t t1,
                       Value cBase, int64_t n, const Put &put) {
    // count contiguous values from src (or zeros: no src) to k = dst on:
    // whole vectors, then one masked vector for the rest.
    auto copy = [&](Value src, Value dst, int64_t count) {
      int64_t whole = count / KernelEmitter::kVectorLanes * KernelEmitter::kVectorLanes;
      e.vecLoop(0, whole, [&](Value c) {
        put(src ? e.vload(1, e.add(src, c)) : e.f32(0.0f), e.add(dst, c), Value());
      });
      if (whole == count)
        return;
      int64_t saved = e.lanes;
      e.lanes = KernelEmitter::kVectorLanes;
      SmallVector<bool> on(e.lanes, false);
      for (int64_t i = 0; i < count - whole; ++i)
        on[i] = true;
      auto maskType = VectorType::get({e.lanes}, e.b.getI1Type());
      Value mask = arith::ConstantOp::create(e.b, DenseElementsAttr::get(maskType, ArrayRef(on)));
      Value at = e.add(dst, e.idx(whole)), v = e.f32(0.0f);
      if (src) {
        // In the input's element type (bf16 storage too).
        Type inElem = llvm::cast<MemRefType>(e.bufs[1].getType()).getElementType();
        auto vt = VectorType::get({e.lanes}, inElem);
        Value zero = arith::ConstantOp::create(
            e.b, DenseElementsAttr::get(vt, e.b.getFloatAttr(inElem, 0.0).getValue()));
        v = vector::MaskedLoadOp::create(e.b, vt, e.bufs[1],
                                         ValueRange{e.add(src, e.idx(whole))}, mask, zero);
      }
      put(v, at, mask);
      e.lanes = saved;
    };
    Value img = e.div(px, P), pix = e.rem(px, P);
    Value oh = e.div(pix, OW), ow = e.rem(pix, OW);
    Value inImg = e.mul(img, H * W * C);
    // (ky, kx: kernel row and column, constants or loop variables.)
    auto ihOf = [&](Value ky) {
      return signedSub(e, e.add(e.mul(oh, s[0]), e.mul(ky, d[0])), pad[0]);
    };
    auto iwOf = [&](Value kx) {
      return signedSub(e, e.add(e.mul(ow, s[1]), e.mul(kx, d[1])), pad[1]);
    };
    auto srcOf = [&](Value ih, Value iw) {
      return e.add(e.add(inImg, e.mul(e.add(e.mul(ih, W), iw), C)),
                   e.add(e.mul(g, Cg), cBase));
    };
    // One tap: n channels to k = dst on.
    auto tapAt = [&](Value ky, Value kx, Value dst) {
      Value ih = ihOf(ky), iw = iwOf(kx);
      Value valid = arith::AndIOp::create(e.b, inRangeS(e, ih, 0, H), inRangeS(e, iw, 0, W));
      ifElse(e, valid, [&] { copy(srcOf(ih, iw), dst, n); }, [&] { copy(Value(), dst, n); });
    };
    auto tap = [&](int64_t t) { tapAt(e.idx(t / KW), e.idx(t % KW), e.idx((t - t0) * n)); };
    // Taps of one kernel row over whole pixels (every channel, no
    // dilation) read adjacent input pixels: where the whole run lies
    // inside the input it is one contiguous copy (an RGB stem's 7 taps
    // of 3 channels become one 21-element run).
    bool runs = G == 1 && n == C && d[1] == 1;
    // Tall kernels (a ViT's 16 x 16 patches) loop over their whole kernel
    // rows at run time instead of unrolling them: the code per row is the
    // same, and 256 unrolled taps made an 18K-line kernel (35 s to compile).
    if (runs && KW > 1 && t0 % KW == 0 && t1 % KW == 0 && (t1 - t0) / KW > 8) {
      e.loop(e.idx(t0 / KW), e.idx(t1 / KW), [&](Value ky) {
        Value ih = ihOf(ky), iw = iwOf(e.idx(0));
        Value dst = e.mul(arith::SubIOp::create(e.b, ky, e.idx(t0 / KW)), KW * n);
        Value inside = arith::AndIOp::create(e.b, inRangeS(e, ih, 0, H),
                                             inRangeS(e, iw, 0, W - KW + 1));
        ifElse(e, inside, [&] { copy(srcOf(ih, iw), dst, KW * n); }, [&] {
          e.loop(e.idx(0), e.idx(KW), [&](Value kx) {
            tapAt(ky, kx, e.add(dst, e.mul(kx, n)));
          });
        });
      });
      return;
    }
    for (int64_t t = t0; t < t1;) {
      int64_t ky = t / KW, te = std::min(t1, (ky + 1) * KW), len = te - t;
      if (!runs || len == 1) {
        for (; t < te; ++t)
          tap(t);
        continue;
      }
      Value ih = ihOf(e.idx(ky)), iw = iwOf(e.idx(t % KW));
      Value inside = arith::AndIOp::create(e.b, inRangeS(e, ih, 0, H),
                                           inRangeS(e, iw, 0, W - len + 1));
      int64_t ta = t;
      ifElse(e, inside, [&] {
        Value src = srcOf(ih, iw);
        Value dst = e.idx((ta - t0) * n);
        copy(src, dst, len * n);
      }, [&] {
        for (int64_t u = ta; u < te; ++u)
          tap(u);
      });
      t = te;
    }
  };
  int inBuf = bufferOf.lookup(op.getInput());
  if (im2col) {
    // The im2col kernel: rows of Kp bf16 (a zero after an odd K), a share
    // of the pixel rows per workgroup.
    int colBuf = newBuffer(Buffer::Arena, M * Kp * 2, BFloat16Type::get(ctx));
    int64_t perWg = std::max<int64_t>(1, ceilDiv(M, 4 * kMinTiles));
    emitKernel(op.getLoc(), "im2col", {colBuf, inBuf}, ceilDiv(M, perWg), [&](KernelEmitter &e) {
      auto [lo, hi] = e.share(M, perWg);
      e.loop(lo, hi, [&](Value px) {
        Value row = e.mul(px, Kp);
        auto put = [&](Value v, Value k, Value mask) {
          storeRounded(e, v, 0, e.add(row, k), mask);
        };
        gatherRow(e, px, e.idx(0), 0, KK, e.idx(0), Cg, put);
        if (Kp > Kdim)
          put(e.f32(0.0f), e.idx(Kdim), Value());
      });
    });
    p.launches.back().layout = "NHWC";
    inBuf = colBuf;
  }
  // bf16 storage: a bf16 conv whose fusion's result holds bf16 values and
  // whose every reader reads bf16 (bf16Readers) stores them as bf16 -- half
  // the bytes written, gathered and read back as residuals, and a pointwise
  // reader multiplies its rows in place. The products then land in a f32
  // tile on the stack, which the epilogue pass rounds into the output.
  bool outBf16 = bf16 && epi && loweringFusion && liveSym < 0 && !p.options.gpu &&
                 holdsBf16(epi->yielded) && bf16Readers(loweringFusion.getResult());
  bool inBf16 = p.buffers[inBuf].elem && p.buffers[inBuf].elem.isBF16();
  int outBuf = outBf16 ? newBuffer(Buffer::Arena, M * O * 2, BFloat16Type::get(ctx))
                       : newBuffer(Buffer::Arena, M * O * 4);
  // f32 with one group and no dilation along rows: a kernel row's taps
  // read KW * C contiguous input floats per pixel, so nothing is gathered.
  // Each kernel row is one product (K = KW * C) whose A rows are read
  // where they lie in the input (kiln_uk_sgemm_pbr takes their addresses);
  // pixels whose window leaves the input at the sides have their row
  // gathered, zero-padded, into a small stack buffer (slot: the tile's
  // output row, the edge column), rows above or below it read zeros.
  int64_t KR = KW * C, owLo = 0, owHi = OW;
  for (int64_t kx = 0; kx < KW; ++kx) {
    auto [lo, hi] = validRange(OW, s[1], kx * d[1] - pad[1], W);
    owLo = std::max(owLo, lo);
    owHi = std::min(owHi, hi);
  }
  owHi = std::max(owHi, owLo);
  int64_t edgeCols = owLo + OW - owHi;
  int64_t edgeRows = std::min(rb, (ceilDiv(rb, OW) + 1) * edgeCols);
  bool listedRows = f32Panels && !pointwise && G == 1 && d[1] == 1 && KH <= 7 && KR >= 96 &&
                    !inBf16 && (edgeRows + 1) * KR <= kChunkFloats;
  // An epilogue that first adds an output-shaped tensor (a partial
  // product of kiln-rematerialize's split, a residual): the tile starts
  // from it and the products accumulate onto it, in place where
  // kiln-plan-memory can.
  std::optional<Epilogue> afterAdd;
  int accSite = outBf16 || im2col
                    ? -1
                    : accumulatedSite(epi, out, afterAdd, [&](ArrayRef<int64_t> st) {
                        return st[1] == OW * O && st[2] == O && st[3] == 1 &&
                               (N == 1 || st[0] == P * O);
                      });
  const Epilogue *tail = accSite < 0 ? epi : afterAdd->ops.empty() ? nullptr : &*afterAdd;
  bool acc0 = accSite >= 0; // (the first product adds to the tile)
  int firstSite;
  SmallVector<int> ids = convArgs(op, wBuf, inBuf, epi, outBuf, firstSite);
  int o = ids.size() - 1;
  int64_t flops = estimateFlops(op);
  if (epi)
    for (Operation *eo : epi->ops)
      flops += estimateFlops(eo);
  // A run's images computed alone (a dynamic batch) whose pixel rows the
  // tiles do not divide: row tiles within each image, so an image's last
  // tile stops at its last row instead of computing the next (padding)
  // image's (MobileNetV2's 7 x 7 layers: 49 rows in tiles of 24, the third
  // computed 24 rows for 1).
  int64_t tilesPerImage = 0;
  if (!winograd && G == 1 && liveSym >= 0 && M % N == 0 && N > 1 && Mt % rb != 0) {
    tilesPerImage = ceilDiv(Mt, rb);
    rTiles = N * tilesPerImage;
  }
  if (winograd)
    liveRows(bands, 1, cTiles); // (bands per image)
  else if (tilesPerImage)
    liveRows(tilesPerImage, 1, cTiles);
  else if (G == 1 && M % N == 0)
    liveRows(M / N, rb, cTiles);
  emitKernel(op.getLoc(), "conv", ids, G * rTiles * cTiles, [&](KernelEmitter &e) {
    Value ct = e.rem(e.wg, cTiles), rest = e.div(e.wg, cTiles);
    Value rt = e.rem(rest, rTiles), g = e.div(rest, rTiles);
    Value r0 = e.mul(rt, rb), c0 = e.mul(ct, cb);
    Value rows = e.minI(e.idx(rb), arith::SubIOp::create(e.b, e.idx(M), r0));
    if (tilesPerImage) {
      Value t = e.rem(rt, tilesPerImage);
      r0 = e.add(e.mul(e.div(rt, tilesPerImage), Mt), e.mul(t, rb));
      rows = e.minI(e.idx(rb), arith::SubIOp::create(e.b, e.idx(Mt), e.mul(t, rb)));
    }
    // Winograd: band bi of image img, tile rows [tr0, tr1), the output
    // rows they cover.
    Value img, tr0, tr1;
    if (winograd) {
      img = e.div(rt, bands);
      tr0 = e.mul(e.rem(rt, bands), band);
      tr1 = e.minI(e.add(tr0, e.idx(band)), e.idx(TH));
      Value ohEnd = e.minI(e.mul(tr1, wm), e.idx(OH));
      r0 = e.add(e.mul(img, P), e.mul(tr0, wm * OW));
      rows = e.mul(arith::SubIOp::create(e.b, ohEnd, e.mul(tr0, wm)), OW);
    }
    Value cols = e.minI(e.idx(cb), arith::SubIOp::create(e.b, e.idx(Og), c0));
    Value oc0 = e.add(e.mul(g, Og), c0);
    Value outOff = e.add(e.mul(r0, O), oc0);
    // Where the products go: the output, or (bf16 storage) a f32 tile.
    Value tile = outBf16 ? e.scratch(rb * cb) : Value();
    Value cAddr = outBf16 ? e.addrM(tile, e.idx(0)) : e.addr(o, outOff);
    int64_t ldc = outBf16 ? cb : O;
    // (The bias joins the epilogue's pass: the first product overwrites the
    // tile, so the ukernel need not load it.)
    // C (+)= A x B rows [k0, k0 + k) of this group, at this tile's columns
    // (c0: a whole number of panels).
    // (a16: A is bf16 rows, gathered or stored so.)
    // The last product of an f32 tile whose epilogue is at most the bias
    // and a clamp (ReLU, ReLU6, Clip; after a residual it accumulated onto)
    // applies it as the ukernel stores the tile: no pass over the tile
    // after it (ResNet-50's kernels 43.8 -> 41.3 ms in sum on 1 thread, its
    // 1x1 convs 9-14% faster; MobileNetV2 2-4%).
    // (Winograd: its output transform applies them.)
    auto clamp = !outBf16 && !p.options.gpu &&
                         (winograd || (f32Panels && (pointwise || listedRows || cc == Cg)))
                     ? storeClamp(tail)
                     : std::nullopt;
    bool storeEpilogue = clamp && (hasBias || tail);
    auto product = [&](Value k, Value aAddr, int64_t lda, Value k0, bool acc, bool a16,
                       bool last = true) {
      if (storeEpilogue && last) {
        e.ukernelEp("kiln_uk_sgemm_pb_ep", rows, cols, k, aAddr, lda,
                    e.addr(0, e.mul(e.add(e.mul(e.add(e.mul(g, panels), e.div(c0, 32)), Kdim),
                                          k0),
                                    32)),
                    32 * Kdim, cAddr, ldc, acc, hasBias ? e.addr(2, oc0) : e.i64(0),
                    clamp->first, clamp->second);
        return;
      }
      if (bf16)
        e.ukernel(a16 ? "kiln_uk_sbgemm_pb_a16" : "kiln_uk_sbgemm_pb", rows, cols, k, aAddr, lda,
                  e.addr16(0, e.mul(e.add(e.mul(e.add(e.mul(g, panels), e.div(c0, 32)), Kp), k0),
                                      32)),
                  32 * Kp, cAddr, ldc, acc);
      else if (f16)
        e.ukernel("kiln_uk_hgemm", rows, cols, k, aAddr, lda,
                  e.addr16(0, e.add(e.mul(e.add(e.mul(g, Kdim), k0), Og), c0)), Og, cAddr, ldc,
                  acc);
      else if (f32Panels)
        e.ukernel("kiln_uk_sgemm_pb", rows, cols, k, aAddr, lda,
                  e.addr(0, e.mul(e.add(e.mul(e.add(e.mul(g, panels), e.div(c0, 32)), Kdim), k0),
                                  32)),
                  32 * Kdim, cAddr, ldc, acc);
      else
        e.sgemmPtr(rows, cols, k, aAddr, lda,
                   e.addr(0, e.add(e.mul(e.add(e.mul(g, Kdim), k0), Og), c0)), Og, cAddr, ldc,
                   acc);
    };
    // The tile starts from the added tensor: copied in, unless
    // kiln-plan-memory put the output in its place (the same address).
    if (acc0) {
      Value apart = arith::CmpIOp::create(e.b, arith::CmpIPredicate::ne, e.addr(o, e.idx(0)),
                                          e.addr(firstSite + accSite, e.idx(0)));
      ifElse(e, apart, [&] {
        e.loop(e.idx(0), rows, [&](Value r) {
          Value rowOff = e.add(outOff, e.mul(r, O));
          e.vecLoop(e.idx(0), cols, [&](Value j) {
            Value at = e.add(rowOff, j);
            e.vstore(e.vload(firstSite + accSite, at), o, at);
          });
        });
      });
    }
    if (winograd) {
      Value scratch = e.scratch(winogradScratch());
      func::CallOp::create(
          e.b, wino43 ? "kiln_uk_winograd_f43" : "kiln_uk_winograd_f23", TypeRange{},
          ValueRange{e.addr(1, e.mul(img, H * W * C)), e.addr(0, e.idx(0)),
                     e.addr(o, e.mul(img, P * O)), e.addrM(scratch, e.idx(0)), e.i64(H),
                     e.i64(W), e.i64(C), e.i64(pad[0]), e.i64(pad[1]), e.i64(OH), e.i64(OW),
                     e.i64(O), e.i64(tr0), e.i64(tr1), e.i64(c0), e.i64(cols),
                     e.i64(acc0 ? 1 : 0),
                     storeEpilogue && hasBias ? e.addr(2, e.idx(0)) : e.i64(0),
                     arith::ConstantOp::create(
                         e.b, e.b.getF32FloatAttr(storeEpilogue ? clamp->first : -INFINITY)),
                     arith::ConstantOp::create(
                         e.b, e.b.getF32FloatAttr(storeEpilogue ? clamp->second : INFINITY))});
    } else if (pointwise) {
      // (bf16 storage: the input's rows as they are; bf16Readers saw to an
      // even channel count.)
      product(e.idx(Cg), e.addr(1, e.add(e.mul(r0, C), e.mul(g, Cg))), C, e.idx(0), acc0,
              inBf16);
    } else if (im2col) {
      // Buffer 1 is the im2col rows.
      product(e.idx(Kdim), e.addr(1, e.mul(r0, Kp)), Kp, e.idx(0), false, true);
    } else if (listedRows) {
      Value ptrs = e.scratchI64(rb), zeros = e.scratch(KR);
      Value edge = e.scratch(std::max<int64_t>(edgeRows, 1) * KR);
      e.vecLoop(0, KR, [&](Value i) { e.vstoreM(e.f32(0.0f), zeros, i); });
      Value firstRow = e.div(r0, OW); // (output rows counted over the images)
      for (int64_t ky = 0; ky < KH; ++ky) {
        e.loop(e.idx(0), rows, [&](Value r) {
          Value px = e.add(r0, r);
          Value outRow = e.div(px, OW), ow = e.rem(px, OW);
          Value img = e.div(px, P), oh = e.rem(outRow, OH);
          Value ih = signedSub(e, e.add(e.mul(oh, s[0]), e.idx(ky * d[0])), pad[0]);
          Value rowIn = inRangeS(e, ih, 0, H), colIn = inRangeS(e, ow, owLo, owHi);
          ifElse(e, arith::AndIOp::create(e.b, rowIn, colIn), [&] {
            Value iw = signedSub(e, e.mul(ow, s[1]), pad[1]);
            Value off = e.mul(e.add(e.mul(e.add(e.mul(img, H), ih), W), iw), C);
            e.storeM(e.addr(1, off), ptrs, r);
          }, [&] {
            ifElse(e, rowIn, [&] {
              Value right = arith::SubIOp::create(e.b, e.add(ow, e.idx(owLo)), e.idx(owHi));
              Value col = arith::SelectOp::create(
                  e.b, arith::CmpIOp::create(e.b, arith::CmpIPredicate::ult, ow, e.idx(owLo)),
                  ow, right);
              Value slot = e.add(
                  e.mul(arith::SubIOp::create(e.b, outRow, firstRow), edgeCols), col);
              Value dst = e.mul(slot, KR);
              gatherRow(e, px, e.idx(0), ky * KW, (ky + 1) * KW, e.idx(0), C,
                        [&](Value v, Value k, Value mask) {
                          e.putM(asF32(e, v), edge, e.add(dst, k), mask);
                        });
              e.storeM(e.addrM(edge, dst), ptrs, r);
            }, [&] { e.storeM(e.addrM(zeros, e.idx(0)), ptrs, r); });
          });
        });
        Value panelsAt =
            e.addr(0, e.mul(e.add(e.mul(e.div(c0, 32), Kdim), e.idx(ky * KR)), 32));
        if (storeEpilogue && ky == KH - 1)
          e.ukernelEp("kiln_uk_sgemm_pbr_ep", rows, cols, e.idx(KR), e.addrM(ptrs, e.idx(0)), 0,
                      panelsAt, 32 * Kdim, cAddr, ldc, ky > 0 || acc0,
                      hasBias ? e.addr(2, oc0) : e.i64(0), clamp->first, clamp->second);
        else
          e.ukernel("kiln_uk_sgemm_pbr", rows, cols, e.idx(KR), e.addrM(ptrs, e.idx(0)), 0,
                    panelsAt, 32 * Kdim, cAddr, ldc, ky > 0 || acc0);
      }
    } else {
      int64_t chunkK = tpc * cc;
      // bf16: the gathered rows are rounded as they are written (half the
      // bytes; the ukernel reads them as they are, chunks of even length
      // but for a single odd chunk, whose rows end in a zero to an even
      // stride).
      int64_t ldCol = bf16 ? (chunkK + 1) / 2 * 2 : chunkK;
      Value col = bf16 ? e.scratchBf16(rb * ldCol) : e.scratch(rb * ldCol);
      auto put = [&](Value v, Value at, Value mask) {
        auto vt = llvm::dyn_cast<VectorType>(v.getType());
        v = asF32(e, v); // (bf16 storage: exact)
        if (bf16)
          v = arith::TruncFOp::create(
              e.b, vt ? Type(vt.clone(e.b.getBF16Type())) : Type(e.b.getBF16Type()), v);
        e.putM(v, col, at, mask);
      };
      // Gathers taps [t0, t1), channels [cBase, cBase + n) of every row
      // into col (row stride chunkK), then multiplies.
      auto chunk = [&](int64_t t0, int64_t t1, Value cBase, int64_t n, bool first) {
        e.loop(e.idx(0), rows, [&](Value r) {
          Value row = e.mul(r, ldCol);
          gatherRow(e, e.add(r0, r), g, t0, t1, cBase, n,
                    [&](Value v, Value k, Value mask) { put(v, e.add(row, k), mask); });
          if (ldCol > chunkK)
            put(e.f32(0.0f), e.add(row, e.idx(chunkK)), Value());
        });
        product(e.idx((t1 - t0) * n), e.addrM(col, e.idx(0)), ldCol,
                e.add(e.idx(t0 * Cg), cBase), !first || acc0, bf16, t1 >= KK);
      };
      if (cc == Cg) {
        for (int64_t t0 = 0; t0 < KK; t0 += tpc)
          chunk(t0, std::min(KK, t0 + tpc), e.idx(0), Cg, t0 == 0);
      } else {
        // Channel chunks of one tap at a time, all accumulating onto zero
        // (or the added tensor).
        if (!acc0)
        e.loop(e.idx(0), rows, [&](Value r) {
          if (outBf16) {
            e.loop(e.idx(0), cols, [&](Value j) {
              e.storeM(e.f32(0.0f), tile, e.add(e.mul(r, cb), j));
            });
            return;
          }
          Value rowOff = e.add(outOff, e.mul(r, O));
          e.loop(e.idx(0), cols, [&](Value j) { e.store(e.f32(0.0f), o, e.add(rowOff, j)); });
        });
        int64_t full = Cg / cc * cc;
        for (int64_t t = 0; t < KK; ++t) {
          e.loop(e.idx(0), e.idx(full), [&](Value cBase) { chunk(t, t + 1, cBase, cc, false); }, cc);
          if (full < Cg)
            chunk(t, t + 1, e.idx(full), Cg - full, false);
        }
      }
    }
    if ((tail || hasBias || outBf16) && !storeEpilogue)
      e.loop(e.idx(0), rows, [&](Value r) {
        Value px = e.add(r0, r);
        Value img = e.div(px, P), pix = e.rem(px, P);
        Value rowOff = e.add(outOff, e.mul(r, O));
        e.vecLoop(e.idx(0), cols, [&](Value j) {
          Value at = e.add(rowOff, j);
          Value v = outBf16 ? e.vloadM(tile, e.add(e.mul(r, cb), j)) : e.vload(o, at);
          if (hasBias)
            v = e.fadd(v, e.vload(2, e.add(oc0, j)));
          if (tail)
            v = convEpilogueNhwc(e, tail, firstSite, img, pix, e.add(oc0, j), v);
          if (outBf16)
            storeRounded(e, v, o, at);
          else
            e.vstore(v, o, at);
        });
      });
  }, flops);
  p.launches.back().layout = "NHWC";
  if (accSite >= 0)
    p.launches.back().inPlace = {firstSite + accSite};
  bufferOf[op.getResult()] = outBuf;
  return success();
}

} // namespace kiln::codegen::kernels
