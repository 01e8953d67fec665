//===- ConvertActivations.cpp - activations built from kiln ops -----------===//
//
// Activations ONNX defines as compositions (most have an ONNX function
// body): Softplus, Softsign, Mish, Elu, Selu, Celu, ThresholdedRelu, Shrink,
// PRelu, Swish; LogSoftmax, Hardmax; Dropout at inference; Clip with run-time
// bounds. Each becomes the few kiln ops it is made of, which kiln-fuse then
// joins into one kernel where they are elementwise.
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

/// log(1 + exp(x)) as max(x, 0) + log1p(exp(-|x|)): no overflow.
Value softplus(Builder &g, Value x) {
  Value e = g.un<kiln::ExpOp>(g.un<kiln::NegOp>(g.un<kiln::AbsOp>(x)));
  return g.add(g.bin<kiln::MaxOp>(x, g.scalar(x, 0.0)), g.un<kiln::Log1pOp>(e));
}

LogicalResult convertSoftplus(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  Builder g{ctx};
  return g.result(softplus(g, ctx.input(0)));
}

LogicalResult convertMish(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  Builder g{ctx};
  Value x = ctx.input(0);
  return g.result(g.mul(x, g.un<kiln::TanhOp>(softplus(g, x))));
}

LogicalResult convertSoftsign(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  Builder g{ctx};
  Value x = ctx.input(0);
  return g.result(g.div(x, g.add(g.scalar(x, 1.0), g.un<kiln::AbsOp>(x))));
}

LogicalResult convertElu(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  Builder g{ctx};
  Value x = ctx.input(0);
  double alpha = ctx.attrFloat("alpha", 1.0f);
  Value neg = g.mul(g.scalar(x, alpha), g.sub(g.un<kiln::ExpOp>(x), g.scalar(x, 1.0)));
  return g.result(g.where(g.cmp("lt", x, g.scalar(x, 0.0)), neg, x));
}

LogicalResult convertSelu(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  Builder g{ctx};
  Value x = ctx.input(0);
  double alpha = ctx.attrFloat("alpha", 1.67326319217681884765625f);
  double gamma = ctx.attrFloat("gamma", 1.05070102214813232421875f);
  Value neg = g.sub(g.mul(g.scalar(x, alpha), g.un<kiln::ExpOp>(x)), g.scalar(x, alpha));
  Value y = g.where(g.cmp("le", x, g.scalar(x, 0.0)), neg, x);
  return g.result(g.mul(g.scalar(x, gamma), y));
}

LogicalResult convertCelu(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  Builder g{ctx};
  Value x = ctx.input(0);
  double alpha = ctx.attrFloat("alpha", 1.0f);
  Value e = g.sub(g.un<kiln::ExpOp>(g.div(x, g.scalar(x, alpha))), g.scalar(x, 1.0));
  Value neg = g.bin<kiln::MinOp>(g.scalar(x, 0.0), g.mul(g.scalar(x, alpha), e));
  return g.result(g.add(g.bin<kiln::MaxOp>(g.scalar(x, 0.0), x), neg));
}

LogicalResult convertThresholdedRelu(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  Builder g{ctx};
  Value x = ctx.input(0);
  double alpha = ctx.attrFloat("alpha", 1.0f);
  return g.result(g.where(g.cmp("gt", x, g.scalar(x, alpha)), x, g.scalar(x, 0.0)));
}

LogicalResult convertShrink(NodeContext &ctx) {
  Builder g{ctx};
  Value x = ctx.input(0);
  double bias = ctx.attrFloat("bias", 0.0f), lambd = ctx.attrFloat("lambd", 0.5f);
  Value hi = g.where(g.cmp("gt", x, g.scalar(x, lambd)), g.sub(x, g.scalar(x, bias)),
                     g.scalar(x, 0.0));
  return g.result(
      g.where(g.cmp("lt", x, g.scalar(x, -lambd)), g.add(x, g.scalar(x, bias)), hi));
}

LogicalResult convertPRelu(NodeContext &ctx) {
  Builder g{ctx};
  Value x = ctx.input(0), slope = ctx.input(1);
  // PRelu-6 applies a 1-D slope of size C per channel (axis 1); from opset 7
  // the slope broadcasts unidirectionally like any operand.
  auto xs = ctx.inputType(0), ss = ctx.inputType(1);
  if (ctx.opset < 7 && ss.getRank() == 1 && xs.getRank() > 2 &&
      ss.getDimSize(0) == xs.getDimSize(1) && ss.getDimSize(0) != 1) {
    SmallVector<int64_t> perChannel(xs.getRank() - 1, 1);
    perChannel[0] = ss.getDimSize(0);
    slope = g.reshape(slope, perChannel);
  }
  return g.result(g.where(g.cmp("lt", x, g.scalar(x, 0.0)), g.mul(slope, x), x));
}

/// The input of a softmax-family op (LogSoftmax, Hardmax) and the axis it
/// works along: before opset 13 the input coerced to 2-D at `axis` (rows x
/// the flattened rest, axis 1), from opset 13 the input itself.
FailureOr<std::pair<Value, int64_t>> softmaxFamilyInput(NodeContext &ctx, Builder &g) {
  auto in = ctx.inputType(0);
  int64_t rank = in.getRank();
  auto axis = normalizeAxis(ctx, ctx.attrInt("axis", ctx.opset < 13 ? 1 : -1), rank);
  if (failed(axis))
    return failure();
  if (ctx.opset >= 13 || *axis == rank - 1)
    return std::make_pair(ctx.input(0), *axis);
  int64_t rows = 1, cols = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < *axis ? rows : cols) *= in.getDimSize(i);
  Value x = g.reshape(ctx.input(0), {rows, cols});
  if (!g.ok({x}))
    return failure();
  return std::make_pair(x, int64_t(1));
}

/// LogSoftmax: x - m - log(sum(exp(x - m))) along the axis (before opset 13:
/// over the input coerced to 2-D at the axis).
LogicalResult convertLogSoftmax(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  auto in = ctx.inputType(0);
  Builder g{ctx};
  auto xa = softmaxFamilyInput(ctx, g);
  if (failed(xa))
    return failure();
  Value x = xa->first;
  std::vector<int64_t> axes{xa->second};
  Value m = g.reduce<kiln::ReduceMaxOp>(x, axes, true);
  Value d = g.sub(x, m);
  Value s = g.reduce<kiln::ReduceSumOp>(g.un<kiln::ExpOp>(d), axes, true);
  Value r = g.sub(d, g.un<kiln::LogOp>(s));
  if (g.ok({r}) && llvm::cast<RankedTensorType>(r.getType()).getShape() != in.getShape())
    r = g.reshape(r, in.getShape());
  return g.result(r);
}

/// Dropout at inference: the identity, and an all-true mask. Training mode
/// drops at random (out of scope) unless the ratio is 0.
LogicalResult convertDropout(NodeContext &ctx) {
  if (ctx.hasInput(2)) {
    const HostTensor *t = ctx.hostInput(2);
    if (!t)
      return ctx.error("training_mode must be known at compile time");
    bool training = !t->values.empty() && t->values[0] != 0;
    double ratio = 0.5;
    if (ctx.hasInput(1)) {
      const HostTensor *r = ctx.hostInput(1);
      if (!r)
        return ctx.error("ratio must be known at compile time in training mode");
      ratio = r->values.empty() ? 0.5 : r->values[0];
    }
    if (training && ratio != 0)
      return ctx.error("training-mode Dropout drops at random; Kiln compiles inference "
                       "graphs (set training_mode to false)");
  }
  if (ctx.opset < 7 && ctx.attrInt("is_test", 0) == 0 && ctx.attrFloat("ratio", 0.5f) != 0)
    return ctx.error("Dropout with is_test = 0 drops at random; Kiln compiles inference "
                     "graphs");
  if (const HostTensor *h = ctx.hostInput(0))
    ctx.setHostOutput(0, *h);
  else
    ctx.setOutput(0, ctx.input(0));
  if (ctx.node.output_size() > 1 && !ctx.node.output(1).empty()) {
    HostTensor mask;
    mask.elementType = ctx.builder.getI1Type();
    auto shape = ctx.inputType(0).getShape();
    mask.shape.assign(shape.begin(), shape.end());
    mask.values.assign(mask.numElements(), 1.0);
    ctx.setHostOutput(1, std::move(mask));
  }
  return success();
}

/// Swish (opset 24): x * sigmoid(alpha * x).
LogicalResult convertSwish(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  Builder g{ctx};
  Value x = ctx.input(0);
  double alpha = ctx.attrFloat("alpha", 1.0f);
  Value ax = alpha == 1.0 ? x : g.mul(x, g.scalar(x, alpha));
  return g.result(g.mul(x, g.un<kiln::SigmoidOp>(ax)));
}

/// Hardmax: 1 at the first maximum along the axis, 0 elsewhere (before
/// opset 13: over the input coerced to 2-D at the axis).
LogicalResult convertHardmax(NodeContext &ctx) {
  if (failed(requireFloat(ctx)))
    return failure();
  auto in = ctx.inputType(0);
  Builder g{ctx};
  auto xa = softmaxFamilyInput(ctx, g);
  if (failed(xa))
    return failure();
  auto [x, ax] = *xa;
  int64_t r = static_cast<int64_t>(g.shape(x).size());
  OpBuilder &b = ctx.builder;
  Value arg = g.take(ctx.create<kiln::ArgReduceOp>(x, b.getI64IntegerAttr(ax),
                                                   b.getBoolAttr(true), b.getBoolAttr(true),
                                                   b.getBoolAttr(false)));
  // (Along a dynamic axis the iota is positional: it carries the symbol, and
  // the first-index argmax is exact over the padding, which repeats the last
  // real position.)
  Value iota = iotaAlong(g, g.shape(x)[ax], ax, r);
  if (int32_t s = g.ok({x}) ? ctx.imp.symbols.of(x)[ax] : -1; s >= 0)
    iota.getDefiningOp()->setAttr("kiln.axis_symbol", b.getDenseI64ArrayAttr({ax, s}));
  Value hit = g.cmp("eq", arg, iota);
  Value y = g.where(hit, g.scalar(x, 1.0), g.scalar(x, 0.0));
  if (g.ok({y}) && g.shape(y) != in.getShape())
    y = g.reshape(y, in.getShape());
  return g.result(y);
}

} // namespace

/// Clip with run-time bounds or on integers: max then min with the bounds
/// as (broadcast scalar) tensors. (Float clips with compile-time bounds are
/// kiln.clip, see ConvertElementwise.cpp.)
LogicalResult convertClipGeneral(NodeContext &ctx) {
  Builder g{ctx};
  Value x = ctx.input(0);
  for (int i = 1; i <= 2; ++i) {
    if (!ctx.hasInput(i))
      continue;
    if (ctx.inputType(i).getNumElements() != 1)
      return ctx.error(Twine(i == 1 ? "min" : "max") + " must be a scalar");
    x = i == 1 ? g.bin<kiln::MaxOp>(x, ctx.input(i)) : g.bin<kiln::MinOp>(x, ctx.input(i));
  }
  return g.result(x);
}

void registerActivationConverters(llvm::StringMap<Converter> &t) {
  t["Swish"] = convertSwish;
  t["Softplus"] = convertSoftplus;
  t["Softsign"] = convertSoftsign;
  t["Mish"] = convertMish;
  t["Elu"] = convertElu;
  t["Selu"] = convertSelu;
  t["Celu"] = convertCelu;
  t["ThresholdedRelu"] = convertThresholdedRelu;
  t["Shrink"] = convertShrink;
  t["PRelu"] = convertPRelu;
  t["LogSoftmax"] = convertLogSoftmax;
  t["Dropout"] = convertDropout;
  t["Hardmax"] = convertHardmax;
}

} // namespace kiln::onnx_import
