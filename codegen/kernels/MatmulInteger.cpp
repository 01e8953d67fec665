//===- MatmulInteger.cpp - 8-bit integer matrix products -------------------===//
//
// kiln.matmul_integer on the CPU: the rows of its lhs (every batch's, one
// matrix) times constant weights packed at compile time for the 8-bit
// ukernel (kiln_uk_q8gemm_pq: bytes less their zero point, quads of k in
// 16-column panels with their column sums), the lhs's zero point read at
// run time. Tiles
// of rows x whole panels per workgroup; a fused epilogue (the cast to f32,
// the scales, the bias, the next requantization) runs on each tile as the
// ukernel leaves it. The GPU targets and a run-time rhs
// never get here: kiln-expand-integer-products rewrites those into exact
// f32 products first.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"
#include "codegen/kernels/Packing.h"
#include "codegen/kernels/Tiling.h"

#include "kiln/runtime.h"

#include <algorithm>

using namespace mlir;

namespace kiln::codegen::kernels {

LogicalResult Lowering::matmulInteger(kiln::MatMulIntegerOp op, const Epilogue *epi) {
  auto a = shape(op.getLhs());
  int64_t K = a.back(), N = shape(op.getRhs())[1];
  int64_t M = 1;
  for (int64_t d : a.drop_back())
    M *= d;
  int bBuf = bufferOf.lookup(op.getRhs()), zbBuf = bufferOf.lookup(op.getRhsZero());
  if (p.options.gpu || p.buffers[bBuf].kind != Buffer::Constant ||
      p.buffers[zbBuf].kind != Buffer::Constant)
    return op.emitError("kiln.matmul_integer: the 8-bit kernels need a constant rhs on the CPU "
                        "target (kiln-expand-integer-products rewrites the others)");
  bool aSigned = !elemType(op.getLhs()).isUnsignedInteger();
  bool bSigned = !elemType(op.getRhs()).isUnsignedInteger();
  auto byteAt = [&](int buf, int64_t i) { return constantInt8(buf, i, bSigned); };
  int32_t zb = byteAt(zbBuf, 0);
  // (Packed per product, not shared through packedB(): the values depend
  // on the zero point too.)
  PackedQ8 pk = packQ8Quads(1, K, N, [&](int64_t, int64_t k, int64_t n) {
    return byteAt(bBuf, k * N + n) - zb;
  });
  int packed = addConstantData(pk.bytes);

  // Row tiles x column tiles of whole panels.
  auto [rb, cb] = productTiles(M, N, 1);
  if (cb < N)
    cb = ceilDiv(cb, 16) * 16;
  int64_t rTiles = ceilDiv(std::max<int64_t>(M, 1), rb), cTiles = ceilDiv(N, cb);
  // The int32 sums: the result itself, or (with an epilogue) a tile on the
  // workgroup's stack that the epilogue reads while it is in cache.
  ProductArgs args = productArgs(
      op, M, N, {bufferOf.lookup(op.getLhs()), packed, bufferOf.lookup(op.getLhsZero())}, epi);
  int firstSite = args.firstSite, accArg = args.accArg, outArg = args.outArg;
  auto rowDims = shape(op.getResult()).drop_back();
  int64_t flags = aSigned ? KILN_UK_A_INT8 : 0;
  emitKernel(op.getLoc(), "matmul_integer", args.ids, rTiles * cTiles, [&](KernelEmitter &e) {
    Value i0 = e.mul(e.div(e.wg, cTiles), rb), j0 = e.mul(e.rem(e.wg, cTiles), cb);
    Value rows = e.minI(e.idx(rb), arith::SubIOp::create(e.b, e.maxI(e.idx(M), i0), i0));
    Value cols = e.minI(e.idx(cb), arith::SubIOp::create(e.b, e.idx(N), j0));
    Value az = e.load(2, e.idx(0));
    az = aSigned ? Value(arith::ExtSIOp::create(e.b, e.b.getI64Type(), az))
                 : Value(arith::ExtUIOp::create(e.b, e.b.getI64Type(), az));
    Value tile = epi ? e.scratchI32(rb * cb) : Value();
    func::CallOp::create(e.b, "kiln_uk_q8gemm_pq", TypeRange{},
                         ValueRange{e.i64(rows), e.i64(cols), e.i64(K), e.addr(0, e.mul(i0, K)),
                                    e.i64(K), az, e.addr8(1, e.mul(e.div(j0, 16), pk.ldb)),
                                    e.i64(pk.ldb), e.i64(pk.shift),
                                    epi ? e.addrM(tile, e.idx(0))
                                        : e.addr(accArg, e.add(e.mul(i0, N), j0)),
                                    e.i64(epi ? cb : N), e.i64(flags)});
    if (epi)
      tileEpilogue(e, *epi, firstSite, rowDims, N, i0, j0, rows, cols, tile, cb, outArg);
  }, args.flops);
  bufferOf[op.getResult()] = args.out;
  return success();
}

Lowering::ProductArgs Lowering::productArgs(Operation *op, int64_t M, int64_t N,
                                            SmallVector<int> ids, const Epilogue *epi) {
  ProductArgs a;
  Value result = op->getResult(0);
  a.firstSite = ids.size();
  if (epi)
    for (Value v : epi->siteArgs)
      ids.push_back(bufferOf.lookup(v));
  Type y = elemType(epi ? epi->yielded : result);
  a.out = newBuffer(Buffer::Arena, std::max<int64_t>(M * N, 1) * widthOf(y), y);
  ids.push_back(a.out);
  a.outArg = ids.size() - 1;
  if (!epi)
    a.accArg = a.outArg;
  a.flops = estimateFlops(op);
  if (epi)
    for (Operation *o : epi->ops)
      a.flops += estimateFlops(o);
  a.ids = std::move(ids);
  return a;
}

} // namespace kiln::codegen::kernels
