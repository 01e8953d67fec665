//===- ConvertComposite.cpp - tensor ops built from other kiln ops --------===//
//
// Sum and Mean of several inputs, the reductions ONNX composes (ReduceL1,
// ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp), Expand, Split,
// Trilu, Tile, DepthToSpace/SpaceToDepth and GlobalMaxPool as slices,
// expands, transposes, masks and reductions. The other composites live by
// family: ConvertActivations, ConvertNormalization, ConvertGatherScatter,
// ConvertGenerators.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/CompositeBuilder.h"
#include "frontends/onnx/DataDependentSizes.h"
#include "frontends/onnx/HostEval.h"
#include "frontends/onnx/ImporterImpl.h"
#include "frontends/onnx/NodeContext.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
namespace kiln::onnx_import {
namespace {

/// Sum and Mean of one or more inputs (numpy broadcasting).
LogicalResult convertSum(NodeContext &ctx, bool mean) {
  if (ctx.numInputs() == 0)
    return ctx.error("expects at least one input");
  Builder g{ctx};
  Value acc = ctx.input(0);
  for (size_t i = 1; i < ctx.numInputs(); ++i)
    acc = g.add(acc, ctx.input(i));
  if (mean && ctx.numInputs() > 1)
    acc = g.div(acc, g.scalar(acc, static_cast<double>(ctx.numInputs())));
  return g.result(acc);
}

enum class Reduction { L1, L2, SumSquare, LogSum, LogSumExp };

LogicalResult convertReduction(NodeContext &ctx, Reduction kind) {
  if (runTimeAxes(ctx, 18)) {
    // Axes known only at run time: the per-element function, then each
    // axis reduced where they select it (log-sum-exp axis by axis, each
    // from its maximum), then the final function.
    Builder g{ctx};
    Value x = ctx.input(0);
    auto reduceAxis = [&](Value v, int64_t d) -> Value {
      if (kind != Reduction::LogSumExp)
        return g.reduce<kiln::ReduceSumOp>(v, {d}, true);
      Value m = g.reduce<kiln::ReduceMaxOp>(v, {d}, true);
      Value safe = g.where(g.cmp("eq", m, g.scalar(m, -INFINITY)), g.scalar(m, 0.0), m);
      Value s = g.reduce<kiln::ReduceSumOp>(g.un<kiln::ExpOp>(g.sub(v, safe)), {d}, true);
      return g.add(g.un<kiln::LogOp>(s), safe);
    };
    Value pre = kind == Reduction::L1 ? g.un<kiln::AbsOp>(x)
                : kind == Reduction::L2 || kind == Reduction::SumSquare ? g.mul(x, x)
                                                                        : x;
    auto y = reduceOverRunTimeAxes(ctx, pre, reduceAxis, [&](Value v) {
      if (kind == Reduction::L2)
        return g.un<kiln::SqrtOp>(v);
      if (kind == Reduction::LogSum)
        return g.un<kiln::LogOp>(v);
      return v;
    });
    if (failed(y))
      return failure();
    ctx.setOutput(0, *y);
    return success();
  }
  auto axes = reductionAxes(ctx, 18);
  if (failed(axes))
    return failure();
  Builder g{ctx};
  Value x = ctx.input(0);
  bool keep = ctx.attrInt("keepdims", 1) != 0;
  if (!*axes) {
    // No reduction: the per-element function alone.
    switch (kind) {
    case Reduction::L1: return g.result(g.un<kiln::AbsOp>(x));
    case Reduction::L2: return g.result(g.un<kiln::AbsOp>(x));
    case Reduction::SumSquare: return g.result(g.mul(x, x));
    case Reduction::LogSum: return g.result(g.un<kiln::LogOp>(x));
    case Reduction::LogSumExp: return g.result(x);
    }
  }
  ArrayRef<int64_t> ax = **axes;
  switch (kind) {
  case Reduction::L1:
    return g.result(g.reduce<kiln::ReduceSumOp>(g.un<kiln::AbsOp>(x), ax, keep));
  case Reduction::L2:
    return g.result(g.un<kiln::SqrtOp>(g.reduce<kiln::ReduceSumOp>(g.mul(x, x), ax, keep)));
  case Reduction::SumSquare:
    return g.result(g.reduce<kiln::ReduceSumOp>(g.mul(x, x), ax, keep));
  case Reduction::LogSum:
    return g.result(g.un<kiln::LogOp>(g.reduce<kiln::ReduceSumOp>(x, ax, keep)));
  case Reduction::LogSumExp: {
    // m + log(sum(exp(x - m))), m the maximum (exp never overflows); a
    // row of -inf stays -inf through the guard m' = (m == -inf ? 0 : m).
    Value m = g.reduce<kiln::ReduceMaxOp>(x, ax, true);
    Value safe = g.where(g.cmp("eq", m, g.scalar(m, -INFINITY)), g.scalar(m, 0.0), m);
    Value s = g.reduce<kiln::ReduceSumOp>(g.un<kiln::ExpOp>(g.sub(x, safe)), ax, true);
    Value r = g.add(g.un<kiln::LogOp>(s), safe);
    if (!keep && g.ok({r})) {
      SmallVector<int64_t> shape;
      auto in = ctx.inputType(0);
      for (int64_t d = 0; d < in.getRank(); ++d)
        if (!llvm::is_contained(ax, d))
          shape.push_back(in.getDimSize(d));
      r = g.reshape(r, shape);
    }
    return g.result(r);
  }
  }
  return failure();
}

/// Expand: numpy (bidirectional) broadcasting to a compile-time shape.
LogicalResult convertExpand(NodeContext &ctx) {
  const HostTensor *shape = ctx.hostInput(1);
  if (!shape)
    return expandAtRunTime(ctx); // (data-dependent sizes)
  HostTensor target;
  target.elementType = ctx.inputType(0).getElementType();
  for (double d : shape->values)
    target.shape.push_back(hostInt(d));
  if (const HostTensor *x = ctx.hostInput(0)) {
    // (the target's values only matter to the host broadcast)
    if (failed(ctx.checkConstantSize(target.numElements(), "the output")))
      return failure();
    target.values.assign(target.numElements(), 0.0);
    auto r = hostBinary(*x, target, +[](double a, double) { return a; });
    if (!r)
      return ctx.error("the input does not broadcast to the shape");
    r->elementType = x->elementType;
    ctx.setHostOutput(0, std::move(*r));
    return success();
  }
  auto in = ctx.inputType(0);
  // The result shape: both shapes broadcast together.
  std::vector<int64_t> a(in.getShape().begin(), in.getShape().end()), b = target.shape;
  size_t rank = std::max(a.size(), b.size());
  a.insert(a.begin(), rank - a.size(), 1);
  b.insert(b.begin(), rank - b.size(), 1);
  SmallVector<int64_t> out;
  for (size_t i = 0; i < rank; ++i) {
    if (a[i] != b[i] && a[i] != 1 && b[i] != 1)
      return ctx.error("the input does not broadcast to the shape");
    out.push_back(a[i] == 1 ? b[i] : a[i]);
  }
  auto type = RankedTensorType::get(out, in.getElementType());
  if (type == in) {
    ctx.setOutput(0, ctx.input(0));
    return success();
  }
  return ctx.setResult(ctx.createTyped<kiln::ExpandOp>(type, ctx.input(0)));
}

/// Split into the node's outputs along an axis: sizes from the `split`
/// attribute (before opset 13) or input, equal parts otherwise (opset 18's
/// num_outputs: ceil-sized parts, the last smaller).
LogicalResult convertSplit(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  auto axis = normalizeAxis(ctx, ctx.attrInt("axis", 0), in.getRank());
  if (failed(axis))
    return failure();
  int64_t dim = in.getDimSize(*axis), outs = ctx.node.output_size();
  std::vector<int64_t> sizes;
  if (ctx.opset < 13) {
    sizes = ctx.attrInts("split").value_or(std::vector<int64_t>{});
  } else if (ctx.hasInput(1)) {
    const HostTensor *h = ctx.hostInput(1);
    if (!h)
      return splitAtRunTime(ctx, *axis); // (data-dependent sizes)
    for (double v : h->values)
      sizes.push_back(hostInt(v));
  }
  SymbolTracker &st = ctx.imp.symbols;
  int32_t sym = ctx.hostInput(0) ? -1 : st.of(ctx.input(0))[*axis];
  if (sizes.empty() && sym >= 0 && outs > 0) {
    // Equal parts of a symbolic axis: ceil(s / n) each (the run's size s
    // must divide unless num_outputs allows a smaller last part), the last
    // what is left; each repacked from its run-time start.
    using SymSize = SymbolTracker::SymSize;
    int64_t each = (dim + outs - 1) / outs;
    int32_t part = st.derive(KILN_SYM_CEIL_DIV_CONST, sym, outs);
    for (int64_t i = 0; i < outs; ++i) {
      SymSize from = i ? SymSize{st.product(part, i), 0} : SymSize{-1, 0};
      SymSize size = i + 1 < outs ? SymSize{part, 0}
                                  : from.sym < 0 ? SymSize{sym, 0}
                                                 : SymSize{st.derive(KILN_SYM_SUB, sym, from.sym), 0};
      ctx.setOutput(i, ctx.imp.repackAxis(ctx.builder, ctx.loc, ctx.input(0), *axis,
                                          {Importer::RepackPiece{size, from, 1}}, each));
    }
    return success();
  }
  if (sizes.empty()) {
    int64_t parts = ctx.attr("num_outputs") ? ctx.attrInt("num_outputs", outs) : outs;
    if (parts <= 0)
      return ctx.error("splits into no parts");
    int64_t each = ctx.attr("num_outputs") ? (dim + parts - 1) / parts : dim / parts;
    if (!ctx.attr("num_outputs") && dim % parts != 0)
      return ctx.error("dimension " + Twine(dim) + " does not split into " + Twine(parts) +
                       " equal parts");
    for (int64_t i = 0, left = dim; i < parts; ++i, left -= each)
      sizes.push_back(std::min(each, left));
  }
  if (static_cast<int64_t>(sizes.size()) != outs)
    return ctx.error("has " + Twine(outs) + " outputs but " + Twine(sizes.size()) + " split sizes");
  int64_t total = 0;
  for (int64_t v : sizes)
    total += v;
  if (total != dim && total >= 0 && ctx.requireSize(ctx.input(0), *axis, total))
    return failure(); // the model's sizes fix a symbolic axis: the import restarts
  if (total != dim || llvm::any_of(sizes, [](int64_t v) { return v < 0; }))
    return ctx.error("split sizes do not add up to the dimension " + Twine(dim));
  Builder g{ctx};
  int64_t rank = in.getRank(), at = 0;
  for (int64_t i = 0; i < outs; ++i) {
    SmallVector<int64_t> off(rank, 0), sz(in.getShape()), st(rank, 1);
    off[*axis] = sizes[i] ? at : 0;
    sz[*axis] = sizes[i];
    at += sizes[i];
    Value part = g.slice(ctx.input(0), off, sz, st);
    if (!g.ok({part}))
      return failure();
    ctx.setOutput(i, part);
  }
  return success();
}

/// Trilu: the input where a compile-time triangle mask holds, 0 elsewhere.
LogicalResult convertTrilu(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  if (in.getRank() < 2)
    return ctx.error("expects a tensor of rank 2 or more");
  int64_t k = 0;
  // k known only at run time (a graph input, or computed from sizes): the
  // mask compares each element's diagonal j - i with it.
  Value runK;
  if (ctx.hasInput(1)) {
    const HostTensor *h = ctx.hostInput(1);
    if (h && h->numElements() != 1)
      return ctx.error("k must be a scalar");
    if (h && h->fromSymbolicShape) {
      runK = ctx.imp.sizesAtRunTime(ctx.builder, ctx.node.input(1), 0);
      if (!runK)
        return ctx.error("k is computed from a dynamic dimension's size in a way Kiln cannot "
                         "compute at run time; give the inputs static sizes with --shape");
    } else if (h) {
      k = hostInt(h->values[0]);
    } else {
      runK = ctx.input(1);
      if (failed(requireStatic(ctx, runK, "k")))
        return failure();
      if (ctx.inputType(1).getNumElements() != 1)
        return ctx.error("k must be a scalar");
    }
  }
  bool upper = ctx.attrInt("upper", 1) != 0;
  int64_t n = in.getDimSize(in.getRank() - 2), m = in.getDimSize(in.getRank() - 1);
  Builder g{ctx};
  Value x = ctx.input(0);
  // Element (i, j) of the mask depends only on i and j, so along a dynamic
  // row or column axis it is exact at the bound: it carries the symbol
  // (stated before any op reads it).
  AxisSymbols syms = ctx.imp.symbols.of(x);
  SmallVector<int64_t> pairs;
  for (int64_t d = 0; d < 2; ++d)
    if (int32_t s = syms[in.getRank() - 2 + d]; s >= 0)
      pairs.append({d, s});
  Value c;
  if (runK) {
    Value diagonal = Importer::indexConstant(ctx.builder, {n, m},
                                             [m](int64_t e) { return e % m - e / m; });
    if (!pairs.empty())
      diagonal.getDefiningOp()->setAttr(kiln::attr::kAxisSymbol,
                                        ctx.builder.getDenseI64ArrayAttr(pairs));
    Value kk = g.reshape(g.cast(runK, ctx.builder.getIntegerType(64)), {});
    c = g.cmp(upper ? "ge" : "le", diagonal, kk);
    if (!g.ok({c}))
      return failure();
  } else {
    HostTensor mask;
    mask.elementType = ctx.builder.getI1Type();
    mask.shape = {n, m};
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j)
        mask.values.push_back(upper ? j - i >= k : j - i <= k);
    c = Importer::materialize(ctx.builder, mask, ctx.node.name() + ".mask");
    if (!pairs.empty())
      c.getDefiningOp()->setAttr(kiln::attr::kAxisSymbol, ctx.builder.getDenseI64ArrayAttr(pairs));
  }
  return g.result(g.where(c, x, g.scalar(x, 0.0)));
}

/// Tile: the input viewed with a unit dimension before each dimension,
/// expanded to the repeats, flattened back.
LogicalResult convertTile(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  const HostTensor *reps = ctx.hostInput(1);
  if (!reps)
    return tileAtRunTime(ctx); // (data-dependent sizes)
  if (reps->numElements() != in.getRank())
    return ctx.error("repeats has " + Twine(reps->numElements()) + " values for a rank-" +
                     Twine(in.getRank()) + " input");
  // A dynamic axis repeated r times holds r copies of the run's real
  // positions one after another: those axes are repacked from r pieces
  // (size s*r), the static ones tiled by a reshape and an expand.
  AxisSymbols syms = ctx.hostInput(0) ? AxisSymbols(in.getRank(), -1)
                                      : ctx.imp.symbols.of(ctx.input(0));
  SmallVector<int64_t> split, expanded, full, out, symbolic;
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t r = hostInt(reps->values[d]);
    if (r < 0)
      return ctx.error("repeats must not be negative");
    full.append({r, in.getDimSize(d)});
    if (syms[d] >= 0 && r > 1) {
      symbolic.push_back(d);
      r = 1;
    }
    split.append({1, in.getDimSize(d)});
    expanded.append({r, in.getDimSize(d)});
  }
  if (checkedElements(full) < 0)
    return ctx.error("the output would have more than 2^40 elements");
  for (int64_t d = 0; d < in.getRank(); ++d)
    out.push_back(expanded[2 * d] * in.getDimSize(d));
  Builder g{ctx};
  Value x = ctx.input(0);
  if (symbolic.empty() || llvm::any_of(llvm::seq<int64_t>(0, in.getRank()),
                                       [&](int64_t d) { return expanded[2 * d] != 1; }))
    x = g.reshape(g.expand(g.reshape(x, split), expanded), out);
  if (!g.ok({x}))
    return failure();
  for (int64_t d : symbolic) {
    int64_t r = full[2 * d];
    out[d] *= r;
    x = ctx.imp.repackAxis(ctx.builder, ctx.loc, x, d,
                           {Importer::RepackPiece{{syms[d], 0}, {-1, 0}, 1}}, out[d], r);
  }
  return g.result(x);
}

/// DepthToSpace and SpaceToDepth: a reshape, a transpose and a reshape.
LogicalResult convertDepthSpace(NodeContext &ctx, bool toSpace) {
  auto in = ctx.inputType(0);
  if (in.getRank() != 4)
    return ctx.error("expects a rank-4 (NCHW) input");
  int64_t b = ctx.attrInt("blocksize", 0);
  int64_t N = in.getDimSize(0), C = in.getDimSize(1), H = in.getDimSize(2), W = in.getDimSize(3);
  if (b <= 0)
    return ctx.error("blocksize must be positive");
  Builder g{ctx};
  Value x = ctx.input(0);
  if (toSpace) {
    if (C % (b * b))
      return ctx.error("channels are not a multiple of blocksize^2");
    bool crd = ctx.attrString("mode", "DCR") == "CRD";
    Value r = crd ? g.reshape(x, {N, C / (b * b), b, b, H, W})
                  : g.reshape(x, {N, b, b, C / (b * b), H, W});
    Value t = crd ? g.transpose(r, {0, 1, 4, 2, 5, 3}) : g.transpose(r, {0, 3, 4, 1, 5, 2});
    return g.result(g.reshape(t, {N, C / (b * b), H * b, W * b}));
  }
  if (H % b || W % b)
    return ctx.error("spatial dimensions are not multiples of blocksize");
  Value r = g.reshape(x, {N, C, H / b, b, W / b, b});
  Value t = g.transpose(r, {0, 3, 5, 1, 2, 4});
  return g.result(g.reshape(t, {N, C * b * b, H / b, W / b}));
}

LogicalResult convertGlobalMaxPool(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  std::vector<int64_t> axes;
  for (int64_t d = 2; d < in.getRank(); ++d)
    axes.push_back(d);
  Builder g{ctx};
  return g.result(g.reduce<kiln::ReduceMaxOp>(ctx.input(0), axes, true));
}

} // namespace

void registerCompositeConverters(llvm::StringMap<Converter> &t) {
  t["Split"] = convertSplit;
  t["Trilu"] = convertTrilu;
  t["Tile"] = convertTile;
  t["DepthToSpace"] = [](NodeContext &c) { return convertDepthSpace(c, true); };
  t["SpaceToDepth"] = [](NodeContext &c) { return convertDepthSpace(c, false); };
  t["GlobalMaxPool"] = convertGlobalMaxPool;
  t["Sum"] = [](NodeContext &c) { return convertSum(c, false); };
  t["Mean"] = [](NodeContext &c) { return convertSum(c, true); };
  t["ReduceL1"] = [](NodeContext &c) { return convertReduction(c, Reduction::L1); };
  t["ReduceL2"] = [](NodeContext &c) { return convertReduction(c, Reduction::L2); };
  t["ReduceSumSquare"] = [](NodeContext &c) {
    return convertReduction(c, Reduction::SumSquare);
  };
  t["ReduceLogSum"] = [](NodeContext &c) { return convertReduction(c, Reduction::LogSum); };
  t["ReduceLogSumExp"] = [](NodeContext &c) {
    return convertReduction(c, Reduction::LogSumExp);
  };
  t["Expand"] = convertExpand;
}

} // namespace kiln::onnx_import
