//===- FoldBatchNorm.cpp - batch norm into a convolution or a multiply-add ===//
#include "passes/ConstantData.h"
#include "passes/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cmath>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_FOLDBATCHNORMPASS
#include "passes/Passes.h.inc"

namespace {

/// The name of the resource blob behind a constant, for naming the folded one.
std::string blobName(Value v, StringRef fallback) {
  if (auto c = v.getDefiningOp<ConstantOp>())
    if (auto res = llvm::dyn_cast<DenseResourceElementsAttr>(c.getValue()))
      return res.getRawHandle().getKey().str();
  return fallback.str();
}

/// A batch norm's constant parameters, C of each.
struct BatchNormConstants {
  std::vector<float> scale, shift, mean, var;
  float eps;
  /// Channel c's factor scale / sqrt(var + eps), in double precision as a
  /// float reference would compute it.
  double factor(int64_t c) const {
    return scale[c] / std::sqrt(static_cast<double>(var[c]) + eps);
  }
};

/// `bn`'s parameters when all four are constants of C values.
std::optional<BatchNormConstants> constantsOf(BatchNormOp bn, int64_t C) {
  auto scale = getFloatConstant(bn.getScale()), shift = getFloatConstant(bn.getBias());
  auto mean = getFloatConstant(bn.getMean()), var = getFloatConstant(bn.getVariance());
  if (!scale || !shift || !mean || !var)
    return std::nullopt;
  for (const auto *v : {&*scale, &*shift, &*mean, &*var})
    if (static_cast<int64_t>(v->size()) != C)
      return std::nullopt;
  return BatchNormConstants{std::move(*scale), std::move(*shift), std::move(*mean),
                            std::move(*var), bn.getEpsilon().convertToFloat()};
}

/// Folds one conv + batch_norm pair; false when the pattern does not apply.
bool foldPair(BatchNormOp bn) {
  auto conv = bn.getInput().getDefiningOp<ConvOp>();
  if (!conv || !conv->hasOneUse())
    return false;
  auto wType = llvm::cast<RankedTensorType>(conv.getWeight().getType());
  int64_t O = wType.getDimSize(0), per = wType.getNumElements() / O;
  auto w = getFloatConstant(conv.getWeight());
  auto k = constantsOf(bn, O);
  if (!w || !k)
    return false;
  std::optional<std::vector<float>> bias;
  if (conv.getBias() && !(bias = getFloatConstant(conv.getBias())))
    return false;
  std::vector<float> newBias(O);
  for (int64_t o = 0; o < O; ++o) {
    double a = k->factor(o);
    for (int64_t i = 0; i < per; ++i)
      (*w)[o * per + i] = static_cast<float>((*w)[o * per + i] * a);
    double b0 = bias ? (*bias)[o] : 0.0;
    newBias[o] = static_cast<float>((b0 - k->mean[o]) * a + k->shift[o]);
  }
  OpBuilder b(conv);
  std::string base = blobName(conv.getWeight(), "conv_weight");
  auto nw = makeFloatConstant(b, conv.getLoc(), wType, *w, base + ".bn");
  auto nb = makeFloatConstant(b, conv.getLoc(),
                              RankedTensorType::get({O}, wType.getElementType()),
                              newBias, base + ".bn_bias");
  // Keep both locations: the folded op stands for both ONNX nodes.
  Location loc = FusedLoc::get(conv.getContext(), {conv.getLoc(), bn.getLoc()});
  auto folded = ConvOp::create(b, loc, conv.getType(), conv.getInput(), nw, nb,
                               conv.getStridesAttr(), conv.getPadsAttr(),
                               conv.getDilationsAttr(), conv.getGroupAttr());
  bn.getResult().replaceAllUsesWith(folded.getResult());
  bn.erase();
  conv.erase();
  return true;
}

/// A batch norm with constant parameters that no convolution absorbs (a
/// pre-activation DenseNet's, one after a pool or a concat) becomes the
/// per-channel multiply-add `x * a + b'`, with `a` and `b'` as above and
/// shaped [C, 1, ...] to broadcast over dimension 1 (f32 models). Unlike
/// kiln.batch_norm, which names dimension 1, elementwise ops do not care
/// about the layout: kiln-select-layout keeps them inside NHWC regions, and
/// the fusion pass joins them to the ops around them like any other.
bool toMultiplyAdd(BatchNormOp bn) {
  auto type = llvm::dyn_cast<RankedTensorType>(bn.getInput().getType());
  // f32 only: f16 or bf16 constants would round `b'`, where `mean * a` can
  // cancel most of `shift`, more than batch_norm's own arithmetic does.
  if (!type || type.getRank() < 2 || !type.getElementType().isF32() ||
      ShapedType::isDynamic(type.getDimSize(1)))
    return false;
  int64_t C = type.getDimSize(1);
  auto k = constantsOf(bn, C);
  if (!k)
    return false;
  std::vector<float> a(C), b(C);
  for (int64_t c = 0; c < C; ++c) {
    double f = k->factor(c);
    a[c] = static_cast<float>(f);
    b[c] = static_cast<float>(k->shift[c] - k->mean[c] * f);
  }
  SmallVector<int64_t> shape(type.getRank() - 1, 1);
  shape[0] = C;
  auto paramType = RankedTensorType::get(shape, type.getElementType());
  OpBuilder builder(bn);
  std::string base = blobName(bn.getScale(), "batch_norm");
  auto ca = makeFloatConstant(builder, bn.getLoc(), paramType, a, base + ".bn_scale");
  auto cb = makeFloatConstant(builder, bn.getLoc(), paramType, b, base + ".bn_shift");
  Value y = MulOp::create(builder, bn.getLoc(), bn.getInput(), ca.getResult());
  y = AddOp::create(builder, bn.getLoc(), y, cb.getResult());
  bn.getResult().replaceAllUsesWith(y);
  bn.erase();
  return true;
}

struct FoldBatchNormPass : impl::FoldBatchNormPassBase<FoldBatchNormPass> {
  void runOnOperation() override {
    SmallVector<BatchNormOp> bns;
    getOperation().walk([&](BatchNormOp bn) { bns.push_back(bn); });
    for (BatchNormOp bn : bns)
      if (!foldPair(bn))
        toMultiplyAdd(bn);
    // Constants the folds left unused.
    getOperation().walk([](ConstantOp c) {
      if (c->use_empty())
        c.erase();
    });
  }
};

} // namespace
} // namespace kiln
