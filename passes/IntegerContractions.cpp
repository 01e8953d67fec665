//===- IntegerContractions.cpp - QDQ matrix products on 8-bit integers -----===//
//
// A quantized model in QDQ form (onnxruntime's quantize_static, PyTorch's
// PT2E export) computes every matrix product in f32 on dequantized
// operands: the activation is dequantize(q) = (cast(q) - zero) * scale of
// an 8-bit q, the weights dequantize(constant int8) -- folded to f32 by the
// canonicalizer. Such a product is an exact 8-bit integer product, scaled:
//
//   A . W = sA * (q - zA) . (sW[n] * qW)  =  (sA * sW[n]) * ((q - zA) . qW)
//
// so it becomes kiln.matmul_integer on q and qW, its int32 result times one
// scale per column (and plus Gemm's bias). qW and sW are recovered from the
// f32 weights: a column is quantized per column (or with the whole matrix)
// when every value is an integer multiple in [-128, 127] of its largest
// magnitude / 127 (or / 128) -- checked for every value, so weights that
// are not 8-bit stay f32 products.
//
//===----------------------------------------------------------------------===//
#include "passes/ConstantData.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cmath>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_INTEGERCONTRACTIONSPASS
#include "passes/Passes.h.inc"

namespace {

RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// The one value of a constant scalar (any shape of one element).
std::optional<float> scalarOf(Value v) {
  if (!v || typeOf(v).getNumElements() != 1)
    return std::nullopt;
  auto vals = getNumberConstant(v);
  if (!vals || vals->size() != 1)
    return std::nullopt;
  return vals->front();
}

/// A dequantized activation: (cast(q) - zero) * scale, q 8-bit.
struct Dequantized {
  Value q;
  float zero = 0, scale = 0;
};

std::optional<Dequantized> dequantized(Value a) {
  auto mul = a.getDefiningOp<MulOp>();
  if (!mul)
    return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    auto scale = scalarOf(mul->getOperand(1 - side));
    if (!scale || !(*scale > 0) || !std::isfinite(*scale))
      continue;
    Value x = mul->getOperand(side);
    Dequantized d;
    d.scale = *scale;
    if (auto sub = x.getDefiningOp<SubOp>()) {
      auto zero = scalarOf(sub.getRhs());
      if (!zero)
        continue;
      d.zero = *zero;
      x = sub.getLhs();
    }
    auto cast = x.getDefiningOp<CastOp>();
    if (!cast || typeOf(x).getShape() != typeOf(a).getShape() ||
        !typeOf(cast.getInput()).getElementType().isInteger(8) ||
        !typeOf(x).getElementType().isF32())
      continue;
    d.q = cast.getInput();
    bool isUnsigned = typeOf(d.q).getElementType().isUnsignedInteger();
    float lo = isUnsigned ? 0.0f : -128.0f, hi = isUnsigned ? 255.0f : 127.0f;
    if (d.zero != std::nearbyint(d.zero) || d.zero < lo || d.zero > hi)
      continue;
    return d;
  }
  return std::nullopt;
}

/// Weights [K, N] (row-major f32) as int8 times one scale per column.
struct Quantized {
  std::vector<int8_t> q; // [K, N]
  std::vector<float> scale; // [N]
};

/// Whether every value of column n is an integer multiple of s in
/// [-128, 127] (to 1e-3 of a step); fills q's column.
bool multiples(const std::vector<float> &w, int64_t K, int64_t N, int64_t n, float s,
               std::vector<int8_t> &q) {
  for (int64_t k = 0; k < K; ++k) {
    float v = w[k * N + n];
    if (s == 0.0f) {
      if (v != 0.0f)
        return false;
      q[k * N + n] = 0;
      continue;
    }
    double r = static_cast<double>(v) / s, ri = std::nearbyint(r);
    if (std::fabs(r - ri) > 1e-3 || ri < -128.0 || ri > 127.0)
      return false;
    q[k * N + n] = static_cast<int8_t>(ri);
  }
  return true;
}

std::optional<Quantized> quantizedWeights(const std::vector<float> &w, int64_t K, int64_t N) {
  Quantized out;
  out.q.assign(K * N, 0);
  out.scale.assign(N, 0.0f);
  float all = 0.0f;
  for (float v : w) {
    if (!std::isfinite(v))
      return std::nullopt;
    all = std::max(all, std::fabs(v));
  }
  for (int64_t n = 0; n < N; ++n) {
    float m = 0.0f;
    for (int64_t k = 0; k < K; ++k)
      m = std::max(m, std::fabs(w[k * N + n]));
    // The column's own step (per-channel quantization), else the whole
    // matrix's (per-tensor): its largest magnitude is 127 steps, or 128
    // (a minimum of -128 with a symmetric range's zero point).
    bool ok = false;
    for (float s : {m / 127.0f, m / 128.0f, all / 127.0f, all / 128.0f})
      if (multiples(w, K, N, n, s, out.q)) {
        out.scale[n] = s == 0.0f ? 1.0f : s;
        ok = true;
        break;
      }
    if (!ok)
      return std::nullopt;
  }
  return out;
}

struct IntegerContractionsPass : impl::IntegerContractionsPassBase<IntegerContractionsPass> {
  /// Rewrites lhs . rhs (+ bias) of `op` when lhs is dequantized 8-bit
  /// and rhs ([K, N], or [N, K] when `transB`) 8-bit weights.
  bool rewrite(Operation *op, Value lhs, Value rhs, bool transB, Value bias) {
    auto d = dequantized(lhs);
    auto rt = typeOf(rhs);
    if (!d || rt.getRank() != 2 || !rt.getElementType().isF32() ||
        !rhs.getDefiningOp<ConstantOp>())
      return false;
    auto w = getF32Constant(rhs);
    if (!w)
      return false;
    int64_t K = rt.getDimSize(transB ? 1 : 0), N = rt.getDimSize(transB ? 0 : 1);
    if (transB) {
      std::vector<float> t(K * N);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k)
          t[k * N + n] = (*w)[n * K + k];
      w = std::move(t);
    }
    auto qw = quantizedWeights(*w, K, N);
    if (!qw)
      return false;

    OpBuilder b(op);
    Location loc = op->getLoc();
    Type qt = typeOf(d->q).getElementType(), i8 = b.getIntegerType(8);
    auto wType = RankedTensorType::get({K, N}, i8);
    auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
        ArrayRef<char>(reinterpret_cast<const char *>(qw->q.data()), qw->q.size()), 1);
    Value wq = ConstantOp::create(
        b, loc, DenseResourceElementsAttr::get(wType, "int8_weights", std::move(blob)));
    auto intScalar = [&](Type t, int64_t v) -> Value {
      auto st = RankedTensorType::get({}, t);
      return ConstantOp::create(b, loc, DenseElementsAttr::get(st, b.getIntegerAttr(t, v)));
    };
    Value acc = MatMulIntegerOp::create(b, loc, d->q, wq,
                                        intScalar(qt, static_cast<int64_t>(d->zero)),
                                        intScalar(i8, 0));
    auto accType = typeOf(acc);
    Value y = CastOp::create(b, loc, accType.clone(b.getF32Type()), acc);
    std::vector<float> colScale(N);
    for (int64_t n = 0; n < N; ++n)
      colScale[n] = d->scale * qw->scale[n];
    Value s = makeF32Constant(b, loc, RankedTensorType::get({N}, b.getF32Type()), colScale,
                              "int8_scale");
    y = MulOp::create(b, loc, y, s);
    if (bias)
      y = AddOp::create(b, loc, y, bias);
    if (y.getType() != op->getResult(0).getType())
      return false; // (a bias that broadcasts wider: leave the op)
    op->getResult(0).replaceAllUsesWith(y);
    op->erase();
    return true;
  }

  void runOnOperation() override {
    SmallVector<Operation *> products;
    getOperation().walk([&](Operation *op) {
      if (isa<GemmOp, MatMulOp>(op))
        products.push_back(op);
    });
    for (Operation *op : products) {
      if (auto g = dyn_cast<GemmOp>(op)) {
        if (g.getTransA() || g.getAlpha().convertToFloat() != 1.0f ||
            (g.getC() && g.getBeta().convertToFloat() != 1.0f))
          continue;
        rewrite(op, g.getA(), g.getB(), g.getTransB(), g.getC());
      } else if (auto m = dyn_cast<MatMulOp>(op)) {
        if (typeOf(m.getLhs()).getRank() >= 2)
          rewrite(op, m.getLhs(), m.getRhs(), false, Value());
      }
    }
  }
};

} // namespace
} // namespace kiln
