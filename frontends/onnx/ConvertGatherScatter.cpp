//===- ConvertGatherScatter.cpp - gathers, scatters and index-producing ops ---===//
//
// GatherElements, GatherND (one gather of linearized index tuples), the
// scatters (kiln.scatter_elements / kiln.scatter_nd), TopK, ArgMax/ArgMin,
// CumSum, MaxUnpool (one scatter per batch row), Compress of a constant
// condition (one gather), ReverseSequence and OneHot.
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

/// Compress: the slices of the input (flattened without an axis) where a
/// compile-time condition is true, as one gather (the output's length
/// depends on the condition's values; Kiln sizes tensors at compile time).
LogicalResult convertCompress(NodeContext &ctx) {
  const HostTensor *c = ctx.hostInput(1);
  if (c && c->fromSymbolicShape)
    c = nullptr; // (its value at the bounds is not the run's)
  if (c && c->shape.size() != 1)
    return ctx.error("the condition must be 1-D");
  Builder g{ctx};
  auto xa = axisOrFlattened(g);
  if (failed(xa))
    return failure();
  auto [x, axis] = *xa;
  int64_t n = g.shape(x)[axis];
  if (c && c->shape[0] > n)
    return ctx.error("the condition has " + Twine(c->shape[0]) + " entries; the axis has " +
                     Twine(n));
  // (A run-time condition with a dynamic dimension must be known at compile
  // time, as --bind makes it, before the axis is looked at.)
  if (!c && failed(requireStatic(ctx, ctx.input(1), "the condition")))
    return failure();
  auto syms = ctx.imp.symbols.of(x);
  if (axis < static_cast<int64_t>(syms.size()) && syms[axis] >= 0)
    return ctx.error("compresses along a dynamic dimension (give the inputs static sizes with "
                     "--shape)");
  if (!c) // a run-time condition: a data-dependent length
    return compressAtRunTime(ctx, x, axis);
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

LogicalResult convertGatherElements(NodeContext &ctx) {
  auto axis = normalizeAxis(ctx, ctx.attrInt("axis", 0), ctx.inputType(0).getRank());
  if (failed(axis))
    return failure();
  if (!ctx.inputType(1).getElementType().isSignlessInteger())
    return ctx.error("indices must be int32 or int64");
  if (failed(ctx.checkConstantIndices(1, ctx.inputType(0).getDimSize(*axis))))
    return failure();
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
    if (!kt)
      return topKAtRunTime(ctx, *axis); // (a data-dependent size: k)
    // k computed from a dynamic size (min(300, n)): its run-time form.
    if (kt->fromSymbolicShape) {
      Value rebuilt = ctx.imp.sizesAtRunTime(ctx.builder, ctx.node.input(1), 0);
      if (!rebuilt)
        return failure(); // (the importer names the size it could not rebuild)
      return topKAtRunTime(ctx, *axis, rebuilt);
    }
    if (kt->numElements() != 1)
      return ctx.error("k must be a scalar");
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
  int64_t perOut = checkedElements(llvm::ArrayRef(out).drop_front()), P = 1;
  for (int64_t d = 1; d < rank; ++d)
    P *= xt.getDimSize(d);
  if (failed(ctx.checkConstantSize(perOut, "the output's index table")))
    return failure();
  Builder g{ctx};
  Value x = ctx.input(0);
  Value local = g.reshape(ctx.input(1), {N, P});
  Value row = g.reshape(g.batchIota(x), {N, 1});
  local = g.sub(local, g.mul(row, g.scalar(local, double(perOut))));
  // (A dynamic batch's padding rows repeat the last real row's indices,
  // outside their own rows: they write position 0 of their own, cropped.)
  if (int32_t sym = ctx.imp.symbols.of(x)[0]; sym >= 0)
    local = g.where(g.cmp("lt", row, ctx.imp.symbolInput(sym)), local, g.scalar(local, 0.0));
  Value zeros = g.expand(g.reshape(g.batchFill(x, 0.0, xt.getElementType()), {N, 1}), {N, perOut});
  Value upd = g.reshape(x, {N, P});
  if (!g.ok({zeros, local, upd}))
    return failure();
  OpBuilder &b = ctx.builder;
  Value y = g.take(userIndices(ctx.create<kiln::ScatterElementsOp>(
      zeros, local, upd, b.getI64IntegerAttr(1), b.getStringAttr("none"))));
  return g.result(g.reshape(y, out));
}

/// A scatter's indices and updates along a symbolic axis (the positions a
/// NonZero selected, scattered back: torchvision's MultiScaleRoIAlign) are
/// padding past its run-time size, which must not write. Their first
/// `axes` axes (the leading ones they share) are gathered at
/// min(position, size - 1) along each symbol, so the padding writes the
/// last real entry again; `anyReal` is the condition that every such size
/// is positive (null: none symbolic).
static LogicalResult repeatLastAlongSymbols(NodeContext &ctx, int64_t axes, Value &idx, Value &upd,
                                            Value &anyReal) {
  Builder g{ctx};
  OpBuilder &b = ctx.builder;
  SymbolTracker &st = ctx.imp.symbols;
  AxisSymbols is = st.of(idx), us = st.of(upd);
  for (int64_t d = 0; d < axes && d < static_cast<int64_t>(us.size()); ++d) {
    int32_t s = is[d] >= 0 ? is[d] : us[d];
    if (s < 0)
      continue;
    Value size = ctx.imp.symbolInput(s);
    Value iota = iotaAlong(g, g.shape(idx)[d], 0, 1);
    if (!g.ok({size, iota}))
      return failure();
    Value at = g.bin<kiln::MinOp>(
        iota, g.bin<kiln::MaxOp>(g.sub(size, g.scalar(size, 1.0)), g.scalar(size, 0.0)));
    auto along = [&](Value v) -> Value {
      Value r = g.ok({v, at}) ? g.take(ctx.create<kiln::GatherOp>(v, at, b.getI64IntegerAttr(d)))
                              : Value();
      if (g.ok({r})) {
        r.getDefiningOp()->setAttr(kiln::attr::kAxisSymbol, b.getDenseI64ArrayAttr({d, s}));
        r.getDefiningOp()->setAttr(kiln::attr::kSymbolIndices, b.getUnitAttr());
      }
      return r;
    };
    idx = along(idx);
    upd = along(upd);
    Value real = g.cmp("gt", size, g.scalar(size, 0.0));
    anyReal = anyReal ? g.bin<kiln::AndOp>(anyReal, real) : real;
  }
  return g.ok({idx, upd}) ? success() : failure();
}

/// ScatterElements: as repeatLastAlongSymbols; where a size is 0 nothing is
/// real, and every entry writes the data's own element back.
static LogicalResult neutralPadding(NodeContext &ctx, int64_t axis, Value data, Value &idx,
                                    Value &upd) {
  Builder g{ctx};
  OpBuilder &b = ctx.builder;
  Value anyReal;
  if (failed(repeatLastAlongSymbols(ctx, g.shape(idx).size(), idx, upd, anyReal)))
    return failure();
  if (!anyReal)
    return success();
  Value own = g.ok({idx})
                  ? g.take(ctx.create<kiln::GatherElementsOp>(data, idx, b.getI64IntegerAttr(axis)))
                  : Value();
  if (g.ok({own})) // (the indices stay inside a symbolic axis' run-time size)
    own.getDefiningOp()->setAttr(kiln::attr::kSymbolIndices, b.getUnitAttr());
  upd = g.where(anyReal, upd, own);
  return g.ok({idx, upd}) ? success() : failure();
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
    // (Index tuples along a symbolic axis: as neutralPadding, the padding
    // repeating the last real write; with none real, the data as it is.)
    Value idx = ctx.input(1), upd = ctx.input(2), anyReal;
    if (red == "none" && idx && upd &&
        failed(repeatLastAlongSymbols(ctx, it.getRank() - 1, idx, upd, anyReal)))
      return failure();
    auto y =
        userIndices(ctx.create<kiln::ScatterNDOp>(ctx.input(0), idx, upd, b.getStringAttr(red)));
    if (failed(y) || !anyReal)
      return ctx.setResult(y);
    Builder g{ctx};
    return g.result(g.where(anyReal, *y, ctx.input(0)));
  }
  auto axis = normalizeAxis(ctx, ctx.attrInt("axis", 0), dt.getRank());
  if (failed(axis))
    return failure();
  if (it.getRank() != dt.getRank() || ut.getShape() != it.getShape())
    return ctx.error("indices and updates must have one shape, of the data's rank");
  for (int64_t d = 0; d < dt.getRank(); ++d)
    if (d != *axis && it.getDimSize(d) > dt.getDimSize(d))
      return ctx.error("indices exceed the data in dimension " + Twine(d));
  Value idx = ctx.input(1), upd = ctx.input(2);
  if (red == "none" && idx && upd && failed(neutralPadding(ctx, *axis, ctx.input(0), idx, upd)))
    return failure();
  return ctx.setResult(userIndices(ctx.create<kiln::ScatterElementsOp>(
      ctx.input(0), idx, upd, b.getI64IntegerAttr(*axis), b.getStringAttr(red))));
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
  // A component outside [-n, n) becomes ceil(span / stride_j), which puts
  // the sum past the flattened axis, so the gather's run-time check fails
  // the run (one component out of range must not read a neighbouring row).
  int64_t span = 1;
  for (int64_t d = 0; d < r; ++d)
    span *= d < b + k ? dt.getDimSize(d) : 1;
  // A dynamic addressed axis: the tuple's component wraps and is checked
  // by the run's size; the strides stay the bound's (a padded buffer's).
  AxisSymbols dataSyms = ctx.hostInput(0) ? AxisSymbols(r, -1) : ctx.imp.symbols.of(ctx.input(0));
  bool symbolic = false;
  Value linear;
  int64_t stride = 1;
  for (int64_t j = k - 1; j >= 0; --j) {
    int64_t n = dt.getDimSize(b + j);
    SmallVector<int64_t> off(q, 0), sizes(it.getShape()), steps(q, 1);
    off[q - 1] = j;
    sizes[q - 1] = 1;
    Value c = g.reshape(g.slice(idx, off, sizes, steps), tupleShape);
    Value size = g.scalar(c, static_cast<double>(n));
    if (int32_t s = dataSyms[b + j]; s >= 0) {
      size = ctx.imp.symbolInput(s);
      symbolic = true;
    }
    c = g.where(g.cmp("lt", c, g.scalar(c, 0.0)), g.add(c, size), c);
    Value outside = g.scalar(c, static_cast<double>((std::max<int64_t>(span, 1) + stride - 1) / stride));
    c = g.where(g.cmp("lt", c, g.scalar(c, 0.0)), outside, c);
    c = g.where(g.cmp("ge", c, size), outside, c);
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
  for (int64_t d = 0; d < b && !symbolic; ++d)
    symbolic = dataSyms[d] >= 0;
  if (symbolic) {
    // The tuples at padded positions (past a run's size along the indices'
    // dynamic axes) may hold anything, say the bound's positions: they read
    // position 0 instead of failing the range check.
    AxisSymbols idxSyms = ctx.imp.symbols.of(ctx.input(1));
    Value live;
    for (int64_t d = 0; d + 1 < q; ++d) {
      if (idxSyms[d] < 0)
        continue;
      SmallVector<int64_t> shape(q - 1, 1);
      shape[d] = it.getDimSize(d);
      Value iota = Importer::indexConstant(ob, shape, [](int64_t i) { return i; });
      iota.getDefiningOp()->setAttr(kiln::attr::kAxisSymbol,
                                    ob.getDenseI64ArrayAttr({d, idxSyms[d]}));
      Value in = g.cmp("lt", iota, ctx.imp.symbolInput(idxSyms[d]));
      live = live ? g.bin<kiln::AndOp>(live, in) : in;
    }
    if (live)
      linear = g.where(live, linear, g.scalar(linear, 0.0));
  }
  Value data = g.reshape(ctx.input(0), flat);
  // The flattened axis is a view of the padded buffer that the gather
  // reads at real positions only (DynamicDims drops its symbols).
  if (symbolic && data && data.getDefiningOp<kiln::ReshapeOp>()) {
    Operation *view = data.getDefiningOp();
    view->setAttr(kiln::attr::kRepacked, ob.getUnitAttr());
    SmallVector<int64_t> behind; // (the axes behind the tuples keep theirs)
    for (int64_t d = b + k; d < r; ++d)
      if (dataSyms[d] >= 0)
        behind.append({d - (b + k) + 1, dataSyms[d]});
    if (!behind.empty())
      view->setAttr(kiln::attr::kAxisSymbol, ob.getDenseI64ArrayAttr(behind));
  }
  if (!g.ok({data, linear}))
    return failure();
  Value out = g.take(ctx.create<kiln::GatherOp>(data, linear, ob.getI64IntegerAttr(0)));
  if (symbolic && out)
    out.getDefiningOp()->setAttr(kiln::attr::kSymbolIndices, ob.getUnitAttr());
  return g.result(out);
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
  if (!a)
    return cumSumAtRunTime(ctx);
  if (a->numElements() != 1)
    return ctx.error("axis must be a scalar");
  auto axis = normalizeAxis(ctx, static_cast<int64_t>(a->values[0]), ctx.inputType(0).getRank());
  if (failed(axis))
    return failure();
  OpBuilder &b = ctx.builder;
  return ctx.setResult(ctx.createTyped<kiln::CumSumOp>(
      ctx.inputType(0), ctx.input(0), b.getI64IntegerAttr(*axis),
      b.getBoolAttr(ctx.attrInt("exclusive", 0) != 0),
      b.getBoolAttr(ctx.attrInt("reverse", 0) != 0)));
}

/// OneHot: values[1] where the (negative-wrapped) index equals the position
/// along the new axis, values[0] elsewhere; depth known at compile time.
LogicalResult convertOneHot(NodeContext &ctx) {
  const HostTensor *depthT = ctx.hostInput(1);
  auto idxT = ctx.inputType(0);
  int64_t rank = idxT.getRank() + 1;
  auto axis = normalizeAxis(ctx, ctx.attrInt("axis", -1), rank);
  if (failed(axis))
    return failure();
  if (!depthT)
    return oneHotAtRunTime(ctx, *axis); // (a data-dependent size)
  if (depthT->numElements() != 1)
    return ctx.error("depth must be a scalar");
  int64_t depth = hostInt(depthT->values[0]);
  if (depth <= 0)
    return ctx.error("depth must be positive");
  auto vt = ctx.inputType(2);
  if (vt.getRank() == 1 && vt.getDimSize(0) != 2 && ctx.requireSize(ctx.input(2), 0, 2))
    return failure(); // (a dynamic dimension of the values is 2)
  if (vt.getNumElements() != 2)
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

} // namespace

void registerGatherScatterConverters(llvm::StringMap<Converter> &t) {
  t["ReverseSequence"] = convertReverseSequence;
  t["GatherElements"] = convertGatherElements;
  t["ScatterElements"] = [](NodeContext &c) { return convertScatter(c, false); };
  t["Scatter"] = [](NodeContext &c) { return convertScatter(c, false); };
  t["ScatterND"] = [](NodeContext &c) { return convertScatter(c, true); };
  t["TopK"] = convertTopK;
  t["GatherND"] = convertGatherND;
  t["ArgMax"] = [](NodeContext &c) { return convertArgReduce(c, true); };
  t["ArgMin"] = [](NodeContext &c) { return convertArgReduce(c, false); };
  t["CumSum"] = convertCumSum;
  t["MaxUnpool"] = convertMaxUnpool;
  t["Compress"] = convertCompress;
  t["OneHot"] = convertOneHot;
}

} // namespace kiln::onnx_import
