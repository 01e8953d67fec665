//===- FoldBatchNorm.cpp - batch norm into the preceding convolution -------===//
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

/// Folds one conv + batch_norm pair; false when the pattern does not apply.
bool foldPair(BatchNormOp bn) {
  auto conv = bn.getInput().getDefiningOp<ConvOp>();
  if (!conv || !conv->hasOneUse())
    return false;
  auto w = getFloatConstant(conv.getWeight());
  auto scale = getFloatConstant(bn.getScale()), shift = getFloatConstant(bn.getBias());
  auto mean = getFloatConstant(bn.getMean()), var = getFloatConstant(bn.getVariance());
  if (!w || !scale || !shift || !mean || !var)
    return false;
  std::optional<std::vector<float>> bias;
  if (conv.getBias() && !(bias = getFloatConstant(conv.getBias())))
    return false;
  auto wType = llvm::cast<RankedTensorType>(conv.getWeight().getType());
  int64_t O = wType.getDimSize(0), per = wType.getNumElements() / O;
  float eps = bn.getEpsilon().convertToFloat();
  std::vector<float> newBias(O);
  for (int64_t o = 0; o < O; ++o) {
    // Double precision for the folded factors, as a float reference would.
    double a = (*scale)[o] / std::sqrt(static_cast<double>((*var)[o]) + eps);
    for (int64_t i = 0; i < per; ++i)
      (*w)[o * per + i] = static_cast<float>((*w)[o * per + i] * a);
    double b0 = bias ? (*bias)[o] : 0.0;
    newBias[o] = static_cast<float>((b0 - (*mean)[o]) * a + (*shift)[o]);
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

struct FoldBatchNormPass : impl::FoldBatchNormPassBase<FoldBatchNormPass> {
  void runOnOperation() override {
    SmallVector<BatchNormOp> bns;
    getOperation().walk([&](BatchNormOp bn) { bns.push_back(bn); });
    for (BatchNormOp bn : bns)
      foldPair(bn);
    // Constants the folds left unused.
    getOperation().walk([](ConstantOp c) {
      if (c->use_empty())
        c.erase();
    });
  }
};

} // namespace
} // namespace kiln
