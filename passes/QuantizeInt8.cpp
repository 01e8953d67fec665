//===- QuantizeInt8.cpp - post-training int8 quantization of products ------===//
//
// kiln-compile --precision=int8 quantizes the matrix products and
// convolutions of an f32 model the way onnxruntime's quantize_static writes
// a QDQ model: the activation (the product's lhs, the conv's input) as
// uint8 with a scale and zero point from its calibrated range, the weights
// as int8 per output column or channel (symmetric, a step of its largest
// magnitude / 127). Depthwise and other direct convolutions
// (conv_strategy::isDirect) stay f32: they have no 8-bit kernel. The driver
// measures each product's lhs range on the calibration inputs and states it
// on the op (kiln.int8_range = [min, max]); this pass writes the
// quantize-dequantize pair and the rounded weights, and
// kiln-integer-contractions then computes the product on 8-bit integers, as
// it does for a QDQ model.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/ConvStrategy.h"
#include "passes/ConstantData.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_QUANTIZEINT8PASS
#include "passes/Passes.h.inc"

namespace {

RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// The product's (lhs, weights, whether the weights are [N, K]); a conv's
/// OIHW weights are [N, K] too (N = O, K = Cg * KH * KW).
struct Product {
  Value lhs, weights;
  bool transB = false;
};

std::optional<Product> productOf(Operation *op) {
  if (auto c = dyn_cast<ConvOp>(op)) {
    auto in = typeOf(c.getInput()), wt = typeOf(c.getWeight());
    auto w = wt.getShape();
    if (conv_strategy::isDirect(w[1] * w[2] * w[3], w[0] / static_cast<int64_t>(c.getGroup())) ||
        !in.getElementType().isF32() || !wt.getElementType().isF32() ||
        !c.getWeight().getDefiningOp<ConstantOp>())
      return std::nullopt;
    return Product{c.getInput(), c.getWeight(), true};
  }
  if (auto p = constantWeightProduct(op))
    return Product{p->lhs, p->weights, p->transB};
  return std::nullopt;
}

Value scalar(OpBuilder &b, Location loc, float v, StringRef name) {
  return makeF32Constant(b, loc, RankedTensorType::get({}, b.getF32Type()), {v}, name);
}

struct QuantizeInt8Pass : impl::QuantizeInt8PassBase<QuantizeInt8Pass> {
  void runOnOperation() override {
    SmallVector<Operation *> marked;
    getOperation().walk([&](Operation *op) {
      if (op->hasAttr(kiln::attr::kInt8Range))
        marked.push_back(op);
    });
    for (Operation *op : marked) {
      auto range = op->getAttrOfType<DenseF32ArrayAttr>(kiln::attr::kInt8Range);
      op->removeAttr(kiln::attr::kInt8Range);
      auto p = productOf(op);
      auto w = p ? getF32Constant(p->weights) : std::nullopt;
      if (!p || !w || !range || range.size() != 2)
        continue;
      // uint8 over the range, widened to hold 0 (so that zero is exact:
      // padding and ReLU's zeros stay zeros).
      float lo = std::min(range[0], 0.0f), hi = std::max(range[1], 0.0f);
      if (!std::isfinite(lo) || !std::isfinite(hi))
        continue;
      float scale = hi > lo ? (hi - lo) / 255.0f : 1.0f;
      float zero = std::clamp(std::nearbyint(-lo / scale), 0.0f, 255.0f);

      OpBuilder b(op);
      Location loc = op->getLoc();
      auto lt = typeOf(p->lhs);
      // QuantizeLinear then DequantizeLinear, as the ONNX importer writes them.
      Value scaleV = scalar(b, loc, scale, "int8_act_scale");
      Value zeroV = scalar(b, loc, zero, "int8_act_zero");
      Value v = DivOp::create(b, loc, p->lhs, scaleV);
      v = RoundOp::create(b, loc, v);
      v = AddOp::create(b, loc, v, zeroV);
      v = MaxOp::create(b, loc, v, scalar(b, loc, 0.0f, "int8_act_min"));
      v = MinOp::create(b, loc, v, scalar(b, loc, 255.0f, "int8_act_max"));
      Value q = CastOp::create(b, loc, lt.clone(b.getIntegerType(8, /*isSigned=*/false)), v);
      v = CastOp::create(b, loc, lt, q);
      v = SubOp::create(b, loc, v, zeroV);
      v = MulOp::create(b, loc, v, scaleV);
      op->replaceUsesOfWith(p->lhs, v);

      // Weights: each output column's (channel's) values rounded to int8
      // steps of its largest magnitude / 127.
      auto wt = typeOf(p->weights);
      int64_t rows = wt.getDimSize(0), cols = rows ? wt.getNumElements() / rows : 0;
      int64_t n = p->transB ? rows : cols, k = p->transB ? cols : rows;
      auto at = [&](int64_t kk, int64_t nn) -> float & {
        return p->transB ? (*w)[nn * cols + kk] : (*w)[kk * cols + nn];
      };
      for (int64_t nn = 0; nn < n; ++nn) {
        float m = 0.0f;
        for (int64_t kk = 0; kk < k; ++kk)
          m = std::max(m, std::fabs(at(kk, nn)));
        if (!std::isfinite(m))
          continue; // (not 8-bit: kiln-integer-contractions leaves it f32)
        float step = m / 127.0f;
        for (int64_t kk = 0; kk < k; ++kk)
          at(kk, nn) = step > 0.0f ? std::nearbyint(at(kk, nn) / step) * step : 0.0f;
      }
      Value rounded = makeF32Constant(b, loc, wt, *w, "int8_weights_f32");
      op->replaceUsesOfWith(p->weights, rounded);
    }
  }
};

} // namespace

bool isInt8Candidate(Operation *op) { return productOf(op).has_value(); }

} // namespace kiln
