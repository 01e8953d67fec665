//===- ConvertReduce.cpp - ReduceSum/Mean/Max/Min, LayerNormalization ------===//
#include "frontends/onnx/CompositeBuilder.h"
#include "frontends/onnx/DataDependentSizes.h"
#include "frontends/onnx/ImporterImpl.h"
#include "frontends/onnx/NodeContext.h"

#include <algorithm>
#include <type_traits>

using namespace mlir;
namespace kiln::onnx_import {

/// The reduced axes (sorted, non-negative): from the `axes` attribute before
/// `inputFromOpset`, from the optional second input after. No axes reduce
/// everything, or nothing (nullopt: the identity) with noop_with_empty_axes.
FailureOr<std::optional<std::vector<int64_t>>> reductionAxes(NodeContext &ctx,
                                                            int64_t inputFromOpset) {
  int64_t rank = ctx.inputType(0).getRank();
  std::vector<int64_t> axes;
  if (ctx.opset < inputFromOpset) {
    axes = ctx.attrInts("axes").value_or(std::vector<int64_t>{});
  } else if (ctx.hasInput(1)) {
    const HostTensor *h = ctx.hostInput(1);
    if (!h && ctx.inputType(1).getNumElements() != 0)
      return ctx.error("axes must be known at compile time");
    for (double v : h ? h->values : std::vector<double>{})
      axes.push_back(hostInt(v));
  }
  if (axes.empty()) {
    if (ctx.attrInt("noop_with_empty_axes", 0))
      return std::optional<std::vector<int64_t>>();
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  for (int64_t &a : axes) {
    auto n = normalizeAxis(ctx, a, rank);
    if (failed(n))
      return failure();
    a = *n;
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return ctx.error("axes repeat a dimension");
  return std::optional<std::vector<int64_t>>(axes);
}

bool runTimeAxes(NodeContext &ctx, int64_t inputFromOpset) {
  return ctx.opset >= inputFromOpset && ctx.hasInput(1) && !ctx.hostInput(1) &&
         ctx.inputType(1).getNumElements() != 0;
}

namespace {

template <typename OpTy>
LogicalResult convertReduce(NodeContext &ctx, int64_t inputFromOpset) {
  if (runTimeAxes(ctx, inputFromOpset)) {
    // Axes known only at run time: each axis reduced where they select it.
    Builder g{ctx};
    Value x = ctx.input(0);
    Type et = ctx.inputType(0).getElementType();
    bool viaF64 = et.isInteger();
    if (viaF64 && (!llvm::is_one_of<OpTy, kiln::ReduceMaxOp, kiln::ReduceMinOp>::value ||
                   et.getIntOrFloatBitWidth() > 32))
      return ctx.error("reduces integer tensors of at most 32 bits by max or min only");
    if (viaF64)
      x = g.cast(x, ctx.builder.getF64Type());
    auto y = reduceOverRunTimeAxes(
        ctx, x, [&](Value v, int64_t d) { return g.reduce<OpTy>(v, {d}, true); },
        [&](Value v) { return viaF64 ? g.cast(v, et) : v; });
    if (failed(y))
      return failure();
    ctx.setOutput(0, *y);
    return success();
  }
  auto axes = reductionAxes(ctx, inputFromOpset);
  if (failed(axes))
    return failure();
  if (!*axes) {
    ctx.setOutput(0, ctx.input(0));
    return success();
  }
  // A small constant (shape arithmetic) reduces here; one computed from a
  // dynamic size is rebuilt at run time where it is read as data
  // (RuntimeSizes.cpp).
  const HostTensor *h = ctx.hostInput(0);
  if (h && !h->values.empty() && h->values.size() <= 4096) {
    using R = HostReduction;
    R how = std::is_same_v<OpTy, kiln::ReduceSumOp>    ? R::Sum
            : std::is_same_v<OpTy, kiln::ReduceMeanOp> ? R::Mean
            : std::is_same_v<OpTy, kiln::ReduceMaxOp>  ? R::Max
            : std::is_same_v<OpTy, kiln::ReduceMinOp>  ? R::Min
                                                       : R::Prod;
    ctx.setHostOutput(0, hostReduce(*h, **axes, ctx.attrInt("keepdims", 1) != 0, how));
    return success();
  }
  OpBuilder &b = ctx.builder;
  Value x = ctx.input(0);
  Type et = ctx.inputType(0).getElementType();
  if (et.isInteger()) {
    // Integer and bool maxima and minima through f64, which holds every
    // value of 32 bits or fewer exactly (bool: any / all).
    constexpr bool isMaxMin = llvm::is_one_of<OpTy, kiln::ReduceMaxOp, kiln::ReduceMinOp>::value;
    auto in = ctx.inputType(0);
    constexpr bool isMean = std::is_same_v<OpTy, kiln::ReduceMeanOp>;
    bool shortAxes = llvm::all_of(**axes, [&](int64_t d) { return in.getDimSize(d) <= 64; });
    if (!isMean && (!isMaxMin || et.getIntOrFloatBitWidth() > 32) && shortAxes &&
        in.getNumElements() > 0) {
      // Sizes computed in the graph (min(k, count), the product of a
      // shape) exactly: the elementwise max, min, sum or product of the
      // slices along each axis.
      Builder g{ctx};
      Value y = x;
      SmallVector<int64_t> shape(in.getShape());
      for (int64_t d : **axes) {
        SmallVector<int64_t> off(shape.size(), 0), one(shape.size(), 1), sizes = shape;
        sizes[d] = 1;
        Value acc;
        for (int64_t i = 0; i < shape[d]; ++i) {
          off[d] = i;
          Value part = g.slice(y, off, sizes, one);
          if (!acc)
            acc = part;
          else if constexpr (std::is_same_v<OpTy, kiln::ReduceMaxOp>)
            acc = g.bin<kiln::MaxOp>(acc, part);
          else if constexpr (std::is_same_v<OpTy, kiln::ReduceMinOp>)
            acc = g.bin<kiln::MinOp>(acc, part);
          else if constexpr (std::is_same_v<OpTy, kiln::ReduceSumOp>)
            acc = g.add(acc, part);
          else
            acc = g.mul(acc, part);
        }
        y = acc;
        shape[d] = 1;
      }
      if (ctx.attrInt("keepdims", 1) == 0) {
        SmallVector<int64_t> out;
        for (int64_t d = 0; d < in.getRank(); ++d)
          if (!llvm::is_contained(**axes, d))
            out.push_back(shape[d]);
        y = g.reshape(y, out);
      }
      return g.result(y);
    }
    if (!isMaxMin || et.getIntOrFloatBitWidth() > 32)
      return ctx.error("reduces integer tensors of at most 32 bits by max or min only (and "
                       "any integers by sum, product, max or min over axes of at most 64)");
    auto xf = ctx.createTyped<kiln::CastOp>(
        RankedTensorType::get(ctx.inputType(0).getShape(), b.getF64Type()), x);
    if (failed(xf))
      return failure();
    auto r = ctx.create<OpTy>(*xf, b.getDenseI64ArrayAttr(**axes),
                              b.getBoolAttr(ctx.attrInt("keepdims", 1) != 0));
    if (failed(r))
      return failure();
    auto rt = llvm::cast<RankedTensorType>(r->getType());
    return ctx.setResult(ctx.createTyped<kiln::CastOp>(rt.clone(et), *r));
  }
  return ctx.setResult(ctx.create<OpTy>(x, b.getDenseI64ArrayAttr(**axes),
                                        b.getBoolAttr(ctx.attrInt("keepdims", 1) != 0)));
}

/// Mean and InvStdDev, the optional outputs 1 and 2, from reductions.
LogicalResult layerNormStatistics(NodeContext &ctx, int64_t axis, float eps) {
  auto in = ctx.inputType(0);
  OpBuilder &b = ctx.builder;
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < in.getRank(); ++d)
    axes.push_back(d);
  auto axesAttr = b.getDenseI64ArrayAttr(axes);
  auto mean = ctx.create<kiln::ReduceMeanOp>(ctx.input(0), axesAttr, b.getBoolAttr(true));
  if (failed(mean))
    return failure();
  ctx.setOutput(1, *mean);
  if (ctx.node.output_size() < 3 || ctx.node.output(2).empty())
    return success();
  auto d = ctx.create<kiln::SubOp>(ctx.input(0), *mean);
  if (failed(d))
    return failure();
  auto sq = ctx.create<kiln::MulOp>(*d, *d);
  if (failed(sq))
    return failure();
  auto var = ctx.create<kiln::ReduceMeanOp>(*sq, axesAttr, b.getBoolAttr(true));
  if (failed(var))
    return failure();
  HostTensor e{b.getF32Type(), {}, {eps}, {}};
  auto plus = ctx.create<kiln::AddOp>(*var, Importer::materialize(b, e, "epsilon"));
  if (failed(plus))
    return failure();
  auto root = ctx.createTyped<kiln::SqrtOp>(plus->getType(), *plus);
  if (failed(root))
    return failure();
  auto inv = ctx.createTyped<kiln::ReciprocalOp>(root->getType(), *root);
  if (failed(inv))
    return failure();
  ctx.setOutput(2, *inv);
  return success();
}

LogicalResult convertLayerNorm(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  auto axis = normalizeAxis(ctx, ctx.attrInt("axis", -1), in.getRank());
  if (failed(axis))
    return failure();
  OpBuilder &b = ctx.builder;
  float eps = ctx.attrFloat("epsilon", 1e-5f);
  Value bias = ctx.hasInput(2) ? ctx.input(2) : Value();
  // A scale or bias carrying a dynamic dimension (normalizing over it):
  // reductions the symbol masks, then the affine part elementwise, in f32
  // for f16/bf16 (kiln.layer_norm takes static parameters).
  auto carries = [&](Value v) {
    return v && !ctx.imp.symbols.empty() && ctx.imp.symbols.carriesSymbol(v);
  };
  if (carries(ctx.input(1)) || carries(bias)) {
    Builder g{ctx};
    Type et = in.getElementType();
    Type ct = et.isF16() || et.isBF16() ? b.getF32Type() : et;
    SmallVector<int64_t> axes;
    for (int64_t d = *axis; d < in.getRank(); ++d)
      axes.push_back(d);
    Value x = g.cast(ctx.input(0), ct);
    Value mean = g.reduce<kiln::ReduceMeanOp>(x, axes, true);
    Value d = g.sub(x, mean);
    Value var = g.reduce<kiln::ReduceMeanOp>(g.mul(d, d), axes, true);
    Value y = g.div(d, g.un<kiln::SqrtOp>(g.add(var, g.scalar(var, eps))));
    y = g.mul(y, g.cast(ctx.input(1), ct));
    if (bias)
      y = g.add(y, g.cast(bias, ct));
    if (failed(g.result(g.cast(y, et))))
      return failure();
  } else if (failed(ctx.setResult(ctx.create<kiln::LayerNormOp>(
                 ctx.input(0), ctx.input(1), bias, b.getI64IntegerAttr(*axis),
                 b.getF32FloatAttr(eps))))) {
    return failure();
  }
  if (ctx.node.output_size() > 1 && !ctx.node.output(1).empty())
    return layerNormStatistics(ctx, *axis, eps);
  if (ctx.node.output_size() > 2 && !ctx.node.output(2).empty())
    return layerNormStatistics(ctx, *axis, eps);
  return success();
}

} // namespace

void registerReduceConverters(llvm::StringMap<Converter> &t) {
  t["ReduceSum"] = [](NodeContext &c) { return convertReduce<kiln::ReduceSumOp>(c, 13); };
  t["ReduceMean"] = [](NodeContext &c) { return convertReduce<kiln::ReduceMeanOp>(c, 18); };
  t["ReduceMax"] = [](NodeContext &c) { return convertReduce<kiln::ReduceMaxOp>(c, 18); };
  t["ReduceMin"] = [](NodeContext &c) { return convertReduce<kiln::ReduceMinOp>(c, 18); };
  t["ReduceProd"] = [](NodeContext &c) { return convertReduce<kiln::ReduceProdOp>(c, 18); };
  t["LayerNormalization"] = convertLayerNorm;
}

} // namespace kiln::onnx_import
