//===- MatmulNBits.cpp - products on block-quantized weights ---------------===//
//
// kiln.matmul_nbits on the CPU: the rows of its lhs (every batch's, one
// matrix) times weights whose codes, scales and zero points are constants,
// packed at compile time for kiln_uk_bqgemm (runtime.h): codes of 4 bits
// or fewer two to a byte, wider ones a byte each, in quads of 4 columns and
// units of 32 k; per quad and block the columns' scales and zero points as
// f32. Tiles of rows x whole quads per workgroup (a one-row decode step
// splits its columns over the threads); a fused epilogue (the bias, an
// activation) runs on each tile as the ukernel leaves it. The CUDA targets,
// run-time weights and blocks that are not whole units of 32 k never get
// here: kiln-expand-integer-products dequantizes those into f32 products.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"
#include "codegen/kernels/Tiling.h"

#include "kiln/runtime.h"

#include <algorithm>
#include <cstring>

using namespace mlir;

namespace kiln::codegen::kernels {

namespace {
constexpr int64_t kUnit = 32, kQuad = 4;
} // namespace

LogicalResult Lowering::matmulNBits(kiln::MatMulNBitsOp op, const Epilogue *epi) {
  auto a = shape(op.getLhs());
  int64_t K = a.back(), N = shape(op.getWeight())[0], block = op.getBlockSize();
  int64_t M = 1;
  for (int64_t d : a.drop_back())
    M *= d;
  int wBuf = bufferOf.lookup(op.getWeight()), sBuf = bufferOf.lookup(op.getScale()),
      zBuf = bufferOf.lookup(op.getZero());
  auto constant = [&](int buf) { return p.buffers[buf].kind == Buffer::Constant; };
  if (p.options.gpu || !constant(wBuf) || !constant(sBuf) || !constant(zBuf) ||
      block % kUnit != 0)
    return op.emitError("kiln.matmul_nbits: the CPU kernel needs constant codes, scales and "
                        "zero points and blocks of whole 32-k units "
                        "(kiln-expand-integer-products rewrites the others)");
  // Codes as unsigned fields: signed ones (and their zero points) shifted
  // by 2^(bits-1), which leaves every difference as it is.
  bool isSigned = !elemType(op.getWeight()).isUnsignedInteger();
  int32_t shift = isSigned ? 1 << (op.getBits() - 1) : 0;
  int64_t blocks = (K + block - 1) / block;
  auto codeOf = [&](int64_t n, int64_t k) {
    return constantInt8(wBuf, n * K + k, isSigned) + shift;
  };
  bool nibbles = true;
  for (int64_t i = 0; i < N * K && nibbles; ++i) {
    int32_t v = codeOf(i / K, i % K);
    nibbles = v >= 0 && v <= 15;
  }
  // (Codes past 255 cannot come from 8-bit carriers; below 0 only from a
  // signed code under its declared width, kept exact in a byte either way.)
  int64_t unitBytes = nibbles ? kUnit / 2 : kUnit, units = (K + kUnit - 1) / kUnit;
  int64_t quads = (N + kQuad - 1) / kQuad, quadBytes = units * kQuad * unitBytes;
  std::vector<char> codes(std::max<int64_t>(quads * quadBytes, 1), 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      auto v = static_cast<uint8_t>(codeOf(n, k));
      int64_t at = (n / kQuad) * quadBytes + ((k / kUnit) * kQuad + n % kQuad) * unitBytes;
      int64_t j = k % kUnit;
      if (!nibbles)
        codes[at + j] = static_cast<char>(v);
      else if (j < 16)
        codes[at + j] = static_cast<char>(static_cast<uint8_t>(codes[at + j]) | v);
      else
        codes[at + j - 16] = static_cast<char>(static_cast<uint8_t>(codes[at + j - 16]) | v << 4);
    }
  std::vector<float> params(std::max<int64_t>(quads * blocks * 2 * kQuad, 1), 0.0f);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t b = 0; b < blocks; ++b) {
      float s;
      std::memcpy(&s, &p.weights[p.buffers[sBuf].offset + (n * blocks + b) * 4], 4);
      float *at = &params[((n / kQuad) * blocks + b) * 2 * kQuad];
      at[n % kQuad] = s;
      at[kQuad + n % kQuad] =
          static_cast<float>(constantInt8(zBuf, n * blocks + b, isSigned) + shift);
    }
  int packed = addConstantData(codes);
  int scales = addConstantData(
      ArrayRef<char>(reinterpret_cast<const char *>(params.data()), params.size() * 4));

  // Row tiles x column tiles of whole quads: a few rows split their
  // columns over the threads. Live rows (a decode step of a decoder
  // compiled for T tokens): the tiles of the run's rows alone, their
  // columns split as for one row.
  auto rowDims = shape(op.getResult()).drop_back();
  int symRows = -1;
  int64_t unitRows = 1; // flattened rows per index along the live axis
  if (liveInside())
    for (int64_t d = static_cast<int64_t>(rowDims.size()) - 1; d >= 0; --d) {
      if (liveAxis(d) >= 0) {
        symRows = liveAxis(d);
        break;
      }
      unitRows *= rowDims[d];
    }
  auto [rb, cb] = productTiles(M, N, 1);
  if (symRows >= 0)
    cb = productTiles(1, N, 1).second;
  if (cb < N)
    cb = std::max<int64_t>(kQuad, cb / kQuad * kQuad);
  int64_t rTiles = ceilDiv(std::max<int64_t>(M, 1), rb), cTiles = ceilDiv(N, cb);
  if (symRows >= 0)
    liveLaunch({{{symRows}, unitRows, rb}}, cTiles);
  ProductArgs args =
      productArgs(op, M, N, {bufferOf.lookup(op.getLhs()), packed, scales}, epi);
  int firstSite = args.firstSite, accArg = args.accArg, outArg = args.outArg;
  int64_t bits = nibbles ? 4 : 8;
  emitKernel(op.getLoc(), "matmul_nbits", args.ids, rTiles * cTiles, [&](KernelEmitter &e) {
    Value i0 = e.mul(e.div(e.wg, cTiles), rb), j0 = e.mul(e.rem(e.wg, cTiles), cb);
    // (The live rows are a prefix of the flattened ones: LiveExtents lets
    // only an axis whose predecessors have extent 1 stop early.)
    Value m = symRows >= 0 ? e.mul(e.extent(M / unitRows, symRows), unitRows) : e.idx(M);
    Value rows = e.minI(e.idx(rb), arith::SubIOp::create(e.b, e.maxI(m, i0), i0));
    Value cols = e.minI(e.idx(cb), arith::SubIOp::create(e.b, e.idx(N), j0));
    Value quad = e.div(j0, kQuad);
    // (The packed buffers are f32-typed: offsets in 4-byte words.)
    Value codesAt = e.addr(1, e.mul(quad, quadBytes / 4));
    // (With an epilogue the f32 products go to a tile on the stack.)
    Value tile = epi ? e.scratch(rb * cb) : Value();
    func::CallOp::create(e.b, "kiln_uk_bqgemm", TypeRange{},
                         ValueRange{e.i64(rows), e.i64(cols), e.i64(K), e.addr(0, e.mul(i0, K)),
                                    e.i64(K), codesAt,
                                    e.addr(2, e.mul(quad, blocks * 2 * kQuad)),
                                    epi ? e.addrM(tile, e.idx(0))
                                        : e.addr(accArg, e.add(e.mul(i0, N), j0)),
                                    e.i64(epi ? cb : N), e.i64(bits), e.i64(block), e.i64(0)});
    if (epi)
      tileEpilogue(e, *epi, firstSite, rowDims, N, i0, j0, rows, cols, tile, cb, outArg);
  }, args.flops);
  bufferOf[op.getResult()] = args.out;
  return success();
}

} // namespace kiln::codegen::kernels
