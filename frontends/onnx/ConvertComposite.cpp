//===- ConvertComposite.cpp - ops built from other kiln ops ----------------===//
//
// Activations, reductions and tensor generators that ONNX defines as
// compositions (most have an ONNX function body): each becomes the few kiln
// ops it is made of, which kiln-fuse then joins into one kernel where they
// are elementwise. Generators whose inputs are known at import time
// (ConstantOfShape, Range, Size) are evaluated here.
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

LogicalResult requireFloat(NodeContext &ctx) {
  if (!llvm::isa<FloatType>(ctx.inputType(0).getElementType()))
    return ctx.error("expects floating-point operands");
  return success();
}

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

LogicalResult convertSize(NodeContext &ctx) {
  HostTensor h;
  h.elementType = ctx.builder.getIntegerType(64);
  h.values = {static_cast<double>(ctx.inputType(0).getNumElements())};
  ctx.setHostOutput(0, std::move(h));
  return success();
}

LogicalResult convertConstantOfShape(NodeContext &ctx) {
  const HostTensor *shape = ctx.hostInput(0);
  if (!shape)
    return ctx.error("the shape must be known at compile time (a constant or shape "
                     "arithmetic on static shapes)");
  HostTensor h;
  h.elementType = ctx.builder.getF32Type();
  double value = 0;
  if (const auto *a = ctx.attr("value")) {
    auto t = ctx.imp.hostTensorFromProto(a->t(), "ConstantOfShape '" + ctx.node.name() + "'");
    if (failed(t))
      return failure();
    if (t->numElements() != 1)
      return ctx.error("value must hold exactly one element");
    h.elementType = t->elementType;
    value = t->values[0];
  }
  for (double d : shape->values) {
    if (d < 0)
      return ctx.error("the shape has a negative dimension");
    h.shape.push_back(hostInt(d));
  }
  if (!h.evaluable())
    return ctx.error("the output would have more than 2^27 elements");
  h.values.assign(h.numElements(), value);
  ctx.setHostOutput(0, std::move(h));
  return success();
}

LogicalResult convertRange(NodeContext &ctx) {
  const HostTensor *s = ctx.hostInput(0), *l = ctx.hostInput(1), *d = ctx.hostInput(2);
  if (!s || !l || !d)
    return ctx.error("start, limit and delta must be known at compile time (the output's "
                     "length depends on them)");
  if (s->numElements() != 1 || l->numElements() != 1 || d->numElements() != 1)
    return ctx.error("start, limit and delta must be scalars");
  double start = s->values[0], limit = l->values[0], delta = d->values[0];
  if (delta == 0)
    return ctx.error("delta must not be 0");
  double count = std::ceil((limit - start) / delta);
  if (std::isnan(count))
    return ctx.error("start, limit and delta give no length");
  count = std::max(count, 0.0);
  if (count > static_cast<double>(kMaxHostElements))
    return ctx.error("the range has more than 2^27 elements");
  HostTensor h;
  h.elementType = s->elementType;
  h.shape = {hostInt(count)};
  for (int64_t i = 0; i < h.shape[0]; ++i)
    h.values.push_back(start + static_cast<double>(i) * delta);
  ctx.setHostOutput(0, std::move(h));
  return success();
}

/// Compress: the slices of the input (flattened without an axis) where a
/// compile-time condition is true, as one gather (the output's length
/// depends on the condition's values; Kiln sizes tensors at compile time).
LogicalResult convertCompress(NodeContext &ctx) {
  const HostTensor *c = ctx.hostInput(1);
  if (!c || c->fromSymbolicShape)
    return ctx.error("the condition must be known at compile time (the output's length "
                     "depends on its values)");
  if (c->shape.size() != 1)
    return ctx.error("the condition must be 1-D");
  Builder g{ctx};
  Value x = ctx.input(0);
  auto xt = ctx.inputType(0);
  int64_t axis = 0;
  if (ctx.attr("axis")) {
    auto a = normalizeAxis(ctx, ctx.attrInt("axis", 0), xt.getRank());
    if (failed(a))
      return failure();
    axis = *a;
  } else {
    x = g.reshape(x, {xt.getNumElements()});
  }
  if (!g.ok({x}))
    return failure();
  int64_t n = g.shape(x)[axis];
  if (c->shape[0] > n)
    return ctx.error("the condition has " + Twine(c->shape[0]) + " entries; the axis has " +
                     Twine(n));
  auto syms = ctx.imp.symbols.of(x);
  if (axis < static_cast<int64_t>(syms.size()) && syms[axis] >= 0)
    return ctx.error("compresses along a dynamic dimension (give the inputs static sizes with "
                     "--shape)");
  HostTensor idx{ctx.builder.getIntegerType(64), {0}, {}, {}};
  for (int64_t i = 0; i < c->shape[0]; ++i)
    if (c->values[i] != 0)
      idx.values.push_back(static_cast<double>(i));
  idx.shape[0] = static_cast<int64_t>(idx.values.size());
  if (idx.values.empty())
    return ctx.error("the condition selects nothing (an empty result)");
  Value iv = Importer::materialize(ctx.builder, idx, ctx.node.name() + ".indices");
  return g.result(g.take(ctx.create<kiln::GatherOp>(x, iv, ctx.builder.getI64IntegerAttr(axis))));
}

/// NonZero of a compile-time tensor: the indices of its non-zero elements,
/// [rank, count], row-major order (a run-time input has a data-dependent
/// output size: refused).
LogicalResult convertNonZero(NodeContext &ctx) {
  const HostTensor *x = ctx.hostInput(0);
  if (!x || x->fromSymbolicShape)
    return ctx.error("the input must be known at compile time (the output's size depends "
                     "on its values; Kiln sizes tensors at compile time)");
  int64_t rank = x->shape.size();
  std::vector<std::vector<double>> coords(std::max<int64_t>(rank, 1));
  for (size_t i = 0; i < x->values.size(); ++i) {
    if (x->values[i] == 0)
      continue;
    int64_t rest = static_cast<int64_t>(i);
    for (int64_t d = rank - 1; d >= 0; --d) {
      coords[d].push_back(static_cast<double>(rest % x->shape[d]));
      rest /= x->shape[d];
    }
    if (rank == 0)
      coords[0].push_back(0.0);
  }
  HostTensor h{ctx.builder.getIntegerType(64),
               {std::max<int64_t>(rank, 1), static_cast<int64_t>(coords[0].size())}, {}, {}};
  for (auto &c : coords)
    h.values.insert(h.values.end(), c.begin(), c.end());
  if (h.shape[1] == 0)
    return ctx.error("the input has no non-zero element (an empty result)");
  ctx.setHostOutput(0, std::move(h));
  return success();
}

/// Unique of a compile-time tensor: the distinct elements (or slices along
/// `axis`), sorted or in order of first occurrence, with the first-occurrence
/// indices, the inverse indices and the counts.
LogicalResult convertUnique(NodeContext &ctx) {
  const HostTensor *x = ctx.hostInput(0);
  if (!x || x->fromSymbolicShape)
    return ctx.error("the input must be known at compile time (the output's size depends "
                     "on its values; Kiln sizes tensors at compile time)");
  bool sorted = ctx.attrInt("sorted", 1) != 0;
  std::vector<int64_t> shape = x->shape;
  int64_t axis = -1;
  if (ctx.attr("axis")) {
    auto a = normalizeAxis(ctx, ctx.attrInt("axis", 0), static_cast<int64_t>(shape.size()));
    if (failed(a))
      return failure();
    axis = *a;
  } else {
    shape = {static_cast<int64_t>(x->values.size())};
    axis = 0;
  }
  int64_t outer = 1, inner = 1, n = shape[axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  if (n == 0)
    return ctx.error("the input is empty");
  // Slice k along the axis, as a vector of values.
  auto slice = [&](int64_t k) {
    std::vector<double> v;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        v.push_back(x->values[(o * n + k) * inner + i]);
    return v;
  };
  std::vector<std::vector<double>> slices;
  for (int64_t k = 0; k < n; ++k)
    slices.push_back(slice(k));
  std::vector<int64_t> firsts; // first occurrence of each distinct slice
  for (int64_t k = 0; k < n; ++k) {
    bool seen = false;
    for (int64_t f : firsts)
      seen = seen || slices[f] == slices[k];
    if (!seen)
      firsts.push_back(k);
  }
  if (sorted)
    std::stable_sort(firsts.begin(), firsts.end(),
                     [&](int64_t a, int64_t b) { return slices[a] < slices[b]; });
  int64_t u = static_cast<int64_t>(firsts.size());
  Type i64 = ctx.builder.getIntegerType(64);
  HostTensor y{x->elementType, shape, {}, {}};
  y.shape[axis] = u;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t f : firsts)
      for (int64_t i = 0; i < inner; ++i)
        y.values.push_back(x->values[(o * n + f) * inner + i]);
  HostTensor idx{i64, {u}, {}, {}}, inv{i64, {n}, {}, {}}, counts{i64, {u}, {}, {}};
  for (int64_t f : firsts) {
    idx.values.push_back(static_cast<double>(f));
    counts.values.push_back(0.0);
  }
  for (int64_t k = 0; k < n; ++k)
    for (int64_t j = 0; j < u; ++j)
      if (slices[firsts[j]] == slices[k]) {
        inv.values.push_back(static_cast<double>(j));
        counts.values[j] += 1;
        break;
      }
  ctx.setHostOutput(0, std::move(y));
  HostTensor *outs[] = {&idx, &inv, &counts};
  for (int o = 1; o < ctx.node.output_size() && o <= 3; ++o)
    if (!ctx.node.output(o).empty())
      ctx.setHostOutput(o, std::move(*outs[o - 1]));
  return success();
}

/// Expand: numpy (bidirectional) broadcasting to a compile-time shape.
LogicalResult convertExpand(NodeContext &ctx) {
  const HostTensor *shape = ctx.hostInput(1);
  if (!shape)
    return ctx.error("the shape must be known at compile time (a constant or shape "
                     "arithmetic on static shapes)");
  HostTensor target;
  target.elementType = ctx.inputType(0).getElementType();
  for (double d : shape->values)
    target.shape.push_back(hostInt(d));
  if (const HostTensor *x = ctx.hostInput(0)) {
    // (the target's values only matter to the host broadcast)
    if (!target.evaluable())
      return ctx.error("the output would have more than 2^27 elements");
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
      return ctx.error("split sizes must be known at compile time");
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
  if (ctx.hasInput(1)) {
    const HostTensor *h = ctx.hostInput(1);
    if (!h || h->numElements() != 1)
      return ctx.error("k must be a compile-time scalar");
    k = hostInt(h->values[0]);
  }
  bool upper = ctx.attrInt("upper", 1) != 0;
  int64_t n = in.getDimSize(in.getRank() - 2), m = in.getDimSize(in.getRank() - 1);
  HostTensor mask;
  mask.elementType = ctx.builder.getI1Type();
  mask.shape = {n, m};
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      mask.values.push_back(upper ? j - i >= k : j - i <= k);
  Builder g{ctx};
  Value x = ctx.input(0);
  Value c = Importer::materialize(ctx.builder, mask, ctx.node.name() + ".mask");
  // Element (i, j) of the mask depends only on i and j, so along a dynamic
  // row or column axis it is exact at the bound: it carries the symbol.
  AxisSymbols syms = ctx.imp.symbols.of(x);
  SmallVector<int64_t> pairs;
  for (int64_t d = 0; d < 2; ++d)
    if (int32_t s = syms[in.getRank() - 2 + d]; s >= 0)
      pairs.append({d, s});
  if (!pairs.empty())
    c.getDefiningOp()->setAttr("kiln.axis_symbol", ctx.builder.getDenseI64ArrayAttr(pairs));
  return g.result(g.where(c, x, g.scalar(x, 0.0)));
}

/// Tile: the input viewed with a unit dimension before each dimension,
/// expanded to the repeats, flattened back.
LogicalResult convertTile(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  const HostTensor *reps = ctx.hostInput(1);
  if (!reps)
    return ctx.error("repeats must be known at compile time");
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

LogicalResult convertEyeLike(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  if (in.getRank() != 2)
    return ctx.error("expects a rank-2 input");
  Type et = in.getElementType();
  if (ctx.attr("dtype")) {
    et = elementTypeOf(ctx.builder.getContext(), ctx.attrInt("dtype", 1));
    if (!et)
      return ctx.error("unsupported dtype " + Twine(ctx.attrInt("dtype", 1)));
  }
  int64_t k = ctx.attrInt("k", 0);
  HostTensor h;
  h.elementType = et;
  h.shape = {in.getDimSize(0), in.getDimSize(1)};
  for (int64_t i = 0; i < h.shape[0]; ++i)
    for (int64_t j = 0; j < h.shape[1]; ++j)
      h.values.push_back(j - i == k ? 1.0 : 0.0);
  ctx.setHostOutput(0, std::move(h));
  return success();
}

LogicalResult convertGlobalMaxPool(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  std::vector<int64_t> axes;
  for (int64_t d = 2; d < in.getRank(); ++d)
    axes.push_back(d);
  Builder g{ctx};
  return g.result(g.reduce<kiln::ReduceMaxOp>(ctx.input(0), axes, true));
}

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

LogicalResult convertGatherElements(NodeContext &ctx) {
  auto axis = normalizeAxis(ctx, ctx.attrInt("axis", 0), ctx.inputType(0).getRank());
  if (failed(axis))
    return failure();
  if (!ctx.inputType(1).getElementType().isSignlessInteger())
    return ctx.error("indices must be int32 or int64");
  return ctx.setResult(userIndices(ctx.create<kiln::GatherElementsOp>(
      ctx.input(0), ctx.input(1), ctx.builder.getI64IntegerAttr(*axis))));
}

/// TopK: the indices (kiln.topk_indices, best first, ties by lower index)
/// and the values gathered at them. k is an attribute before opset 10, a
/// compile-time input since; `sorted` = 0 allows any order (sorted is one).
LogicalResult convertTopK(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  auto axis = normalizeAxis(ctx, ctx.attrInt("axis", -1), in.getRank());
  if (failed(axis))
    return failure();
  int64_t k;
  if (ctx.opset < 10) {
    k = ctx.attrInt("k", -1);
  } else {
    const HostTensor *kt = ctx.hostInput(1);
    if (!kt || kt->numElements() != 1)
      return ctx.error("k must be a compile-time scalar");
    k = hostInt(kt->values[0]);
  }
  if (k < 0 || k > in.getDimSize(*axis))
    return ctx.error("k = " + Twine(k) + " is not within the axis' size " +
                     Twine(in.getDimSize(*axis)));
  OpBuilder &b = ctx.builder;
  Builder g{ctx};
  Value x = ctx.input(0);
  Value idx = g.take(ctx.create<kiln::TopKIndicesOp>(x, b.getI64IntegerAttr(*axis),
                                                     b.getI64IntegerAttr(k),
                                                     b.getBoolAttr(ctx.attrInt("largest", 1) != 0)));
  Value vals = g.ok({idx}) ? g.take(ctx.create<kiln::GatherElementsOp>(
                                 x, idx, b.getI64IntegerAttr(*axis)))
                           : Value();
  if (!g.ok({idx, vals}))
    return failure();
  ctx.setOutput(0, vals);
  ctx.setOutput(1, idx);
  return success();
}

/// MaxUnpool: X's values written at their Indices, flat positions in the
/// output (as MaxPool gives them for its input), into zeros of the output
/// shape: output_shape when given (the size MaxPool's input had), else per
/// spatial axis (in - 1) * stride + kernel - pads. As onnxruntime and
/// PyTorch read the indices with output_shape (ONNX's reference reads them
/// in the inferred shape and pads that: docs/onnx-coverage.md). One scatter
/// per batch row, the indices less the row's offset.
LogicalResult convertMaxUnpool(NodeContext &ctx) {
  auto xt = ctx.inputType(0), it = ctx.inputType(1);
  int64_t rank = xt.getRank();
  if (rank < 3)
    return ctx.error("expects an input of rank 3 or more (N, C, spatial...)");
  if (it.getShape() != xt.getShape() || !it.getElementType().isInteger(64))
    return ctx.error("I must be int64 indices of X's shape");
  size_t spatial = rank - 2;
  auto kernel = ctx.attrInts("kernel_shape");
  if (!kernel || kernel->size() != spatial)
    return ctx.error("expects a kernel_shape of " + Twine(spatial) + " values");
  auto strides = spatialInts(ctx, "strides", spatial);
  if (failed(strides))
    return failure();
  auto pads = ctx.attrInts("pads").value_or(std::vector<int64_t>(2 * spatial, 0));
  if (pads.size() != 2 * spatial)
    return ctx.error("expects " + Twine(2 * spatial) + " pads");
  int64_t N = xt.getDimSize(0), C = xt.getDimSize(1);
  SmallVector<int64_t> inferred{N, C};
  for (size_t i = 0; i < spatial; ++i)
    inferred.push_back((xt.getDimSize(2 + i) - 1) * (*strides)[i] + (*kernel)[i] - pads[i] -
                       pads[spatial + i]);
  SmallVector<int64_t> out(inferred);
  if (ctx.hasInput(2)) {
    const HostTensor *os = ctx.hostInput(2);
    if (!os)
      return ctx.error("output_shape must be known at compile time");
    if (os->numElements() != rank)
      return ctx.error("output_shape must have " + Twine(rank) + " values");
    for (int64_t d = 0; d < rank; ++d) {
      int64_t v = hostInt(os->values[d]);
      if (d >= 2)
        out[d] = v;
      else if (v != inferred[d] && !(os->fromSymbolicShape))
        return ctx.error("output_shape must keep X's batch and channels");
    }
  }
  for (int64_t d = 2; d < rank; ++d)
    if (out[d] < 1)
      return ctx.error("the output shape has an empty dimension " + Twine(d));
  int64_t perOut = 1, P = 1;
  for (int64_t d = 1; d < rank; ++d) {
    perOut *= out[d];
    P *= xt.getDimSize(d);
  }
  if (perOut > kMaxHostElements)
    return ctx.error("the output shape is too large");
  Builder g{ctx};
  Value x = ctx.input(0);
  Value local = g.reshape(ctx.input(1), {N, P});
  local = g.sub(local, g.reshape(g.mul(g.batchIota(x), g.scalar(local, double(perOut))), {N, 1}));
  Value zeros = g.expand(g.reshape(g.batchFill(x, 0.0, xt.getElementType()), {N, 1}), {N, perOut});
  Value upd = g.reshape(x, {N, P});
  if (!g.ok({zeros, local, upd}))
    return failure();
  OpBuilder &b = ctx.builder;
  Value y = g.take(userIndices(ctx.create<kiln::ScatterElementsOp>(
      zeros, local, upd, b.getI64IntegerAttr(1), b.getStringAttr("none"))));
  return g.result(g.reshape(y, out));
}

/// ScatterElements / Scatter (opset 9-10: no reduction) and ScatterND:
/// kiln.scatter_elements / kiln.scatter_nd over run-time (or constant)
/// operands.
LogicalResult convertScatter(NodeContext &ctx, bool nd) {
  auto dt = ctx.inputType(0), it = ctx.inputType(1), ut = ctx.inputType(2);
  if (!it.getElementType().isSignlessInteger())
    return ctx.error("indices must be int32 or int64");
  if (ut.getElementType() != dt.getElementType())
    return ctx.error("updates and data differ in element type");
  std::string red = ctx.attrString("reduction", "none");
  if (red != "none" && red != "add" && red != "mul" && red != "max" && red != "min")
    return ctx.error("unknown reduction '" + red + "'");
  OpBuilder &b = ctx.builder;
  if (nd) {
    if (it.getRank() < 1 || it.getShape().back() < 1 || it.getShape().back() > dt.getRank())
      return ctx.error("index tuples must have 1 to " + Twine(dt.getRank()) + " entries");
    SmallVector<int64_t> want(it.getShape().drop_back());
    want.append(dt.getShape().begin() + it.getShape().back(), dt.getShape().end());
    if (ut.getShape() != ArrayRef<int64_t>(want))
      return ctx.error("updates must have shape indices.shape[:-1] + data.shape[q:]");
    return ctx.setResult(userIndices(ctx.create<kiln::ScatterNDOp>(
        ctx.input(0), ctx.input(1), ctx.input(2), b.getStringAttr(red))));
  }
  auto axis = normalizeAxis(ctx, ctx.attrInt("axis", 0), dt.getRank());
  if (failed(axis))
    return failure();
  if (it.getRank() != dt.getRank() || ut.getShape() != it.getShape())
    return ctx.error("indices and updates must have one shape, of the data's rank");
  for (int64_t d = 0; d < dt.getRank(); ++d)
    if (d != *axis && it.getDimSize(d) > dt.getDimSize(d))
      return ctx.error("indices exceed the data in dimension " + Twine(d));
  return ctx.setResult(userIndices(ctx.create<kiln::ScatterElementsOp>(
      ctx.input(0), ctx.input(1), ctx.input(2), b.getI64IntegerAttr(*axis),
      b.getStringAttr(red))));
}

/// GatherND: each index tuple (the indices' last dimension, k values, negative
/// ones wrapped) becomes one linear position into the data's first
/// batch_dims + k dimensions flattened, then one kiln.gather of the slices
/// behind them. Batch dimensions add their own offset (an import-time iota).
LogicalResult convertGatherND(NodeContext &ctx) {
  auto dt = ctx.inputType(0), it = ctx.inputType(1);
  int64_t r = dt.getRank(), q = it.getRank(), b = ctx.attrInt("batch_dims", 0);
  if (!it.getElementType().isSignlessInteger())
    return ctx.error("indices must be int32 or int64");
  if (q < 1 || b < 0 || b >= std::min(r, q))
    return ctx.error("batch_dims must be smaller than the ranks of data and indices");
  int64_t k = it.getDimSize(q - 1);
  if (k < 1 || b + k > r)
    return ctx.error("each index tuple must address 1 to rank(data) - batch_dims dimensions");
  for (int64_t d = 0; d < b; ++d)
    if (dt.getDimSize(d) != it.getDimSize(d))
      return ctx.error("batch dimension " + Twine(d) + " differs between data and indices");
  Builder g{ctx};
  OpBuilder &ob = ctx.builder;
  Type i64 = ob.getIntegerType(64);
  Value idx = g.cast(ctx.input(1), i64);
  SmallVector<int64_t> tupleShape(it.getShape().drop_back());
  // linear = sum_j wrap(idx[..., j]) * stride_j over the k addressed dims.
  Value linear;
  int64_t stride = 1;
  for (int64_t j = k - 1; j >= 0; --j) {
    int64_t n = dt.getDimSize(b + j);
    SmallVector<int64_t> off(q, 0), sizes(it.getShape()), steps(q, 1);
    off[q - 1] = j;
    sizes[q - 1] = 1;
    Value c = g.reshape(g.slice(idx, off, sizes, steps), tupleShape);
    c = g.where(g.cmp("lt", c, g.scalar(c, 0.0)), g.add(c, g.scalar(c, static_cast<double>(n))), c);
    if (stride != 1)
      c = g.mul(c, g.scalar(c, static_cast<double>(stride)));
    linear = linear ? g.add(linear, c) : c;
    stride *= n;
  }
  int64_t block = stride; // positions per batch element
  int64_t batch = 1;
  for (int64_t d = 0; d < b; ++d)
    batch *= dt.getDimSize(d);
  if (b > 0) {
    HostTensor iota;
    iota.elementType = i64;
    iota.shape.assign(it.getShape().begin(), it.getShape().begin() + b);
    iota.shape.resize(q - 1, 1);
    for (int64_t i = 0; i < batch; ++i)
      iota.values.push_back(static_cast<double>(i * block));
    linear = g.add(linear, Importer::materialize(ob, iota, ctx.node.name() + ".batch"));
  }
  SmallVector<int64_t> flat{batch * block};
  for (int64_t d = b + k; d < r; ++d)
    flat.push_back(dt.getDimSize(d));
  Value data = g.reshape(ctx.input(0), flat);
  if (!g.ok({data, linear}))
    return failure();
  return g.result(g.take(ctx.create<kiln::GatherOp>(data, linear, ob.getI64IntegerAttr(0))));
}

LogicalResult convertArgReduce(NodeContext &ctx, bool max) {
  auto axis = normalizeAxis(ctx, ctx.attrInt("axis", 0), ctx.inputType(0).getRank());
  if (failed(axis))
    return failure();
  OpBuilder &b = ctx.builder;
  return ctx.setResult(ctx.create<kiln::ArgReduceOp>(
      ctx.input(0), b.getI64IntegerAttr(*axis), b.getBoolAttr(ctx.attrInt("keepdims", 1) != 0),
      b.getBoolAttr(max), b.getBoolAttr(ctx.attrInt("select_last_index", 0) != 0)));
}

LogicalResult convertCumSum(NodeContext &ctx) {
  const HostTensor *a = ctx.hostInput(1);
  if (!a || a->numElements() != 1)
    return ctx.error("axis must be a compile-time scalar");
  auto axis = normalizeAxis(ctx, static_cast<int64_t>(a->values[0]), ctx.inputType(0).getRank());
  if (failed(axis))
    return failure();
  OpBuilder &b = ctx.builder;
  return ctx.setResult(ctx.createTyped<kiln::CumSumOp>(
      ctx.inputType(0), ctx.input(0), b.getI64IntegerAttr(*axis),
      b.getBoolAttr(ctx.attrInt("exclusive", 0) != 0),
      b.getBoolAttr(ctx.attrInt("reverse", 0) != 0)));
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

/// A host tensor 0, 1, ..., n-1 of shape (1, .., n, .., 1) (n at `axis`).
Value iotaAlong(Builder &g, int64_t n, int64_t axis, int64_t rank) {
  HostTensor h;
  h.elementType = g.ctx.builder.getIntegerType(64);
  h.shape.assign(rank, 1);
  h.shape[axis] = n;
  for (int64_t i = 0; i < n; ++i)
    h.values.push_back(static_cast<double>(i));
  return Importer::materialize(g.ctx.builder, h, g.ctx.node.name() + ".iota");
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

/// OneHot: values[1] where the (negative-wrapped) index equals the position
/// along the new axis, values[0] elsewhere; depth known at compile time.
LogicalResult convertOneHot(NodeContext &ctx) {
  const HostTensor *depthT = ctx.hostInput(1);
  if (!depthT || depthT->numElements() != 1)
    return ctx.error("depth must be a compile-time scalar");
  int64_t depth = hostInt(depthT->values[0]);
  if (depth <= 0)
    return ctx.error("depth must be positive");
  auto idxT = ctx.inputType(0);
  int64_t rank = idxT.getRank() + 1;
  auto axis = normalizeAxis(ctx, ctx.attrInt("axis", -1), rank);
  if (failed(axis))
    return failure();
  if (ctx.inputType(2).getNumElements() != 2)
    return ctx.error("values must hold two elements [off, on]");
  Builder g{ctx};
  Value idx = g.cast(ctx.input(0), ctx.builder.getIntegerType(64));
  Value wrapped = g.add(idx, g.scalar(idx, static_cast<double>(depth)));
  idx = g.where(g.cmp("lt", idx, g.scalar(idx, 0.0)), wrapped, idx);
  SmallVector<int64_t> s(idxT.getShape().begin(), idxT.getShape().end());
  s.insert(s.begin() + *axis, 1);
  Value hit = g.cmp("eq", g.reshape(idx, s), iotaAlong(g, depth, *axis, rank));
  Value values = ctx.input(2);
  Value off = g.reshape(g.slice(values, {0}, {1}, {1}), {});
  Value on = g.reshape(g.slice(values, {1}, {1}, {1}), {});
  return g.result(g.where(hit, on, off));
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

/// Hann, Hamming and Blackman windows (opset 17): a compile-time constant
/// of `size` values, w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N)
/// with N = size (periodic) or size - 1 (symmetric).
LogicalResult convertWindow(NodeContext &ctx, double a0, double a1, double a2) {
  const HostTensor *sizeT = ctx.hostInput(0);
  if (!sizeT || sizeT->values.size() != 1)
    return ctx.error("size must be known at compile time (a constant scalar)");
  int64_t size = hostInt(sizeT->values[0]);
  if (size < 0 || size > kMaxHostElements)
    return ctx.error("size " + Twine(size) + " is out of range");
  HostTensor h;
  h.elementType = elementTypeOf(ctx.builder.getContext(),
                                static_cast<int32_t>(ctx.attrInt("output_datatype", 1)));
  if (!h.elementType)
    return ctx.error("unsupported output_datatype " + Twine(ctx.attrInt("output_datatype", 1)));
  h.shape = {size};
  double n1 = static_cast<double>(ctx.attrInt("periodic", 1) != 0 ? size : size - 1);
  for (int64_t i = 0; i < size; ++i) {
    double x = 2.0 * M_PI * static_cast<double>(i) / n1;
    double v = a0 - a1 * std::cos(x) + a2 * std::cos(2.0 * x);
    h.values.push_back(h.isInteger() ? std::trunc(v) : v);
  }
  ctx.setHostOutput(0, std::move(h));
  return success();
}

/// ReverseSequence: along the time axis, the first sequence_lens[b]
/// positions of batch entry b reversed, the rest kept: a gather_elements
/// with indices where(t < len, len - 1 - t, t), computed at run time.
LogicalResult convertReverseSequence(NodeContext &ctx) {
  auto in = ctx.inputType(0), lensT = ctx.inputType(1);
  int64_t rank = in.getRank();
  int64_t batchAxis = ctx.attrInt("batch_axis", 1), timeAxis = ctx.attrInt("time_axis", 0);
  if (rank < 2 || (batchAxis != 0 && batchAxis != 1) || (timeAxis != 0 && timeAxis != 1) ||
      batchAxis == timeAxis)
    return ctx.error("expects a rank >= 2 input with batch_axis and time_axis 0 and 1");
  int64_t B = in.getDimSize(batchAxis), T = in.getDimSize(timeAxis);
  if (lensT.getRank() == 1 &&
      ctx.imp.symbols.requireEqual(ctx.input(1), 0, ctx.input(0), batchAxis))
    return failure(); // one length per batch entry: a dynamic size fixed to match
  if (lensT.getRank() != 1 || lensT.getDimSize(0) != B ||
      !lensT.getElementType().isSignlessInteger())
    return ctx.error("sequence_lens must hold one integer per batch entry (" + Twine(B) + ")");
  Builder g{ctx};
  OpBuilder &b = ctx.builder;
  Type i64 = b.getIntegerType(64);
  // [B, T] or [T, B] as the axes are ordered, then unit dimensions.
  SmallVector<int64_t> lensShape(rank, 1), timeShape(rank, 1);
  lensShape[batchAxis] = B;
  timeShape[timeAxis] = T;
  Value lens = g.reshape(g.cast(ctx.input(1), i64), lensShape);
  HostTensor iota{i64, std::vector<int64_t>(timeShape.begin(), timeShape.end()), {}, {}};
  for (int64_t t = 0; t < T; ++t)
    iota.values.push_back(static_cast<double>(t));
  Value t = Importer::materialize(b, iota, ctx.node.name() + ".t");
  Value rev = g.sub(g.sub(lens, g.scalar(lens, 1.0)), t);
  Value idx = g.where(g.cmp("lt", t, lens), rev, t);
  idx = g.expand(idx, in.getShape());
  if (!g.ok({idx}))
    return failure();
  return ctx.setResult(ctx.create<kiln::GatherElementsOp>(ctx.input(0), idx,
                                                          b.getI64IntegerAttr(timeAxis)));
}

void registerCompositeConverters(llvm::StringMap<Converter> &t) {
  t["HannWindow"] = [](NodeContext &c) { return convertWindow(c, 0.5, 0.5, 0.0); };
  t["HammingWindow"] = [](NodeContext &c) {
    return convertWindow(c, 25.0 / 46.0, 21.0 / 46.0, 0.0);
  };
  t["BlackmanWindow"] = [](NodeContext &c) { return convertWindow(c, 0.42, 0.5, 0.08); };
  t["ReverseSequence"] = convertReverseSequence;
  t["Split"] = convertSplit;
  t["GatherElements"] = convertGatherElements;
  t["ScatterElements"] = [](NodeContext &c) { return convertScatter(c, false); };
  t["Scatter"] = [](NodeContext &c) { return convertScatter(c, false); };
  t["ScatterND"] = [](NodeContext &c) { return convertScatter(c, true); };
  t["TopK"] = convertTopK;
  t["GatherND"] = convertGatherND;
  t["ArgMax"] = [](NodeContext &c) { return convertArgReduce(c, true); };
  t["ArgMin"] = [](NodeContext &c) { return convertArgReduce(c, false); };
  t["CumSum"] = convertCumSum;
  t["Trilu"] = convertTrilu;
  t["Tile"] = convertTile;
  t["DepthToSpace"] = [](NodeContext &c) { return convertDepthSpace(c, true); };
  t["SpaceToDepth"] = [](NodeContext &c) { return convertDepthSpace(c, false); };
  t["EyeLike"] = convertEyeLike;
  t["GlobalMaxPool"] = convertGlobalMaxPool;
  t["InstanceNormalization"] = convertInstanceNorm;
  t["MeanVarianceNormalization"] = convertMeanVarianceNorm;
  t["GroupNormalization"] = convertGroupNorm;
  t["MaxUnpool"] = convertMaxUnpool;
  t["Compress"] = convertCompress;
  t["NonZero"] = convertNonZero;
  t["Unique"] = convertUnique;
  t["Swish"] = convertSwish;
  t["LpNormalization"] = convertLpNorm;
  t["Softplus"] = convertSoftplus;
  t["Softsign"] = convertSoftsign;
  t["Mish"] = convertMish;
  t["Elu"] = convertElu;
  t["Selu"] = convertSelu;
  t["Celu"] = convertCelu;
  t["ThresholdedRelu"] = convertThresholdedRelu;
  t["Shrink"] = convertShrink;
  t["PRelu"] = convertPRelu;
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
  t["LogSoftmax"] = convertLogSoftmax;
  t["Dropout"] = convertDropout;
  t["Size"] = convertSize;
  t["ConstantOfShape"] = convertConstantOfShape;
  t["Range"] = convertRange;
  t["Expand"] = convertExpand;
  t["RMSNormalization"] = convertRmsNorm;
  t["Hardmax"] = convertHardmax;
  t["OneHot"] = convertOneHot;
}

} // namespace kiln::onnx_import
