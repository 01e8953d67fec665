//===- ConvertContrib.cpp - onnxruntime's com.microsoft ops ----------------===//
//
// Ops of onnxruntime's com.microsoft domain that its tools write into
// models (the converter table keys them "com.microsoft.<op_type>"):
//   MatMulNBits: Y = A * dequantize(B)^T (+ bias), B's N rows of K codes
//     (`bits` wide, packed low bits first into each block's bytes) with a
//     scale and zero point per row and block of `block_size` k -- the
//     int4/int8 weight-only models of onnxruntime's MatMulNBitsQuantizer,
//     onnxruntime-genai and Olive. The codes unpack into a kiln.matmul_nbits;
//     float zero points take f32 weights dequantized here. g_idx (the
//     deprecated act-order block of each k) must be the plain k / block_size,
//     without zero points.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/CompositeBuilder.h"

#include <cstring>

using namespace mlir;
namespace kiln::onnx_import {
namespace {

/// Code `j` of a little-endian bit stream of `bits`-wide fields.
uint32_t field(const std::vector<double> &bytes, int64_t base, int64_t j, int64_t bits) {
  int64_t bit = j * bits;
  uint32_t word = 0;
  for (int64_t b = 0; b < 2; ++b) {
    int64_t at = base + bit / 8 + b;
    if (at < static_cast<int64_t>(bytes.size()))
      word |= static_cast<uint32_t>(hostInt(bytes[at])) << (8 * b);
  }
  return (word >> (bit % 8)) & ((1u << bits) - 1);
}

LogicalResult convertMatMulNBits(NodeContext &ctx) {
  if (!ctx.hasInput(0) || !ctx.hasInput(1) || !ctx.hasInput(2))
    return ctx.error("needs inputs A, B and scales");
  int64_t K = ctx.attrInt("K", -1), N = ctx.attrInt("N", -1);
  int64_t bits = ctx.attrInt("bits", 4), block = ctx.attrInt("block_size", -1);
  // (Bounds that keep every count below in int64.)
  constexpr int64_t kMaxDim = int64_t(1) << 31, kMaxBlock = int64_t(1) << 16;
  if (K <= 0 || N <= 0 || K > kMaxDim || N > kMaxDim)
    return ctx.error("attributes K and N must be positive (and below 2^31)");
  if (bits < 2 || bits > 8)
    return ctx.error("bits must be 2 to 8 (got " + Twine(bits) + ")");
  if (block < 16 || block > kMaxBlock || (block & (block - 1)))
    return ctx.error("block_size must be a power of two from 16 to 65536 (got " + Twine(block) +
                     ")");
  auto at = ctx.inputType(0);
  if (!llvm::isa<FloatType>(at.getElementType()) || at.getRank() < 1 ||
      at.getShape().back() != K)
    return ctx.error("A must be a float tensor of rows of K = " + Twine(K) + " values");
  int64_t blocks = (K + block - 1) / block, blob = block * bits / 8;
  const HostTensor *codes = ctx.hostInput(1);
  if (!codes)
    return ctx.error("B (the packed codes) must be a constant (an initializer)");
  if (!codes->elementType.isUnsignedInteger(8) || codes->numElements() != N * blocks * blob)
    return ctx.error("B must hold N x ceil(K / block_size) x block_size * bits / 8 = " +
                     Twine(N * blocks * blob) + " uint8 values");
  auto st = ctx.inputType(2);
  if (st.getNumElements() != N * blocks || !llvm::isa<FloatType>(st.getElementType()))
    return ctx.error("scales must hold N x ceil(K / block_size) = " + Twine(N * blocks) +
                     " float values");
  // Zero points: packed codes per row (uint8), or floats; 2^(bits-1) when
  // absent.
  const HostTensor *zeros = ctx.hostInput(3);
  bool floatZeros = zeros && llvm::isa<FloatType>(zeros->elementType);
  int64_t zeroRow = (blocks * bits + 7) / 8;
  if (ctx.hasInput(3)) {
    if (!zeros)
      return ctx.error("zero_points must be a constant (an initializer)");
    if (floatZeros ? zeros->numElements() != N * blocks
                   : !zeros->elementType.isUnsignedInteger(8) ||
                         zeros->numElements() != N * zeroRow)
      return ctx.error("zero_points must hold N x ceil(K / block_size) floats or N rows of " +
                       Twine(zeroRow) + " packed uint8 codes");
  }
  // g_idx: each k's block; only the plain k / block_size is taken.
  if (ctx.hasInput(4)) {
    // (onnxruntime reads zero points beside a g_idx otherwise than without
    // one, which the spec does not describe: refused rather than guessed.)
    if (ctx.hasInput(3))
      return ctx.error("g_idx together with zero_points is not supported");
    const HostTensor *gIdx = ctx.hostInput(4);
    if (!gIdx || gIdx->numElements() != K)
      return ctx.error("g_idx must be a constant of K = " + Twine(K) + " block indices");
    for (int64_t k = 0; k < K; ++k)
      if (hostInt(gIdx->values[k]) != k / block)
        return ctx.error("g_idx[" + Twine(k) + "] = " + Twine(hostInt(gIdx->values[k])) +
                         ": reordered blocks (act-order) are not supported; g_idx must be "
                         "k / block_size");
  }

  Builder g{ctx};
  Type f32 = ctx.builder.getF32Type();
  Value a = g.cast(ctx.input(0), f32);
  Value scale = g.cast(g.reshape(ctx.input(2), {N, blocks}), f32);
  if (!g.ok({a, scale}))
    return failure();
  auto code = [&](int64_t n, int64_t k) {
    return field(codes->values, (n * blocks + k / block) * blob, k % block, bits);
  };
  auto zeroCode = [&](int64_t n, int64_t b) -> uint32_t {
    if (!zeros)
      return 1u << (bits - 1);
    return field(zeros->values, n * zeroRow, b, bits);
  };
  auto shape = g.shape(a);
  bool vec = shape.size() == 1;
  Value rows = vec ? g.reshape(a, {1, K}) : a;
  Value y;
  if (floatZeros) {
    // f32 weights [K, N], dequantized here.
    const HostTensor *scales = ctx.hostInput(2);
    if (!scales)
      return ctx.error("scales must be a constant (an initializer) with float zero points");
    HostTensor w;
    w.elementType = f32;
    w.shape = {K, N};
    w.values.resize(K * N);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) {
        int64_t b = k / block;
        double z = zeros->values[n * blocks + b];
        // (f32 arithmetic, as the kernels dequantize.)
        w.values[k * N + n] = static_cast<float>(
            (static_cast<float>(code(n, k)) - static_cast<float>(z)) *
            static_cast<float>(scales->values[n * blocks + b]));
      }
    Value wv = Importer::materialize(ctx.builder, w, ctx.node.name() + ".w");
    y = g.take(ctx.create<kiln::MatMulOp>(rows, wv));
  } else {
    // The codes, one per byte, and the zero points, as constants.
    auto u8 = ctx.builder.getIntegerType(8, false);
    std::vector<uint8_t> wb(N * K), zb(N * blocks);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t k = 0; k < K; ++k)
        wb[n * K + k] = static_cast<uint8_t>(code(n, k));
      for (int64_t b = 0; b < blocks; ++b)
        zb[n * blocks + b] = static_cast<uint8_t>(zeroCode(n, b));
    }
    auto constant = [&](const std::vector<uint8_t> &v, ArrayRef<int64_t> s) {
      auto t = RankedTensorType::get(s, u8);
      auto attr = DenseElementsAttr::getFromRawBuffer(
          t, ArrayRef<char>(reinterpret_cast<const char *>(v.data()), v.size()));
      return kiln::ConstantOp::create(ctx.builder, ctx.loc, attr).getResult();
    };
    Value w = constant(wb, {N, K}), z = constant(zb, {N, blocks});
    y = g.take(ctx.create<kiln::MatMulNBitsOp>(rows, w, scale, z,
                                               ctx.builder.getI64IntegerAttr(bits),
                                               ctx.builder.getI64IntegerAttr(block)));
  }
  if (vec)
    y = g.reshape(y, {N});
  if (ctx.hasInput(5)) {
    auto bt = ctx.inputType(5);
    if (bt.getRank() != 1 || bt.getDimSize(0) != N)
      return ctx.error("bias must hold N = " + Twine(N) + " values");
    y = g.add(y, g.cast(ctx.input(5), f32));
  }
  return g.result(g.cast(y, at.getElementType()));
}

} // namespace

void registerContribConverters(llvm::StringMap<Converter> &t) {
  t["com.microsoft.MatMulNBits"] = convertMatMulNBits;
}

} // namespace kiln::onnx_import
