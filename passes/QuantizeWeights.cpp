//===- QuantizeWeights.cpp - weight-only int4/int8 of matrix products -----===//
//
// --weights=int4|int8[:block]: the constant f32 weights of matmuls and gemms
// become codes with a scale and zero point per output column and block of k
// (asymmetric round-to-nearest, as onnxruntime's MatMulNBitsQuantizer), the
// product a kiln.matmul_nbits on f32 activations -- what a decoder's
// one-row products stream at 4 or 8 bits a weight.
//
//===----------------------------------------------------------------------===//
#include "passes/ConstantData.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_QUANTIZEWEIGHTSPASS
#include "passes/Passes.h.inc"

namespace {

RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// A product the pass takes: constant f32 weights of K >= 32 (a 32-k unit
/// of the CPU kernel at least).
std::optional<ConstantWeightProduct> weightProductOf(Operation *op) {
  auto p = constantWeightProduct(op);
  if (!p || typeOf(p->weights).getDimSize(p->transB ? 1 : 0) < 32)
    return std::nullopt;
  return p;
}

struct QuantizeWeightsPass : impl::QuantizeWeightsPassBase<QuantizeWeightsPass> {
  using QuantizeWeightsPassBase::QuantizeWeightsPassBase;

  void runOnOperation() override {
    if (bits < 2 || bits > 8 || blockSize < 1) {
      getOperation().emitError("kiln-quantize-weights: bits must be 2 to 8 and block-size "
                               "positive");
      return signalPassFailure();
    }
    SmallVector<Operation *> products;
    getOperation().walk([&](Operation *op) {
      if (weightProductOf(op))
        products.push_back(op);
    });
    const float top = static_cast<float>((1 << bits) - 1);
    for (Operation *op : products) {
      ConstantWeightProduct p = *weightProductOf(op);
      auto w = getF32Constant(p.weights);
      if (!w || llvm::any_of(*w, [](float v) { return !std::isfinite(v); }))
        continue; // (non-finite weights have no codes: the product stays f32)
      auto wt = typeOf(p.weights);
      int64_t K = wt.getDimSize(p.transB ? 1 : 0), N = wt.getDimSize(p.transB ? 0 : 1);
      int64_t blocks = (K + blockSize - 1) / blockSize;
      auto at = [&](int64_t k, int64_t n) {
        return p.transB ? (*w)[n * K + k] : (*w)[k * N + n];
      };
      std::vector<uint8_t> codes(N * K), zeros(N * blocks);
      std::vector<float> scales(N * blocks);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t b = 0; b < blocks; ++b) {
          int64_t k0 = b * blockSize, k1 = std::min(K, k0 + blockSize);
          float lo = 0.0f, hi = 0.0f;
          for (int64_t k = k0; k < k1; ++k) {
            lo = std::min(lo, at(k, n));
            hi = std::max(hi, at(k, n));
          }
          float scale = hi > lo ? (hi - lo) / top : 1.0f;
          float zero = std::clamp(std::nearbyint(-lo / scale), 0.0f, top);
          scales[n * blocks + b] = scale;
          zeros[n * blocks + b] = static_cast<uint8_t>(zero);
          for (int64_t k = k0; k < k1; ++k)
            codes[n * K + k] = static_cast<uint8_t>(
                std::clamp(std::nearbyint(at(k, n) / scale) + zero, 0.0f, top));
        }
      OpBuilder b(op);
      Location loc = op->getLoc();
      auto u8 = b.getIntegerType(8, /*isSigned=*/false);
      auto bytes = [&](const std::vector<uint8_t> &v, ArrayRef<int64_t> shape) {
        auto t = RankedTensorType::get(shape, u8);
        return ConstantOp::create(
            b, loc, DenseElementsAttr::getFromRawBuffer(
                        t, ArrayRef<char>(reinterpret_cast<const char *>(v.data()), v.size())));
      };
      Value codeV = bytes(codes, {N, K}), zeroV = bytes(zeros, {N, blocks});
      Value scaleV = makeF32Constant(b, loc, RankedTensorType::get({N, blocks}, b.getF32Type()),
                                     scales, "weight_scales");
      Value y = MatMulNBitsOp::create(b, loc, p.lhs, codeV, scaleV, zeroV,
                                      b.getI64IntegerAttr(bits), b.getI64IntegerAttr(blockSize));
      if (p.bias)
        y = AddOp::create(b, loc, y, p.bias);
      op->getResult(0).replaceAllUsesWith(y);
      op->erase();
    }
  }
};

} // namespace
} // namespace kiln
