//===- ConvertLoss.cpp - NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss -===//
//
// The two loss ops of the default domain, as their ONNX function bodies
// define them, built from kiln ops: the picked log-probability is a
// gather_elements along the class axis, class weights a gather, ignored
// targets masked by a compare + where, and the reduction a sum (divided by
// the sum of the weights that applied, for "mean").
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/CompositeBuilder.h"

using namespace mlir;
namespace kiln::onnx_import {
namespace {

/// -input[n, target[n, d...], d...] * weight[target] with the reduction.
/// `input` is (N, C, d1..dk) log-probabilities, `target` (N, d1..dk).
Value nll(Builder &g, Value input, Value target, Value weight, StringRef reduction,
          std::optional<int64_t> ignore) {
  NodeContext &ctx = g.ctx;
  if (!g.ok({input, target}))
    return {};
  auto tShape = g.shape(target);
  Value mask;  // true where the target is ignored
  Value safe = target;
  if (ignore) {
    mask = g.cmp("eq", target, g.scalar(target, static_cast<double>(*ignore)));
    // An ignored target may be any value: pick class 0 there (masked below).
    safe = g.where(mask, g.scalar(target, 0.0), target);
  }
  SmallVector<int64_t> picked(tShape.begin(), tShape.end());
  picked.insert(picked.begin() + 1, 1);
  Value idx = g.reshape(safe, picked);
  Value x = g.ok({idx}) ? g.take(userIndices(ctx.create<kiln::GatherElementsOp>(
                              input, idx, ctx.builder.getI64IntegerAttr(1))))
                        : Value();
  Value loss = g.un<kiln::NegOp>(g.reshape(x, tShape));
  Value w;  // the weight of each target (null: 1)
  if (weight) {
    w = g.ok({safe}) ? g.take(userIndices(ctx.create<kiln::GatherOp>(
                           weight, safe, ctx.builder.getI64IntegerAttr(0))))
                     : Value();
    loss = g.mul(loss, w);
  }
  if (mask) {
    Value zero = g.scalar(loss, 0.0);
    loss = g.where(mask, zero, loss);
    w = g.where(mask, zero, w ? w : g.scalar(loss, 1.0));
  }
  if (!g.ok({loss}))
    return {};
  if (reduction == "none")
    return loss;
  SmallVector<int64_t> all;
  for (int64_t d = 0; d < static_cast<int64_t>(tShape.size()); ++d)
    all.push_back(d);
  Value sum = g.reduce<kiln::ReduceSumOp>(loss, all, false);
  if (reduction == "sum")
    return sum;
  if (!w)
    return g.reduce<kiln::ReduceMeanOp>(loss, all, false);
  return g.div(sum, g.reduce<kiln::ReduceSumOp>(w, all, false));
}

struct LossArgs {
  std::string reduction;
  std::optional<int64_t> ignore;
};

FailureOr<LossArgs> lossArgs(NodeContext &ctx) {
  LossArgs a;
  a.reduction = ctx.attrString("reduction", "mean");
  if (a.reduction != "none" && a.reduction != "sum" && a.reduction != "mean")
    return ctx.error("reduction must be none, sum or mean, not '" + a.reduction + "'");
  if (ctx.attr("ignore_index"))
    a.ignore = ctx.attrInt("ignore_index", 0);
  auto in = ctx.inputType(0), t = ctx.inputType(1);
  if (!llvm::isa<FloatType>(in.getElementType()))
    return ctx.error("expects floating-point scores");
  if (!t.getElementType().isSignlessInteger())
    return ctx.error("expects int32 or int64 targets");
  if (in.getRank() < 2 || t.getRank() != in.getRank() - 1 || t.getDimSize(0) != in.getDimSize(0))
    return ctx.error("expects scores (N, C, d1..dk) and targets (N, d1..dk)");
  for (int64_t d = 1; d < t.getRank(); ++d)
    if (t.getDimSize(d) != in.getDimSize(d + 1))
      return ctx.error("target dimension " + Twine(d) + " differs from the scores'");
  if (ctx.hasInput(2) && ctx.inputType(2).getRank() == 1 && !ctx.hostInput(2) &&
      !ctx.hostInput(0) && ctx.requireEqual(ctx.input(2), 0, ctx.input(0), 1))
    return failure(); // the import restarts with the symbol fixed
  if (ctx.hasInput(2) && (ctx.inputType(2).getRank() != 1 ||
                          ctx.inputType(2).getDimSize(0) != in.getDimSize(1)))
    return ctx.error("expects a weight of shape (C)");
  return a;
}

LogicalResult convertNllLoss(NodeContext &ctx) {
  auto a = lossArgs(ctx);
  if (failed(a))
    return failure();
  Builder g{ctx};
  Value w = ctx.hasInput(2) ? ctx.input(2) : Value();
  return g.result(nll(g, ctx.input(0), ctx.input(1), w, a->reduction, a->ignore));
}

LogicalResult convertSoftmaxCrossEntropy(NodeContext &ctx) {
  auto a = lossArgs(ctx);
  if (failed(a))
    return failure();
  Builder g{ctx};
  Value x = ctx.input(0);
  // log_softmax over the class axis, max-shifted.
  Value d = g.sub(x, g.reduce<kiln::ReduceMaxOp>(x, {1}, true));
  Value logp = g.sub(d, g.un<kiln::LogOp>(
                            g.reduce<kiln::ReduceSumOp>(g.un<kiln::ExpOp>(d), {1}, true)));
  Value w = ctx.hasInput(2) ? ctx.input(2) : Value();
  Value loss = nll(g, logp, ctx.input(1), w, a->reduction, a->ignore);
  if (!g.ok({loss}))
    return failure();
  ctx.setOutput(0, loss);
  if (ctx.node.output_size() > 1 && !ctx.node.output(1).empty())
    ctx.setOutput(1, logp);
  return success();
}

} // namespace

void registerLossConverters(llvm::StringMap<Converter> &t) {
  t["NegativeLogLikelihoodLoss"] = convertNllLoss;
  t["SoftmaxCrossEntropyLoss"] = convertSoftmaxCrossEntropy;
}

} // namespace kiln::onnx_import
