//===- ConvInteger.cpp - 8-bit integer convolutions -----------------------===//
//
// kiln.conv_integer on the CPU: the implicit matrix product of a
// convolution on the 8-bit ukernel (kiln_uk_q8gemm_pq). Each output pixel
// is a row of Kdim = Cg * KH * KW bytes per group, k = tap * Cg + channel:
// the input itself for pointwise NHWC convolutions (stride 1, no padding),
// otherwise rows gathered once by an im2col kernel (kiln_uk_conv_rows8; reads
// outside the input take the input's zero point, which contributes
// nothing). The constant weights are packed at compile time as for
// kiln.matmul_integer, one matrix [Kdim x Og] per group. Workgroups are
// group x row tile x column tile (whole 16-column panels); a fused epilogue
// (the cast to f32, the per-channel scales, the bias, the next
// requantization) runs on each tile of int32 sums as the ukernel leaves
// it: vectors along the channels in NHWC, one value at a time in NCHW.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"
#include "codegen/kernels/Packing.h"
#include "codegen/kernels/Tiling.h"

#include "kiln/runtime.h"

#include <algorithm>

using namespace mlir;

namespace kiln::codegen::kernels {

LogicalResult Lowering::convInteger(kiln::ConvIntegerOp op, const Epilogue *epi) {
  bool nhwc = kiln::attr::isChannelsLast(op);
  auto in = shape(op.getInput()), w = shape(op.getWeight()), res = shape(op.getResult());
  int64_t N = in[0], C = in[nhwc ? 3 : 1], H = in[nhwc ? 1 : 2], W = in[nhwc ? 2 : 3];
  int64_t O = w[0], KH = w[2], KW = w[3], OH = res[nhwc ? 1 : 2], OW = res[nhwc ? 2 : 3];
  int64_t G = static_cast<int64_t>(op.getGroup()), Cg = C / G, Og = O / G;
  int64_t KK = KH * KW, Kdim = Cg * KK, P = OH * OW, M = N * P;
  auto s = op.getStrides(), d = op.getDilations(), pad = op.getPads();
  int wBuf = bufferOf.lookup(op.getWeight()), wzBuf = bufferOf.lookup(op.getWeightZero());
  if (p.options.gpu || p.buffers[wBuf].kind != Buffer::Constant ||
      p.buffers[wzBuf].kind != Buffer::Constant)
    return op.emitError("kiln.conv_integer: the 8-bit kernels need constant weights on the "
                        "CPU target");
  bool aSigned = !elemType(op.getInput()).isUnsignedInteger();
  bool wSigned = !elemType(op.getWeight()).isUnsignedInteger();
  auto byteAt = [&](int buf, int64_t i) { return constantInt8(buf, i, wSigned); };
  int32_t wz = byteAt(wzBuf, 0);
  // B[g][k][o] = w[g * Og + o][c][ky][kx] - wz, k = (ky * KW + kx) * Cg + c:
  // per group, kiln_uk_q8gemm_pq's panels.
  PackedQ8 pk = packQ8Quads(G, Kdim, Og, [&](int64_t g, int64_t k, int64_t o) {
    int64_t t = k / Cg, c = k % Cg;
    return byteAt(wBuf, ((g * Og + o) * Cg + c) * KK + t) - wz;
  });
  int packed = addConstantData(pk.bytes);

  // The rows: the NHWC input itself (pointwise), or gathered.
  bool pointwise = nhwc && KK == 1 && s[0] == 1 && s[1] == 1 &&
                   llvm::all_of(pad, [](int64_t q) { return q == 0; });
  int inBuf = bufferOf.lookup(op.getInput()), zBuf = bufferOf.lookup(op.getInputZero());
  auto inputZero = [&](KernelEmitter &e, int arg) -> Value {
    Value z = e.load(arg, e.idx(0));
    return aSigned ? Value(arith::ExtSIOp::create(e.b, e.b.getI64Type(), z))
                   : Value(arith::ExtUIOp::create(e.b, e.b.getI64Type(), z));
  };
  int rowsBuf = inBuf;
  int64_t lda = C, groupStride = Cg;
  if (!pointwise) {
    lda = G * Kdim, groupStride = Kdim;
    rowsBuf = newBuffer(Buffer::Arena, std::max<int64_t>(M * lda, 1), elemType(op.getInput()));
    int64_t perWg = std::max<int64_t>(1, ceilDiv(M, 4 * kMinTiles));
    emitKernel(op.getLoc(), "im2col", {rowsBuf, inBuf, zBuf}, ceilDiv(M, perWg),
               [&](KernelEmitter &e) {
      auto [lo, hi] = e.share(M, perWg);
      SmallVector<Value> args{e.addr(1, e.idx(0)), e.addr(0, e.idx(0)), e.i64(lo), e.i64(hi)};
      for (int64_t a : {H, W, C, OH, OW, KH, KW, s[0], s[1], d[0], d[1], pad[0], pad[1], G,
                        static_cast<int64_t>(nhwc)})
        args.push_back(e.i64(a));
      args.push_back(inputZero(e, 2));
      func::CallOp::create(e.b, "kiln_uk_conv_rows8", TypeRange{}, args);
    });
    p.launches.back().layout = nhwc ? "NHWC" : "NCHW";
  }

  // Row tiles x column tiles (whole panels) per group.
  auto [rb, cb] = productTiles(M, Og, G);
  if (cb < Og)
    cb = ceilDiv(cb, 16) * 16;
  int64_t rTiles = ceilDiv(std::max<int64_t>(M, 1), rb), cTiles = ceilDiv(Og, cb);
  // The int32 sums, pixel-major [M x O]: the NHWC result itself without an
  // epilogue; with one, in NHWC, a tile on the workgroup's stack that the
  // epilogue reads while it is in cache (never written back to memory);
  // for an NCHW result, a buffer the epilogue transposes from.
  bool direct = nhwc && !epi, tiled = nhwc && epi;
  SmallVector<int> ids{rowsBuf, packed, zBuf};
  int firstSite = ids.size();
  if (epi)
    for (Value site : epi->siteArgs)
      ids.push_back(bufferOf.lookup(site));
  int acc = -1;
  if (!tiled) {
    acc = newBuffer(Buffer::Arena, std::max<int64_t>(M * O, 1) * 4, IntegerType::get(ctx, 32));
    ids.push_back(acc);
  }
  int out = acc;
  if (!direct) {
    Type y = epi ? elemType(epi->yielded) : elemType(op.getResult());
    out = newBuffer(Buffer::Arena, std::max<int64_t>(M * O, 1) * widthOf(y), y);
    ids.push_back(out);
  }
  int accArg = tiled ? -1 : firstSite + (epi ? epi->siteArgs.size() : 0);
  int outArg = ids.size() - 1;
  int64_t flops = estimateFlops(op);
  if (epi)
    for (Operation *o : epi->ops)
      flops += estimateFlops(o);
  int64_t flags = aSigned ? KILN_UK_A_INT8 : 0;
  emitKernel(op.getLoc(), "conv_integer", ids, G * rTiles * cTiles, [&](KernelEmitter &e) {
    Value g = e.div(e.wg, rTiles * cTiles), t = e.rem(e.wg, rTiles * cTiles);
    Value i0 = e.mul(e.div(t, cTiles), rb), j0 = e.mul(e.rem(t, cTiles), cb);
    Value rows = e.minI(e.idx(rb), arith::SubIOp::create(e.b, e.maxI(e.idx(M), i0), i0));
    Value cols = e.minI(e.idx(cb), arith::SubIOp::create(e.b, e.idx(Og), j0));
    Value c0 = e.add(e.mul(g, Og), j0); // the tile's first output channel
    Value a = e.addr(0, e.add(e.mul(i0, lda), e.mul(g, groupStride)));
    Value bp = e.addr8(1, e.add(e.mul(g, pk.groupBytes), e.mul(e.div(j0, 16), pk.ldb)));
    Value tile = tiled ? e.scratchI32(rb * cb) : Value();
    Value cAddr = tiled ? e.addrM(tile, e.idx(0)) : e.addr(accArg, e.add(e.mul(i0, O), c0));
    func::CallOp::create(e.b, "kiln_uk_q8gemm_pq", TypeRange{},
                         ValueRange{e.i64(rows), e.i64(cols), e.i64(Kdim), a, e.i64(lda),
                                    inputZero(e, 2), bp, e.i64(pk.ldb), e.i64(pk.shift), cAddr,
                                    e.i64(tiled ? cb : O), e.i64(flags)});
    if (direct)
      return;
    e.loop(e.idx(0), rows, [&](Value r) {
      Value i = e.add(i0, r), n = e.div(i, P), pix = e.rem(i, P);
      if (nhwc) {
        // Channels contiguous in the tile, the sites and the result.
        Value row = e.mul(i, O), tileRow = e.mul(r, cb);
        e.vecLoop(e.idx(0), cols, [&](Value jj) {
          Value oc = e.add(c0, jj);
          Value x = e.vloadM(tile, e.add(tileRow, jj));
          e.vstore(convEpilogueNhwc(e, epi, firstSite, n, pix, oc, x), outArg, e.add(row, oc));
        });
        return;
      }
      e.loop(e.idx(0), cols, [&](Value jj) {
        Value oc = e.add(c0, jj);
        Value x = e.load(accArg, e.add(e.mul(i, O), oc));
        e.store(convEpilogue(e, epi, firstSite, n, oc, pix, x), outArg,
                e.add(e.mul(e.add(e.mul(n, O), oc), P), pix));
      });
    });
  }, flops);
  p.launches.back().layout = nhwc ? "NHWC" : "NCHW";
  bufferOf[op.getResult()] = out;
  return success();
}

} // namespace kiln::codegen::kernels
