//===- ConvertNormalization.cpp - normalizations built from kiln ops ------===//
//
// InstanceNormalization, GroupNormalization, MeanVarianceNormalization,
// LpNormalization and RMSNormalization as reductions, broadcasts and
// elementwise ops (LayerNormalization and BatchNormalization have kiln ops
// of their own: ConvertNN.cpp).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/CompositeBuilder.h"
#include "frontends/onnx/HostEval.h"
#include "frontends/onnx/ImporterImpl.h"
#include "frontends/onnx/NodeContext.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
namespace kiln::onnx_import {
namespace {

/// (x - mean) / sqrt(var + eps) over `axes` (biased variance), kept dims.
Value normalize(Builder &g, Value x, ArrayRef<int64_t> axes, double eps) {
  Value mean = g.reduce<kiln::ReduceMeanOp>(x, axes, true);
  Value d = g.sub(x, mean);
  Value var = g.reduce<kiln::ReduceMeanOp>(g.mul(d, d), axes, true);
  return g.div(d, g.un<kiln::SqrtOp>(g.add(var, g.scalar(var, eps))));
}

LogicalResult convertInstanceNorm(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  auto in = ctx.inputType(0);
  if (in.getRank() < 3)
    return ctx.error("expects an input of rank 3 or more (N, C, spatial...)");
  std::vector<int64_t> axes;
  for (int64_t d = 2; d < in.getRank(); ++d)
    axes.push_back(d);
  for (size_t i : {1, 2})
    if (ctx.requireEqual(ctx.input(i), 0, ctx.input(0), 1))
      return failure(); // the import restarts with the symbol fixed
  Builder g{ctx};
  Value y = normalize(g, ctx.input(0), axes, ctx.attrFloat("epsilon", 1e-5f));
  SmallVector<int64_t> perChannel(in.getRank() - 1, 1);
  perChannel[0] = in.getDimSize(1);
  Value scale = g.reshape(ctx.input(1), perChannel), bias = g.reshape(ctx.input(2), perChannel);
  return g.result(g.add(g.mul(y, scale), bias));
}

/// GroupNormalization: each group of C / num_groups channels normalized
/// over its channels and spatial positions together, then scaled and
/// shifted per channel (opset 21) or per group (opset 18, where scale and
/// bias have num_groups entries). stash_type 1 (the default) computes in
/// f32 for f16/bf16 inputs.
LogicalResult convertGroupNorm(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  auto in = ctx.inputType(0);
  if (in.getRank() < 2)
    return ctx.error("expects an input of rank 2 or more (N, C, spatial...)");
  int64_t G = ctx.attrInt("num_groups", 0), C = in.getDimSize(1);
  if (G < 1 || C % G)
    return ctx.error("num_groups (" + Twine(G) + ") must divide the " + Twine(C) +
                     " channels");
  int64_t paramSize = ctx.opset < 21 ? G : C;
  for (size_t i : {1, 2}) {
    if (ctx.requireSize(ctx.input(i), 0, paramSize))
      return failure(); // the import restarts with the symbol fixed
    auto t = ctx.inputType(i);
    if (t.getRank() != 1 || t.getDimSize(0) != paramSize)
      return ctx.error(Twine(i == 1 ? "scale" : "bias") + " must have " + Twine(paramSize) +
                       " entries (one per " + (ctx.opset < 21 ? "group" : "channel") + ")");
  }
  Builder g{ctx};
  Type et = in.getElementType();
  bool stash = ctx.attrInt("stash_type", 1) == 1 && (et.isF16() || et.isBF16());
  Type ct = stash ? ctx.builder.getF32Type() : et;
  Value x = g.cast(ctx.input(0), ct);
  int64_t rest = C / G;
  for (int64_t d = 2; d < in.getRank(); ++d)
    rest *= in.getDimSize(d);
  Value y = normalize(g, g.reshape(x, {in.getDimSize(0), G, rest}), {2},
                      ctx.attrFloat("epsilon", 1e-5f));
  y = g.reshape(y, in.getShape());
  SmallVector<int64_t> perChannel(in.getRank() - 1, 1);
  perChannel[0] = C;
  auto channelwise = [&](Value p) {
    p = g.cast(p, ct);
    if (paramSize == G && G != C) // per group: each entry C / G times
      p = g.reshape(g.expand(g.reshape(p, {G, 1}), {G, C / G}), {C});
    return g.reshape(p, perChannel);
  };
  y = g.add(g.mul(y, channelwise(ctx.input(1))), channelwise(ctx.input(2)));
  return g.result(g.cast(y, et));
}

LogicalResult convertMeanVarianceNorm(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  auto in = ctx.inputType(0);
  auto axes = ctx.attrInts("axes").value_or(std::vector<int64_t>{0, 2, 3});
  for (int64_t &a : axes) {
    auto n = normalizeAxis(ctx, a, in.getRank());
    if (failed(n))
      return failure();
    a = *n;
  }
  std::sort(axes.begin(), axes.end());
  Builder g{ctx};
  return g.result(normalize(g, ctx.input(0), axes, 1e-9));
}

LogicalResult convertLpNorm(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  auto in = ctx.inputType(0);
  auto axis = normalizeAxis(ctx, ctx.attrInt("axis", -1), in.getRank());
  if (failed(axis))
    return failure();
  int64_t p = ctx.attrInt("p", 2);
  if (p != 1 && p != 2)
    return ctx.error("p must be 1 or 2");
  Builder g{ctx};
  Value x = ctx.input(0);
  Value norm = p == 1 ? g.reduce<kiln::ReduceSumOp>(g.un<kiln::AbsOp>(x), {*axis}, true)
                      : g.un<kiln::SqrtOp>(g.reduce<kiln::ReduceSumOp>(g.mul(x, x), {*axis}, true));
  return g.result(g.div(x, norm));
}

/// RMSNormalization (opset 23): x / sqrt(mean(x^2) + eps) * scale over the
/// axes from `axis` on.
LogicalResult convertRmsNorm(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  auto in = ctx.inputType(0);
  auto axis = normalizeAxis(ctx, ctx.attrInt("axis", -1), in.getRank());
  if (failed(axis))
    return failure();
  std::vector<int64_t> axes;
  for (int64_t d = *axis; d < in.getRank(); ++d)
    axes.push_back(d);
  Builder g{ctx};
  Type et = in.getElementType();
  // stash_type: the precision of the mean (f32 unless it says f64).
  Type ft = ctx.attrInt("stash_type", 1) == 11 ? ctx.builder.getF64Type()
                                                : ctx.builder.getF32Type();
  Value x = g.cast(ctx.input(0), ft);
  Value ms = g.reduce<kiln::ReduceMeanOp>(g.mul(x, x), axes, true);
  Value inv = g.un<kiln::SqrtOp>(g.add(ms, g.scalar(ms, ctx.attrFloat("epsilon", 1e-5f))));
  Value y = g.cast(g.div(x, inv), et);
  return g.result(g.mul(y, ctx.input(1)));
}

} // namespace

void registerNormalizationConverters(llvm::StringMap<Converter> &t) {
  t["InstanceNormalization"] = convertInstanceNorm;
  t["MeanVarianceNormalization"] = convertMeanVarianceNorm;
  t["GroupNormalization"] = convertGroupNorm;
  t["LpNormalization"] = convertLpNorm;
  t["RMSNormalization"] = convertRmsNorm;
}

} // namespace kiln::onnx_import
