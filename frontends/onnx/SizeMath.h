//===- SizeMath.h - run-time sizes as graph values --------------*- C++ -*-===//
//
// Arithmetic on i64[1] values for converters whose result sizes the run
// computes (RunTimeShapes.cpp, RunTimeGenerators.cpp): constants, entries of
// an argument vector, selections among compile-time candidates.
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

} // namespace kiln::onnx_import

#endif // KILN_FRONTENDS_ONNX_SIZEMATH_H
