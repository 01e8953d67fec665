//===- QuantizeInt8.cpp - post-training int8 quantization of products ------===//
//
// kiln-compile --precision=int8 quantizes the matrix products and
// convolutions of an f32 model the way onnxruntime's quantize_static writes
// a QDQ model: the activation (the product's lhs, the conv's input) as
// uint8 with a scale and zero point from its calibrated range, the weights
// as int8 per output column or channel (symmetric, a step of its largest
// magnitude / 127) -- depthwise convolutions' too, which then compute in
// f32 on the activation's bytes (conv_strategy::isDirect: no matrix
// product). One quantize-dequantize pair per activation, read by every op
// that read the activation (a residual sum too, as quantize_static's QDQ
// Add does), except the function's return: producers then write bytes
// and their readers read bytes. The
// driver measures each product's lhs range on the calibration inputs and
// states it on the op (kiln.int8_range = [min, max]); this pass writes the
// quantize-dequantize pairs and the rounded weights, and
// kiln-integer-contractions then computes the products on 8-bit integers
// (and the direct convs on the bytes), as it does for a QDQ model.
//
//===----------------------------------------------------------------------===//
#include "passes/ConstantData.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

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
    if (!in.getElementType().isF32() || !wt.getElementType().isF32() ||
        !c.getWeight().getDefiningOp<ConstantOp>())
      return std::nullopt;
    return Product{c.getInput(), c.getWeight(), true};
  }
  if (auto p = constantWeightProduct(op))
    return Product{p->lhs, p->weights, p->transB};
  return std::nullopt;
}

/// Rounds each output column's (channel's) weights to int8 steps of its
/// largest magnitude / 127, in place.
void roundWeights(const Product &p, std::vector<float> &w) {
  auto wt = typeOf(p.weights);
  int64_t rows = wt.getDimSize(0), cols = rows ? wt.getNumElements() / rows : 0;
  int64_t n = p.transB ? rows : cols, k = p.transB ? cols : rows;
  auto at = [&](int64_t kk, int64_t nn) -> float & {
    return p.transB ? w[nn * cols + kk] : w[kk * cols + nn];
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
}

Value scalar(OpBuilder &b, Location loc, float v, StringRef name) {
  return makeF32Constant(b, loc, RankedTensorType::get({}, b.getF32Type()), {v}, name);
}

/// The activation's quantize-dequantize pair (uint8 over [lo, hi], widened
/// to hold 0 so that zero is exact: padding and ReLU's zeros stay zeros),
/// as the ONNX importer writes QuantizeLinear and DequantizeLinear, placed
/// after x's definition: {the op reading x, the dequantized value}; none
/// for a range that is not finite.
struct Pair {
  Operation *reader = nullptr;
  Value dequantized;
};
Pair quantizeDequantize(Value x, float lo, float hi) {
  lo = std::min(lo, 0.0f), hi = std::max(hi, 0.0f);
  if (!std::isfinite(lo) || !std::isfinite(hi))
    return {};
  float scale = hi > lo ? (hi - lo) / 255.0f : 1.0f;
  float zero = std::clamp(std::nearbyint(-lo / scale), 0.0f, 255.0f);
  OpBuilder b(x.getContext());
  b.setInsertionPointAfterValue(x);
  Location loc = x.getLoc();
  auto xt = typeOf(x);
  Value scaleV = scalar(b, loc, scale, "int8_act_scale");
  Value zeroV = scalar(b, loc, zero, "int8_act_zero");
  auto div = DivOp::create(b, loc, x, scaleV);
  Value v = RoundOp::create(b, loc, div);
  v = AddOp::create(b, loc, v, zeroV);
  v = MaxOp::create(b, loc, v, scalar(b, loc, 0.0f, "int8_act_min"));
  v = MinOp::create(b, loc, v, scalar(b, loc, 255.0f, "int8_act_max"));
  Value q = CastOp::create(b, loc, xt.clone(b.getIntegerType(8, /*isSigned=*/false)), v);
  v = CastOp::create(b, loc, xt, q);
  v = SubOp::create(b, loc, v, zeroV);
  return {div, MulOp::create(b, loc, v, scaleV)};
}

struct QuantizeInt8Pass : impl::QuantizeInt8PassBase<QuantizeInt8Pass> {
  void runOnOperation() override {
    // The calibrated products by activation (several products reading one
    // activation share its pair; their ranges agree, the union is kept).
    struct Activation {
      float lo = 0.0f, hi = 0.0f;
      SmallVector<std::pair<Operation *, Product>> products;
    };
    llvm::MapVector<Value, Activation> activations;
    getOperation().walk([&](Operation *op) {
      auto range = op->getAttrOfType<DenseF32ArrayAttr>(kiln::attr::kInt8Range);
      if (!range)
        return;
      op->removeAttr(kiln::attr::kInt8Range);
      auto p = productOf(op);
      if (!p || range.size() != 2 || !getF32Constant(p->weights))
        return;
      auto [it, fresh] = activations.try_emplace(p->lhs);
      Activation &a = it->second;
      a.lo = fresh ? range[0] : std::min(a.lo, range[0]);
      a.hi = fresh ? range[1] : std::max(a.hi, range[1]);
      a.products.push_back({op, *p});
    });
    for (auto &[x, a] : activations) {
      Pair pair = quantizeDequantize(x, a.lo, a.hi);
      if (!pair.reader)
        continue;
      x.replaceUsesWithIf(pair.dequantized, [&](OpOperand &use) {
        return use.getOwner() != pair.reader && !isa<func::ReturnOp>(use.getOwner());
      });
      for (auto &[op, p] : a.products) {
        auto w = getF32Constant(p.weights);
        if (!w)
          continue;
        roundWeights(p, *w);
        OpBuilder b(op);
        Value rounded = makeF32Constant(b, op->getLoc(), typeOf(p.weights), *w, "int8_weights_f32");
        op->replaceUsesOfWith(p.weights, rounded);
      }
    }
  }
};

} // namespace

bool isInt8Candidate(Operation *op) { return productOf(op).has_value(); }

} // namespace kiln
