//===- SizeMath.h - run-time sizes as graph values --------------*- C++ -*-===//
//
// Arithmetic on i64[1] values for converters whose result sizes the run
// computes (RunTimeShapes.cpp, RunTimeGenerators.cpp, RunTimeResize.cpp):
// constants, entries of an argument vector, selections among compile-time
// candidates; the bounds of sizes the graph does not bound, and stating a
// result's data-dependent sizes.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_ONNX_SIZEMATH_H
#define KILN_FRONTENDS_ONNX_SIZEMATH_H

#include "frontends/onnx/CompositeBuilder.h"

#include <algorithm>
#include <string>

namespace kiln::onnx_import {

/// i64[1] size arithmetic on top of a Builder.
struct Sizes {
  using Value = mlir::Value;
  template <typename T> using ArrayRef = llvm::ArrayRef<T>;
  Builder &g;
  Value c(int64_t v) {
    return Importer::indexConstant(g.ctx.builder, {1}, [v](int64_t) { return v; });
  }
  /// Entry j of a 1-D i64 vector, as an i64[1].
  Value at(Value v, int64_t j) { return g.slice(v, {j}, {1}, {1}); }
  Value max(Value a, Value b) { return g.bin<kiln::MaxOp>(a, b); }
  Value min(Value a, Value b) { return g.bin<kiln::MinOp>(a, b); }
  Value ne(Value a, Value b) { return g.un<kiln::NotOp>(g.cmp("eq", a, b)); }
  Value any(Value a, Value b) { return a ? g.bin<kiln::OrOp>(a, b) : b; }
  Value count(Value flag) { return g.cast(flag, g.ctx.builder.getIntegerType(64)); }
  /// vals[d] for the d in [lo, hi] that `index` equals; `dflt` for none.
  Value pick(Value index, ArrayRef<int64_t> vals, int64_t lo, int64_t hi, int64_t dflt) {
    Value v = c(dflt);
    for (int64_t d = std::max<int64_t>(lo, 0); d <= hi && d < int64_t(vals.size()); ++d)
      v = g.where(g.cmp("eq", index, c(d)), c(vals[d]), v);
    return v;
  }
  /// Whether some entry of `list` ([k] i64) is `d`, as an i1[1].
  Value contains(Value list, int64_t d) {
    Value hits = g.reduce<kiln::ReduceSumOp>(
        g.cast(g.cmp("eq", list, g.scalar(list, double(d))), g.ctx.builder.getF32Type()), {0},
        true);
    return g.cmp("gt", hits, g.scalar(hits, 0.5));
  }
  /// Negative axes of `list` counted from the end of `rank` axes.
  Value normalized(Value list, int64_t rank) {
    Value neg = g.cmp("lt", list, g.scalar(list, 0.0));
    return g.where(neg, g.add(list, g.scalar(list, double(rank))), list);
  }
};

/// The name of the node's output `i` (the node's name when it has none),
/// for the symbols of its axes.
inline std::string resultName(NodeContext &ctx, int64_t i = 0) {
  return int64_t(ctx.node.output_size()) > i ? ctx.node.output(i) : ctx.node.name();
}

/// The bounds of output `i`'s axes whose sizes the run computes with no
/// bound the graph implies: --max-shape for the output, else the larger of
/// kDefaultSymbolBound and `natural` (the sizes with identity arguments).
inline mlir::FailureOr<llvm::SmallVector<int64_t>>
unboundedBounds(NodeContext &ctx, int64_t i, llvm::ArrayRef<int64_t> natural) {
  llvm::SmallVector<int64_t> bounds;
  std::string name = resultName(ctx, i);
  auto given = ctx.imp.valueBounds.find(name);
  if (given != ctx.imp.valueBounds.end()) {
    if (given->second.size() != natural.size())
      return ctx.error("--max-shape " + name + " gives " + llvm::Twine(given->second.size()) +
                       " dimensions; the output has " + llvm::Twine(natural.size()));
    bounds.assign(given->second.begin(), given->second.end());
    return bounds;
  }
  for (int64_t n : natural)
    bounds.push_back(std::max(kDefaultSymbolBound, n));
  return bounds;
}

/// `sizes` with the first made -1 where `invalid` (an i1[1], or null).
inline llvm::SmallVector<mlir::Value> orInvalid(Builder &g, llvm::ArrayRef<mlir::Value> sizes,
                                                mlir::Value invalid) {
  llvm::SmallVector<mlir::Value> out(sizes.begin(), sizes.end());
  if (invalid && !out.empty())
    out[0] = g.where(invalid, Sizes{g}.c(-1), out[0]);
  return out;
}

/// States that axis axes[j] of `y` has the run-time size sizes[j] (built
/// before y), a data-dependent symbol of y's bound along it. Null on
/// failure (reported).
inline mlir::Value stateSizes(Builder &g, mlir::Value y, llvm::ArrayRef<int64_t> axes,
                              llvm::ArrayRef<mlir::Value> sizes, const std::string &name) {
  for (mlir::Value s : sizes)
    if (!g.ok({s}))
      return {};
  if (!g.ok({y}))
    return {};
  if (!y.getDefiningOp() || llvm::isa<kiln::ConstantOp>(y.getDefiningOp())) {
    (void)g.ctx.error("internal: the result has no op of its own");
    g.failed = true;
    return {};
  }
  llvm::SmallVector<int64_t> pairs;
  auto shape = g.shape(y);
  for (auto [a, s] : llvm::zip(axes, sizes))
    pairs.append(
        {a, g.ctx.imp.addComputedSymbol(
                name + (axes.size() > 1 ? "[" + std::to_string(a) + "]" : ""), shape[a], s)});
  y.getDefiningOp()->setAttr(kiln::attr::kAxisSymbol, g.ctx.builder.getDenseI64ArrayAttr(pairs));
  return y;
}

/// A scalar argument (rank 0 or one element) as an i64[1] or f64[1].
inline mlir::Value scalarArgument(Builder &g, mlir::Value v, mlir::Type t) {
  return g.reshape(g.cast(v, t), {1});
}

/// Positions 0 .. bound-1 along `axis` of a rank-`rank` tensor, each at
/// most `size - 1` (the padding repeats the last real position).
inline mlir::Value clampedIota(Builder &g, int64_t bound, int64_t axis, int64_t rank,
                               mlir::Value size) {
  Sizes m{g};
  llvm::SmallVector<int64_t> ones(rank, 1);
  mlir::Value last = g.reshape(m.max(g.sub(size, m.c(1)), m.c(0)), ones);
  return m.min(iotaAlong(g, bound, axis, rank), last);
}

} // namespace kiln::onnx_import

#endif // KILN_FRONTENDS_ONNX_SIZEMATH_H
