//===- RunTimeGenerators.cpp - sizes from run-time values, unbounded ------===//
//
// Ops whose result sizes arrive at run time with no bound the graph
// implies: Expand's shape, Tile's repeats, Pad's pads, ConstantOfShape's
// shape, Range's start, limit and delta, OneHot's depth, the windows' size.
// Each such axis is a data-dependent symbol (KILN_SYM_COMPUTED) bounded by
// `--max-shape NAME=...` for the node's output NAME, or by the larger of
// kDefaultSymbolBound and the size the op has with identity arguments (a
// Tile by 1, a Pad by 0), as a dynamic input dimension is. The result is
// built at its bounds: positions past an axis' size repeat its last real
// entry where that costs nothing (clamped gather positions), and a run whose
// size passes the bound fails saying so. An argument that names no valid
// result (a negative repeat, a delta of 0) makes a size -1, which the run
// reports.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/DataDependentSizes.h"
#include "frontends/onnx/SizeMath.h"

#include <cmath>

using namespace mlir;

namespace kiln::onnx_import {

LogicalResult expandAtRunTime(NodeContext &ctx) {
  Builder g{ctx};
  Sizes m{g};
  Value x = ctx.input(0);
  if (!x || failed(requireStatic(ctx, x, "the data")))
    return failure();
  auto st = ctx.inputType(1);
  if (st.getRank() != 1 || !st.getElementType().isSignlessInteger())
    return ctx.error("the shape must be a 1-D integer tensor");
  auto xt = ctx.inputType(0);
  int64_t r = xt.getRank(), k = st.getDimSize(0), rank = std::max(r, k);
  Value shape = g.cast(ctx.input(1), ctx.builder.getIntegerType(64));
  // Axis j: the input's size where it is not 1 (the shape's entry must be
  // 1 or that size), else the shape's entry (run-time).
  SmallVector<int64_t> in(rank - r, 1), natural(rank, 1), boundShape;
  in.append(xt.getShape().begin(), xt.getShape().end());
  auto bounds = unboundedBounds(ctx, 0, natural);
  if (failed(bounds))
    return failure();
  SmallVector<int64_t> axes;
  SmallVector<Value> sizes;
  Value invalid;
  for (int64_t j = 0; j < rank; ++j) {
    Value s = j >= rank - k ? m.at(shape, j - (rank - k)) : m.c(1);
    if (in[j] != 1) {
      invalid = m.any(invalid, g.bin<kiln::AndOp>(m.ne(s, m.c(1)), m.ne(s, m.c(in[j]))));
      boundShape.push_back(in[j]);
      continue;
    }
    invalid = m.any(invalid, g.cmp("lt", s, m.c(0)));
    axes.push_back(j);
    sizes.push_back(s);
    boundShape.push_back((*bounds)[j]);
  }
  if (axes.empty()) // (every axis the input's: a static result)
    return ctx.error("the shape must be known at compile time when it names no axis of "
                     "size 1 in the input (the result is the input's shape)");
  SmallVector<Value> stated = orInvalid(g, sizes, invalid);
  for (Value s : stated)
    if (!g.ok({s}))
      return failure();
  Value y = g.expand(g.reshape(x, in), boundShape);
  if (y == x || (g.ok({y}) && !y.getDefiningOp()))
    y = g.take(ctx.createTyped<kiln::ExpandOp>(y.getType(), y));
  return g.result(stateSizes(g, y, axes, stated, resultName(ctx)));
}

LogicalResult tileAtRunTime(NodeContext &ctx) {
  Builder g{ctx};
  Sizes m{g};
  Value x = ctx.input(0);
  if (!x || failed(requireStatic(ctx, x, "the data")))
    return failure();
  auto xt = ctx.inputType(0);
  int64_t rank = xt.getRank();
  if (xt.getNumElements() == 0)
    return ctx.error("repeats must be known at compile time when the data is empty");
  if (ctx.inputType(1).getNumElements() != rank)
    return ctx.error("repeats must hold one entry per axis (" + Twine(rank) + ")");
  Value reps = g.cast(g.reshape(ctx.input(1), {rank}), ctx.builder.getIntegerType(64));
  auto bounds = unboundedBounds(ctx, 0, xt.getShape());
  if (failed(bounds))
    return failure();
  SmallVector<Value> sizes;
  SmallVector<int64_t> axes;
  Value invalid;
  for (int64_t j = 0; j < rank; ++j) {
    Value rep = m.at(reps, j);
    invalid = m.any(invalid, g.cmp("lt", rep, m.c(0)));
    sizes.push_back(g.mul(m.max(rep, m.c(0)), m.c(xt.getDimSize(j))));
    axes.push_back(j);
  }
  SmallVector<Value> stated = orInvalid(g, sizes, invalid);
  // Axis by axis: position i reads min(i, size - 1) mod n.
  Value y = x;
  for (int64_t j = 0; j < rank; ++j) {
    Value at = clampedIota(g, (*bounds)[j], 0, 1, sizes[j]);
    Value n = m.c(xt.getDimSize(j));
    at = g.sub(at, g.mul(g.div(at, n), n));
    if (!g.ok({y, at}))
      return failure();
    y = g.take(ctx.create<kiln::GatherOp>(y, at, ctx.builder.getI64IntegerAttr(j)));
  }
  return g.result(stateSizes(g, y, axes, stated, resultName(ctx)));
}

LogicalResult constantOfShapeAtRunTime(NodeContext &ctx, const HostTensor &value) {
  Builder g{ctx};
  Sizes m{g};
  auto st = ctx.inputType(0);
  if (st.getRank() != 1 || !st.getElementType().isSignlessInteger())
    return ctx.error("the shape must be a 1-D integer tensor");
  if (failed(requireStatic(ctx, ctx.input(0), "the shape")))
    return failure();
  int64_t rank = st.getDimSize(0);
  if (rank == 0) {
    ctx.setHostOutput(0, value);
    return success();
  }
  Value shape = g.cast(ctx.input(0), ctx.builder.getIntegerType(64));
  auto bounds = unboundedBounds(ctx, 0, SmallVector<int64_t>(rank, 1));
  if (failed(bounds))
    return failure();
  SmallVector<Value> sizes;
  SmallVector<int64_t> axes;
  Value invalid;
  for (int64_t j = 0; j < rank; ++j) {
    sizes.push_back(m.at(shape, j));
    invalid = m.any(invalid, g.cmp("lt", sizes.back(), m.c(0)));
    axes.push_back(j);
  }
  SmallVector<Value> stated = orInvalid(g, sizes, invalid);
  for (Value s : stated)
    if (!g.ok({s}))
      return failure();
  HostTensor one = value;
  one.shape.clear();
  Value c = Importer::materialize(ctx.builder, one, ctx.node.name() + ".value");
  Value y =
      g.take(ctx.createTyped<kiln::ExpandOp>(RankedTensorType::get(*bounds, one.elementType), c));
  return g.result(stateSizes(g, y, axes, stated, resultName(ctx)));
}

LogicalResult rangeAtRunTime(NodeContext &ctx) {
  Builder g{ctx};
  for (int i = 0; i < 3; ++i) {
    if (ctx.inputType(i).getNumElements() != 1)
      return ctx.error("start, limit and delta must be scalars");
    if (failed(requireStatic(ctx, ctx.input(i), "start, limit and delta")))
      return failure();
  }
  Type et = ctx.inputType(0).getElementType(), f64 = ctx.builder.getF64Type();
  Value start = scalarArgument(g, ctx.input(0), f64);
  Value limit = scalarArgument(g, ctx.input(1), f64);
  Value delta = scalarArgument(g, ctx.input(2), f64);
  // count = max(ceil((limit - start) / delta), 0); a delta of 0 is invalid.
  Value zero = g.scalar(delta, 0.0);
  Value bad = g.cmp("eq", delta, zero);
  Value safe = g.where(bad, g.scalar(delta, 1.0), delta);
  Value steps = g.un<kiln::CeilOp>(g.div(g.sub(limit, start), safe));
  steps = g.where(g.cmp("gt", steps, zero), steps, zero); // (NaN: 0)
  Value count = g.cast(steps, ctx.builder.getIntegerType(64));
  auto bounds = unboundedBounds(ctx, 0, {1});
  if (failed(bounds))
    return failure();
  SmallVector<Value> stated = orInvalid(g, {count}, bad);
  for (Value s : stated)
    if (!g.ok({s}))
      return failure();
  Value i = g.cast(clampedIota(g, (*bounds)[0], 0, 1, count), f64);
  Value y = g.cast(g.add(start, g.mul(i, delta)), et);
  if (g.ok({y}) && !y.getDefiningOp<kiln::CastOp>())
    y = g.add(y, g.scalar(y, 0.0)); // (an op of its own to state the size)
  return g.result(stateSizes(g, y, {0}, stated, resultName(ctx)));
}

LogicalResult oneHotAtRunTime(NodeContext &ctx, int64_t axis) {
  Builder g{ctx};
  Sizes m{g};
  if (ctx.inputType(1).getNumElements() != 1)
    return ctx.error("depth must be a scalar");
  if (failed(requireStatic(ctx, ctx.input(1), "depth")))
    return failure();
  auto vt = ctx.inputType(2);
  if (vt.getRank() == 1 && vt.getDimSize(0) != 2 && ctx.requireSize(ctx.input(2), 0, 2))
    return failure(); // (a dynamic dimension of the values is 2)
  if (vt.getNumElements() != 2)
    return ctx.error("values must hold two elements [off, on]");
  auto idxT = ctx.inputType(0);
  int64_t rank = idxT.getRank() + 1;
  Value depth = scalarArgument(g, ctx.input(1), ctx.builder.getIntegerType(64));
  auto bounds = unboundedBounds(ctx, 0, SmallVector<int64_t>(rank, 1));
  if (failed(bounds))
    return failure();
  SmallVector<Value> stated = orInvalid(g, {depth}, g.cmp("lt", depth, m.c(1)));
  for (Value s : stated)
    if (!g.ok({s}))
      return failure();
  SmallVector<int64_t> ones(idxT.getRank(), 1), s(idxT.getShape().begin(), idxT.getShape().end());
  s.insert(s.begin() + axis, 1);
  Value idx = g.cast(ctx.input(0), ctx.builder.getIntegerType(64));
  Value d = idxT.getRank() ? g.reshape(depth, ones) : g.reshape(depth, {});
  idx = g.where(g.cmp("lt", idx, g.scalar(idx, 0.0)), g.add(idx, d), idx);
  // (The positions past depth compare as its last: the padding repeats it.)
  Value hit = g.cmp("eq", g.reshape(idx, s), clampedIota(g, (*bounds)[axis], axis, rank, depth));
  Value values = ctx.input(2);
  Value off = g.reshape(g.slice(values, {0}, {1}, {1}), {});
  Value on = g.reshape(g.slice(values, {1}, {1}, {1}), {});
  return g.result(stateSizes(g, g.where(hit, on, off), {axis}, stated, resultName(ctx)));
}

LogicalResult windowAtRunTime(NodeContext &ctx, Type et, double a0, double a1, double a2) {
  Builder g{ctx};
  Sizes m{g};
  if (ctx.inputType(0).getNumElements() != 1)
    return ctx.error("size must be a scalar");
  if (failed(requireStatic(ctx, ctx.input(0), "size")))
    return failure();
  Type f64 = ctx.builder.getF64Type();
  Value size = scalarArgument(g, ctx.input(0), ctx.builder.getIntegerType(64));
  auto bounds = unboundedBounds(ctx, 0, {1});
  if (failed(bounds))
    return failure();
  SmallVector<Value> stated = orInvalid(g, {size}, g.cmp("lt", size, m.c(0)));
  for (Value s : stated)
    if (!g.ok({s}))
      return failure();
  // w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size
  // (periodic) or size - 1 (symmetric).
  Value n1 = g.cast(ctx.attrInt("periodic", 1) != 0 ? size : g.sub(size, m.c(1)), f64);
  Value i = g.cast(clampedIota(g, (*bounds)[0], 0, 1, size), f64);
  Value x = g.div(g.mul(i, g.scalar(i, 2.0 * M_PI)), n1);
  Value w = g.sub(g.scalar(x, a0), g.mul(g.scalar(x, a1), g.un<kiln::CosOp>(x)));
  if (a2 != 0)
    w = g.add(w, g.mul(g.scalar(x, a2), g.un<kiln::CosOp>(g.mul(x, g.scalar(x, 2.0)))));
  Value y = g.cast(w, et); // (integers: truncated, as the compile-time window)
  if (g.ok({y}) && y == w)
    y = g.add(y, g.scalar(y, 0.0)); // (an op of its own to state the size)
  return g.result(stateSizes(g, y, {0}, stated, resultName(ctx)));
}

namespace {

/// The input padded along `axes` by run-time amounts (i64[1] each; negative
/// ones crop), each padded axis a data-dependent size.
LogicalResult padByRunTimeAmounts(NodeContext &ctx, ArrayRef<int64_t> axes, ArrayRef<Value> los,
                                  ArrayRef<Value> his, StringRef mode, double value,
                                  Value runtimeValue) {
  Builder g{ctx};
  Sizes m{g};
  Value x = ctx.input(0);
  auto xt = ctx.inputType(0);
  int64_t rank = xt.getRank(), n = axes.size();
  auto bounds = unboundedBounds(ctx, 0, xt.getShape());
  if (failed(bounds))
    return failure();
  SmallVector<Value> sizes, begins;
  Value invalid;
  for (int64_t j = 0; j < n; ++j) {
    Value lo = los[j], hi = his[j];
    Value size = g.add(g.add(lo, hi), m.c(xt.getDimSize(axes[j])));
    invalid = m.any(invalid, g.cmp("lt", size, m.c(0)));
    sizes.push_back(m.max(size, m.c(0)));
    begins.push_back(lo);
  }
  SmallVector<Value> stated = orInvalid(g, sizes, invalid);
  // Axis by axis: position i reads source i - begin (past the size, the
  // last position's), mapped into the axis as the mode says; constant mode
  // masks the positions outside it.
  Value y = x, outside;
  for (int64_t j = 0; j < n; ++j) {
    int64_t d = axes[j], len = xt.getDimSize(d);
    Value src = g.sub(clampedIota(g, (*bounds)[d], 0, 1, sizes[j]), begins[j]);
    Value nc = m.c(len);
    auto mod = [&](Value v, Value p) { // (non-negative v mod p)
      Value r = g.sub(v, g.mul(g.div(v, p), p));
      return g.where(g.cmp("lt", r, m.c(0)), g.add(r, p), r);
    };
    Value at;
    if (mode == "constant" || mode == "edge") {
      at = m.min(m.max(src, m.c(0)), m.c(len - 1));
      if (mode == "constant") {
        Value out = g.bin<kiln::OrOp>(g.cmp("lt", src, m.c(0)), g.cmp("ge", src, nc));
        SmallVector<int64_t> shape(rank, 1);
        shape[d] = (*bounds)[d];
        out = g.reshape(out, shape);
        outside = outside ? g.bin<kiln::OrOp>(outside, out) : out;
      }
    } else if (mode == "wrap") {
      at = mod(src, nc);
    } else { // reflect: period 2(n - 1), the edge not repeated
      Value period = m.c(std::max<int64_t>(2 * (len - 1), 1));
      Value r = mod(src, period);
      at = m.min(g.where(g.cmp("ge", r, nc), g.sub(period, r), r), m.c(len - 1));
    }
    if (!g.ok({y, at}))
      return failure();
    y = g.take(ctx.create<kiln::GatherOp>(y, at, ctx.builder.getI64IntegerAttr(d)));
  }
  if (outside) {
    Value v = runtimeValue ? g.reshape(g.cast(runtimeValue, xt.getElementType()), {})
                           : g.scalar(y, value);
    y = g.where(outside, v, y);
  }
  return g.result(stateSizes(g, y, axes, stated, resultName(ctx)));
}

} // namespace

LogicalResult padAtRunTime(NodeContext &ctx, ArrayRef<int64_t> axes, StringRef mode, double value,
                           Value runtimeValue) {
  Builder g{ctx};
  Sizes m{g};
  Value x = ctx.input(0);
  if (!x || failed(requireStatic(ctx, x, "the data")) ||
      failed(requireStatic(ctx, ctx.input(1), "pads")))
    return failure();
  auto xt = ctx.inputType(0);
  Type i64 = ctx.builder.getIntegerType(64);
  int64_t rank = xt.getRank(), n = axes.size();
  // Axes that arrive at run time (opset 18) name k of the input's axes:
  // each axis padded by the entries that name it.
  bool axesAtRunTime = ctx.opset >= 18 && ctx.hasInput(3) && !ctx.hostInput(3);
  int64_t k = axesAtRunTime ? ctx.inputType(3).getNumElements() : n;
  if (axesAtRunTime && failed(requireStatic(ctx, ctx.input(3), "axes")))
    return failure();
  if (ctx.inputType(1).getNumElements() != 2 * k)
    return ctx.error("expects " + Twine(2 * k) + " pads (a begin and an end per axis), got " +
                     Twine(ctx.inputType(1).getNumElements()));
  if (xt.getNumElements() == 0)
    return ctx.error("pads must be known at compile time when the data is empty");
  Value pads = g.cast(g.reshape(ctx.input(1), {2 * k}), i64);
  Value named =
      axesAtRunTime ? m.normalized(g.cast(g.reshape(ctx.input(3), {k}), i64), rank) : Value();
  SmallVector<Value> los, his;
  for (int64_t j = 0; j < n; ++j) {
    Value lo = axesAtRunTime ? m.c(0) : m.at(pads, j),
          hi = axesAtRunTime ? m.c(0) : m.at(pads, n + j);
    for (int64_t i = 0; axesAtRunTime && i < k; ++i) {
      Value here = g.cmp("eq", m.at(named, i), m.c(axes[j]));
      lo = g.add(lo, g.where(here, m.at(pads, i), m.c(0)));
      hi = g.add(hi, g.where(here, m.at(pads, k + i), m.c(0)));
    }
    los.push_back(lo);
    his.push_back(hi);
  }
  return padByRunTimeAmounts(ctx, axes, los, his, mode, value, runtimeValue);
}

LogicalResult centerCropPadAtRunTime(NodeContext &ctx, ArrayRef<int64_t> axes) {
  Builder g{ctx};
  Sizes m{g};
  Value x = ctx.input(0);
  if (!x || failed(requireStatic(ctx, x, "the data")) ||
      failed(requireStatic(ctx, ctx.input(1), "shape")))
    return failure();
  int64_t n = axes.size();
  if (ctx.inputType(1).getNumElements() != n)
    return ctx.error("expects one target size per axis");
  if (ctx.inputType(0).getNumElements() == 0)
    return ctx.error("shape must be known at compile time when the data is empty");
  Value shape = g.cast(g.reshape(ctx.input(1), {n}), ctx.builder.getIntegerType(64));
  // Crop: begin at (size - want) / 2 (a negative pad); pad: (want - size) / 2
  // before; the rest after. (A target below 1 names no valid shape: the
  // size becomes negative, which the run reports.)
  SmallVector<Value> los, his;
  for (int64_t i = 0; i < n; ++i) {
    Value want = m.at(shape, i), size = m.c(ctx.inputType(0).getDimSize(axes[i]));
    Value crop = g.cmp("lt", want, size);
    Value begin = g.where(crop, g.sub(m.c(0), g.div(g.sub(size, want), m.c(2))),
                          g.div(g.sub(want, size), m.c(2)));
    Value end = g.sub(g.sub(want, size), begin);
    Value bad = g.cmp("lt", want, m.c(1));
    los.push_back(begin);
    his.push_back(g.where(bad, g.sub(m.c(-1), g.add(size, begin)), end));
  }
  return padByRunTimeAmounts(ctx, axes, los, his, "constant", 0.0, Value());
}

} // namespace kiln::onnx_import
