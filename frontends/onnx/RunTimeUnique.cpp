//===- RunTimeUnique.cpp - Unique of run-time values ----------------------===//
//
// Unique of a tensor known only at run time: the number of distinct
// elements (or slices along `axis`) is a data-dependent symbol
// (KILN_SYM_COMPUTED) bounded by the number of slices, n.
//
// Built from kiln ops every target has, on the n x n matrices that compare
// every pair of slices (each slice a row of m values): `equal[j][k]` (all m
// values equal) and `before[j][k]` (at the first value they differ in, j's
// is smaller: lexicographic order). A slice is the first of its kind when
// no earlier slice equals it; those are the outputs in first-occurrence
// order (a stable partition, selectedPositions). Sorted, each first's place
// is the number of distinct slices before it. Every slice's first equal one
// (the first maximum of its column of `equal`) gives the inverse indices,
// and the counts count the inverse indices naming each place. The matrices
// cost n^2 m elements, which kMaxPairElements bounds.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/CompositeBuilder.h"
#include "frontends/onnx/DataDependentSizes.h"
#include "frontends/onnx/ImporterImpl.h"

using namespace mlir;

namespace kiln::onnx_import {

namespace {

/// The most elements the pairwise comparisons may take (n^2 m).
constexpr int64_t kMaxPairElements = int64_t(1) << 24;

} // namespace

LogicalResult uniqueAtRunTime(NodeContext &ctx) {
  Builder g{ctx};
  OpBuilder &b = ctx.builder;
  Value x = ctx.input(0);
  if (!g.ok({x}) || failed(requireStatic(ctx, x, "the input")))
    return failure();
  Type i64 = b.getIntegerType(64), f32 = b.getF32Type();
  bool sorted = ctx.attrInt("sorted", 1) != 0;
  auto xa = axisOrFlattened(g);
  if (failed(xa))
    return failure();
  auto [data, axis] = *xa;
  llvm::SmallVector<int64_t> shape(g.shape(data));
  int64_t n = shape[axis], outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  int64_t m = outer * inner;
  if (n == 0 || m == 0)
    return ctx.error("the input is empty");
  if (n > kMaxPairElements || n * n > kMaxPairElements / m)
    return ctx.error("Unique of run-time values compares every pair of its " + Twine(n) +
                     " slices of " + Twine(m) + " elements, more than " + Twine(kMaxPairElements) +
                     " comparisons; give the input's values at compile time (--bind for a "
                     "graph input)");

  // The slices as rows [n, m] (integers for booleans, which order as 0, 1).
  Value rows = g.reshape(g.transpose(g.reshape(data, {outer, n, inner}), {1, 0, 2}), {n, m});
  if (g.ok({rows}) && g.elem(rows).isInteger(1))
    rows = g.cast(rows, i64);
  Value lhs = g.reshape(rows, {n, 1, m}), rhs = g.reshape(rows, {1, n, m});
  auto anyAlong = [&](Value v, int64_t d) { // any true along axis d (dropped)
    Value most = g.reduce<kiln::ReduceMaxOp>(g.cast(v, f32), {d}, false);
    return g.cmp("gt", most, g.scalar(most, 0.0));
  };
  auto sumAlong = [&](Value v, int64_t d) { // the true ones along d, as i64
    return g.cast(g.reduce<kiln::ReduceSumOp>(g.cast(v, f32), {d}, false), i64);
  };
  Value same = g.cmp("eq", lhs, rhs), less = g.cmp("lt", lhs, rhs);
  Value equal, before;
  if (m == 1) {
    equal = g.reshape(same, {n, n});
    before = g.reshape(less, {n, n});
  } else {
    Value differ = g.un<kiln::NotOp>(same);
    equal = g.un<kiln::NotOp>(anyAlong(differ, 2));
    // (An exclusive running count of differences: 0 up to the first.)
    Value seen = g.ok({differ})
                     ? g.take(ctx.createTyped<kiln::CumSumOp>(
                           RankedTensorType::get({n, n, m}, i64), g.cast(differ, i64),
                           b.getI64IntegerAttr(2), b.getBoolAttr(true), b.getBoolAttr(false)))
                     : Value();
    Value first = g.cmp("eq", seen, g.scalar(seen, 0.0));
    before = anyAlong(g.bin<kiln::AndOp>(first, less), 2);
  }
  Value j = iotaAlong(g, n, 0, 2), k = iotaAlong(g, n, 1, 2);
  Value earlierEqual = g.bin<kiln::AndOp>(equal, g.cmp("lt", j, k));
  Value isFirst = g.un<kiln::NotOp>(anyAlong(earlierEqual, 0));
  if (!g.ok({isFirst, before}))
    return failure();
  int32_t sym = -1;
  std::string name = (ctx.node.output_size() ? ctx.node.output(0) : ctx.node.name()) + ".count";
  Value firsts = selectedPositions(ctx, isFirst, name, sym);
  if (!g.ok({firsts}))
    return failure();
  Value count = ctx.imp.computedSizes[sym];
  // Slice k's first equal one: the first maximum of column k of `equal`.
  Value firstOf = g.ok({equal})
                      ? g.take(ctx.create<kiln::ArgReduceOp>(
                            g.cast(equal, f32), b.getI64IntegerAttr(0), b.getBoolAttr(false),
                            b.getBoolAttr(true), b.getBoolAttr(false)))
                      : Value();
  if (!g.ok({firstOf}))
    return failure();
  // Positions 0..n-1 clamped to the count's last: a [n] value along the
  // symbol (the padding repeating the last real entry).
  Value iota = iotaAlong(g, n, 0, 1);
  Value one = g.scalar(iota, 1.0);
  Value at = g.bin<kiln::MinOp>(iota, g.bin<kiln::MaxOp>(g.sub(count, one), g.scalar(iota, 0.0)));
  auto alongCount = [&](Value v, Value positions, int64_t d) {
    Value r = g.ok({v, positions})
                  ? g.take(ctx.create<kiln::GatherOp>(v, positions, b.getI64IntegerAttr(d)))
                  : Value();
    if (g.ok({r}))
      r.getDefiningOp()->setAttr(kiln::attr::kAxisSymbol, b.getDenseI64ArrayAttr({d, sym}));
    return r;
  };
  auto gather = [&](Value v, Value positions) {
    return g.ok({v, positions})
               ? g.take(ctx.create<kiln::GatherOp>(v, positions, b.getI64IntegerAttr(0)))
               : Value();
  };
  Value indices, inverse;
  if (!sorted) {
    // A first's place: the firsts up to it, less one.
    Value place = g.ok({isFirst})
                      ? g.take(ctx.createTyped<kiln::CumSumOp>(
                            RankedTensorType::get({n}, i64), g.cast(isFirst, i64),
                            b.getI64IntegerAttr(0), b.getBoolAttr(false), b.getBoolAttr(false)))
                      : Value();
    indices = firsts;
    inverse = gather(g.sub(place, g.scalar(place, 1.0)), firstOf);
  } else {
    // A first's place: the distinct slices before it. Place r's slice: the
    // first k that is a first with place r (none past the count: 0).
    Value rank = sumAlong(g.bin<kiln::AndOp>(before, g.reshape(isFirst, {n, 1})), 0);
    Value match =
        g.bin<kiln::AndOp>(g.cmp("eq", g.reshape(rank, {1, n}), j), g.reshape(isFirst, {1, n}));
    Value byPlace = g.ok({match})
                        ? g.take(ctx.create<kiln::ArgReduceOp>(
                              g.cast(match, f32), b.getI64IntegerAttr(1), b.getBoolAttr(false),
                              b.getBoolAttr(true), b.getBoolAttr(false)))
                        : Value();
    indices = alongCount(byPlace, at, 0);
    inverse = gather(rank, firstOf);
  }
  // Place r's count: the slices whose inverse index is r.
  Value counts = sumAlong(g.cmp("eq", g.reshape(inverse, {1, n}), j), 1);
  counts = alongCount(counts, at, 0);
  Value y = alongCount(data, indices, axis);
  if (!g.ok({y, indices, inverse, counts}))
    return failure();
  Value outs[] = {y, indices, inverse, counts};
  for (int o = 0; o < ctx.node.output_size() && o < 4; ++o)
    if (!ctx.node.output(o).empty())
      ctx.setOutput(o, outs[o]);
  return success();
}

} // namespace kiln::onnx_import
