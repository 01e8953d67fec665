//===- DataDependentSizes.cpp - sizes the run computes from the data ------===//
//
// NonZero's count and Compress's length depend on values known only at run
// time. Such an axis gets a *data-dependent* symbol (KILN_SYM_COMPUTED): the
// graph is built at its bound (every element selected), the graph computes
// the size as an i64[1] value, and the model returns that value as a
// hidden output, which the runtime reads after the run to crop the outputs
// and report their shapes (kiln_instance_last_output_shape). Inside the
// graph the value stands where a symbol's hidden size input would
// (symbolInput): masks of reductions over the axis, repacks, and the sizes
// of symbols derived from it, which are computed by graph ops here too.
//
// The selected positions come from a stable partition, built from kiln ops
// every target has: an inclusive running sum of the selection gives each
// selected element its place, the others follow in order, and a scatter of
// the positions into those places lists the selected ones first. Past the
// count the list repeats its last real entry, as a run pads its inputs, so
// the padding holds valid indices and a size of 1 broadcasts like numpy's.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/CompositeBuilder.h"
#include "frontends/onnx/DataDependentSizes.h"

#include <algorithm>
#include <limits>

using namespace mlir;

namespace kiln::onnx_import {

int32_t Importer::addComputedSymbol(const std::string &name, int64_t bound, Value size) {
  int32_t s = symbols.addComputed(name, bound);
  computedSizes[s] = size;
  return s;
}

Value Importer::derivedSizeInGraph(int32_t sym) {
  const SymbolTracker::Derivation d = symbols.derived[sym];
  bool symB = KILN_SYM_B_IS_SYMBOL(d.op);
  Value a = symbolInput(d.a);
  Value b = symB ? symbolInput(static_cast<int32_t>(d.b)) : Value();
  // Right after the later of the sizes it follows from: before every value
  // that carries it.
  OpBuilder ob(a.getContext());
  Operation *after = nullptr;
  for (Value v : {a, b})
    if (Operation *def = v ? v.getDefiningOp() : nullptr)
      if (!after || after->isBeforeInBlock(def))
        after = def;
  if (after)
    ob.setInsertionPointAfter(after);
  else
    ob.setInsertionPointToStart(entryBlock);
  Location loc = ob.getUnknownLoc();
  auto constant = [&](int64_t c) {
    return indexConstant(ob, {1}, [c](int64_t) { return c; });
  };
  auto zero = [&] { return constant(0); };
  Value v;
  switch (d.op) {
  case KILN_SYM_MUL_CONST: v = kiln::MulOp::create(ob, loc, a, constant(d.b)); break;
  case KILN_SYM_ADD: v = kiln::AddOp::create(ob, loc, a, b); break;
  case KILN_SYM_MUL: v = kiln::MulOp::create(ob, loc, a, b); break;
  case KILN_SYM_ADD_CONST:
    v = kiln::MaxOp::create(ob, loc, kiln::AddOp::create(ob, loc, a, constant(d.b)), zero());
    break;
  case KILN_SYM_MIN_CONST: v = kiln::MinOp::create(ob, loc, a, constant(d.b)); break;
  case KILN_SYM_SUB:
    v = kiln::MaxOp::create(ob, loc, kiln::SubOp::create(ob, loc, a, b), zero());
    break;
  case KILN_SYM_CEIL_DIV_CONST:
    v = kiln::DivOp::create(ob, loc, kiln::AddOp::create(ob, loc, a, constant(d.b - 1)),
                            constant(d.b));
    break;
  case KILN_SYM_DIV_CONST: v = kiln::DivOp::create(ob, loc, a, constant(d.b)); break;
  case KILN_SYM_BROADCAST: {
    // (The runtime checks that the sizes broadcast when it re-derives them.)
    Value one = kiln::CompareOp::create(ob, loc, a, constant(1), "eq");
    v = kiln::WhereOp::create(ob, loc, one, b, a);
    break;
  }
  default: v = a; break;
  }
  computedSizes[sym] = v;
  return v;
}

Value selectedPositions(NodeContext &ctx, Value keep, const std::string &name, int32_t &sym) {
  Builder g{ctx};
  OpBuilder &b = ctx.builder;
  Type i64 = b.getIntegerType(64);
  if (!g.ok({keep}))
    return {};
  int64_t n = g.shape(keep)[0];
  Value iota = iotaAlong(g, n, 0, 1);
  Value ones = g.cast(keep, i64);
  if (!g.ok({iota, ones}))
    return {};
  // Inclusive running count: a kept element's place is its count - 1; a
  // dropped one's, after all kept ones, count + (its position - its count).
  Value running = g.take(ctx.createTyped<kiln::CumSumOp>(
      ones.getType(), ones, b.getI64IntegerAttr(0), b.getBoolAttr(false), b.getBoolAttr(false)));
  Value count = g.slice(running, {n - 1}, {1}, {1});
  Value one = g.scalar(iota, 1.0);
  Value place = g.where(keep, g.sub(running, one), g.add(count, g.sub(iota, running)));
  if (!g.ok({place}))
    return {};
  Value order = g.take(ctx.create<kiln::ScatterElementsOp>(
      iota, place, iota, b.getI64IntegerAttr(0), b.getStringAttr("none")));
  if (!g.ok({order, count}))
    return {};
  sym = ctx.imp.addComputedSymbol(name, n, count);
  // Past the count: the last real entry (position max(count - 1, 0)).
  Value last = g.bin<kiln::MaxOp>(g.sub(count, one), g.scalar(iota, 0.0));
  Value at = g.bin<kiln::MinOp>(iota, last);
  if (!g.ok({at}))
    return {};
  Value positions = g.take(ctx.create<kiln::GatherOp>(order, at, b.getI64IntegerAttr(0)));
  if (!g.ok({positions}))
    return {};
  positions.getDefiningOp()->setAttr(kiln::attr::kAxisSymbol, b.getDenseI64ArrayAttr({0, sym}));
  return positions;
}

LogicalResult requireStatic(NodeContext &ctx, Value v, const char *what) {
  for (int32_t s : ctx.imp.symbols.of(v))
    if (s >= 0)
      return ctx.error(Twine(what) + " must be known at compile time when it has a dynamic "
                       "dimension ('" + ctx.imp.symbols.names[s] +
                       "'): its padding would count toward the data-dependent result (give "
                       "the inputs static sizes with --shape)");
  return success();
}

namespace {

/// Which elements of `v` are selected: a bool as is, any other value where
/// it is not 0 (NaN included).
Value selection(Builder &g, Value v) {
  if (!g.ok({v}) || g.elem(v).isInteger(1))
    return v;
  return g.un<kiln::NotOp>(g.cmp("eq", v, g.scalar(v, 0.0)));
}

std::string countName(NodeContext &ctx) {
  std::string out = ctx.node.output_size() ? ctx.node.output(0) : ctx.node.name();
  return out + ".count";
}

} // namespace

LogicalResult nonZeroAtRunTime(NodeContext &ctx) {
  Builder g{ctx};
  Value x = ctx.input(0);
  if (!g.ok({x}))
    return failure();
  auto xt = ctx.inputType(0);
  int64_t rank = xt.getRank(), n = xt.getNumElements();
  Type i64 = ctx.builder.getIntegerType(64);
  if (n == 0) { // nothing to select: an empty [rank, 0]
    HostTensor h{i64, {std::max<int64_t>(rank, 1), 0}, {}, {}};
    ctx.setHostOutput(0, std::move(h));
    return success();
  }
  // Positions past a symbol's run-time size (padding) select nothing: the
  // coordinates of the rest are the same in the bound layout.
  Value keep = selection(g, x);
  AxisSymbols xs = ctx.imp.symbols.of(x);
  for (int64_t d = 0; d < rank; ++d)
    if (xs[d] >= 0) {
      Value iota = iotaAlong(g, xt.getDimSize(d), d, rank);
      if (auto c = iota ? iota.getDefiningOp<kiln::ConstantOp>() : nullptr)
        c->setAttr(kiln::attr::kAxisSymbol, ctx.builder.getDenseI64ArrayAttr({d, xs[d]}));
      Value live = g.cmp("lt", iota, ctx.imp.symbolInput(xs[d]));
      keep = g.bin<kiln::AndOp>(keep, live);
    }
  // (Masked, keep is exact at its bound: its axes carry no symbol.)
  if (g.ok({keep}) && keep != x && keep.getDefiningOp<kiln::AndOp>()) {
    SmallVector<int64_t> pairs;
    for (int64_t d = 0; d < rank; ++d)
      if (xs[d] >= 0)
        pairs.append({d, -1});
    keep.getDefiningOp()->setAttr(kiln::attr::kAxisSymbol, ctx.builder.getDenseI64ArrayAttr(pairs));
  }
  keep = g.reshape(keep, {n});
  int32_t sym = -1;
  Value at = selectedPositions(ctx, keep, countName(ctx), sym);
  if (!g.ok({at}))
    return failure();
  // Row d: the selected positions' coordinate along axis d (row-major).
  llvm::SmallVector<Value> rows;
  int64_t stride = n;
  for (int64_t d = 0; d < std::max<int64_t>(rank, 1); ++d) {
    Value c = at;
    if (rank == 0) {
      c = g.mul(at, g.scalar(at, 0.0));
    } else {
      stride /= xt.getDimSize(d);
      if (stride != 1)
        c = g.div(c, g.scalar(c, double(stride)));
      if (d > 0) { // (c mod the axis size)
        Value size = g.scalar(c, double(xt.getDimSize(d)));
        c = g.sub(c, g.mul(g.div(c, size), size));
      }
    }
    rows.push_back(g.reshape(c, {1, n}));
  }
  for (Value r : rows)
    if (!g.ok({r}))
      return failure();
  // (Each row is elementwise on the positions: the symbol stays on axis 1.)
  Value y = rows.size() == 1 ? rows[0]
                             : g.take(ctx.create<kiln::ConcatOp>(
                                   rows, ctx.builder.getI64IntegerAttr(0)));
  return g.result(y);
}

LogicalResult compressAtRunTime(NodeContext &ctx, Value x, int64_t axis) {
  Builder g{ctx};
  Value c = ctx.input(1);
  if (!g.ok({x, c}) || failed(requireStatic(ctx, c, "the condition")))
    return failure();
  auto ct = ctx.inputType(1);
  if (ct.getRank() != 1)
    return ctx.error("the condition must be 1-D");
  int64_t n = g.shape(x)[axis], len = ct.getDimSize(0);
  if (len > n)
    return ctx.error("the condition has " + Twine(len) + " entries; the axis has " + Twine(n));
  if (len == 0)
    return ctx.error("the condition is empty (an empty result)");
  Value keep = selection(g, c);
  int32_t sym = -1;
  Value at = selectedPositions(ctx, keep, countName(ctx), sym);
  if (!g.ok({at}))
    return failure();
  Value y = g.take(ctx.create<kiln::GatherOp>(x, at, ctx.builder.getI64IntegerAttr(axis)));
  if (!g.ok({y}))
    return failure();
  y.getDefiningOp()->setAttr(kiln::attr::kAxisSymbol,
                             ctx.builder.getDenseI64ArrayAttr({axis, sym}));
  return g.result(y);
}

namespace {

/// An upper bound on every element of an integer size `v` computed in the
/// graph (min(300, count): 300), from constants, computed sizes' bounds and
/// the ops shape arithmetic uses; nullopt when unknown.
std::optional<int64_t> upperBound(Importer &imp, Value v, int depth = 0) {
  if (depth > 32)
    return std::nullopt;
  for (auto &[sym, size] : imp.computedSizes)
    if (size == v)
      return imp.symbols.bounds[sym];
  for (auto &[sym, arg] : imp.symbolArgs)
    if (arg == v)
      return imp.symbols.bounds[sym];
  Operation *def = v.getDefiningOp();
  if (!def)
    return std::nullopt;
  auto of = [&](Value w) { return upperBound(imp, w, depth + 1); };
  if (auto c = llvm::dyn_cast<kiln::ConstantOp>(def)) {
    auto attr = llvm::dyn_cast<DenseIntElementsAttr>(c.getValue());
    if (!attr || attr.empty())
      return std::nullopt;
    int64_t most = std::numeric_limits<int64_t>::min();
    for (const APInt &e : attr)
      most = std::max(most, e.getSExtValue());
    return most;
  }
  if (llvm::isa<kiln::MinOp>(def)) {
    auto a = of(def->getOperand(0)), b = of(def->getOperand(1));
    if (a && b)
      return std::min(*a, *b);
    return a ? a : b;
  }
  if (llvm::isa<kiln::MaxOp, kiln::AddOp>(def)) {
    auto a = of(def->getOperand(0)), b = of(def->getOperand(1));
    if (!a || !b)
      return std::nullopt;
    return llvm::isa<kiln::MaxOp>(def) ? std::max(*a, *b) : *a + *b;
  }
  if (llvm::isa<kiln::ReshapeOp, kiln::CastOp, kiln::ReduceMaxOp, kiln::ReduceMinOp>(def))
    return of(def->getOperand(0));
  if (auto sl = llvm::dyn_cast<kiln::SliceOp>(def)) {
    // A slice of a 1-D concat inside one of its pieces: that piece's bound.
    auto cat = sl.getInput().getDefiningOp<kiln::ConcatOp>();
    if (cat && sl.getOffsets().size() == 1 && sl.getStrides()[0] == 1) {
      int64_t at = sl.getOffsets()[0], end = at + sl.getSizes()[0], start = 0;
      for (Value piece : cat->getOperands()) {
        int64_t len = llvm::cast<RankedTensorType>(piece.getType()).getNumElements();
        if (at >= start && end <= start + len)
          return of(piece);
        start += len;
      }
    }
    return of(sl.getInput());
  }
  if (llvm::isa<kiln::ConcatOp>(def)) {
    std::optional<int64_t> most;
    for (Value piece : def->getOperands()) {
      auto b = of(piece);
      if (!b)
        return std::nullopt;
      most = most ? std::max(*most, *b) : *b;
    }
    return most;
  }
  return std::nullopt;
}

} // namespace

LogicalResult topKAtRunTime(NodeContext &ctx, int64_t axis, Value k) {
  Builder g{ctx};
  OpBuilder &b = ctx.builder;
  Value x = ctx.input(0);
  k = k ? k : ctx.input(1);
  if (!g.ok({x, k}))
    return failure();
  if (failed(requireStatic(ctx, k, "k")))
    return failure();
  if (llvm::cast<RankedTensorType>(k.getType()).getNumElements() != 1)
    return ctx.error("k must be a scalar");
  int64_t n = g.shape(x)[axis];
  if (n == 0)
    return ctx.error("ranks an empty axis");
  // The axis ranked to k's bound (the whole axis unless the graph bounds
  // k: min(300, count)); the output keeps the first k (a data-dependent
  // size the runtime checks against the axis), the padding repeating the
  // k-th. (A k past its bound is clamped to it.)
  Value count = g.reshape(g.cast(k, b.getIntegerType(64)), {1});
  if (!g.ok({count}))
    return failure();
  int64_t most = n;
  if (std::optional<int64_t> ub = upperBound(ctx.imp, count))
    most = std::clamp<int64_t>(*ub, 1, n);
  if (most < n)
    count = g.bin<kiln::MinOp>(count, g.reshape(g.scalar(count, double(most)), {1}));
  Value order = g.take(
      ctx.create<kiln::TopKIndicesOp>(x, b.getI64IntegerAttr(axis), b.getI64IntegerAttr(most),
                                      b.getBoolAttr(ctx.attrInt("largest", 1) != 0)));
  Value iota = iotaAlong(g, most, 0, 1);
  if (!g.ok({order, count, iota}))
    return failure();
  if (ctx.imp.symbols.of(x)[axis] >= 0) // (a ranking for a run-time k: DynamicDims)
    order.getDefiningOp()->setAttr(kiln::attr::kSymbolIndices, b.getUnitAttr());
  n = most;
  int32_t sym = ctx.imp.addComputedSymbol(
      (ctx.node.output_size() ? ctx.node.output(0) : ctx.node.name()) + ".k", n, count);
  Value one = g.scalar(iota, 1.0);
  Value last = g.bin<kiln::MaxOp>(g.sub(count, one), g.scalar(iota, 0.0));
  Value at = g.bin<kiln::MinOp>(iota, last);
  // (Each op states the size before the next one reads its symbols.)
  // (Along a run-time size of the input, the first k positions of the
  // ranking are live ones: MaskSymbols ranks the padding last.)
  bool sizedAxis = ctx.imp.symbols.of(x)[axis] >= 0;
  auto alongK = [&](Value v, bool inLiveSize) {
    if (!g.ok({v}))
      return v;
    v.getDefiningOp()->setAttr(kiln::attr::kAxisSymbol, b.getDenseI64ArrayAttr({axis, sym}));
    if (inLiveSize)
      v.getDefiningOp()->setAttr(kiln::attr::kSymbolIndices, b.getUnitAttr());
    return v;
  };
  bool fullRanking = most == g.shape(x)[axis];
  Value idx = g.ok({at})
                  ? alongK(g.take(ctx.create<kiln::GatherOp>(order, at, b.getI64IntegerAttr(axis))),
                           sizedAxis && fullRanking)
                  : Value();
  Value vals =
      g.ok({idx})
          ? alongK(g.take(ctx.create<kiln::GatherElementsOp>(x, idx, b.getI64IntegerAttr(axis))),
                   sizedAxis)
          : Value();
  if (!g.ok({idx, vals}))
    return failure();
  ctx.setOutput(0, vals);
  ctx.setOutput(1, idx);
  return success();
}

LogicalResult sliceAtRunTime(NodeContext &ctx, ArrayRef<Value> args) {
  Builder g{ctx};
  OpBuilder &b = ctx.builder;
  Value x = ctx.input(0);
  if (!g.ok({x}))
    return failure();
  // (An axis of a dynamic input's size counts padding; a data-dependent
  // one, a result of this kind, slices by its run-time size.)
  AxisSymbols xs = ctx.imp.symbols.of(x);
  for (int32_t s : xs)
    if (s >= 0 && ctx.imp.symbols.derived[s].op != KILN_SYM_COMPUTED)
      return requireStatic(ctx, x, "the data");
  auto xt = llvm::cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank();
  Type i64 = b.getIntegerType(64);
  // Argument i (1-4): the node's input, or the rebuilt value standing for it.
  auto arg = [&](size_t i) {
    return i - 1 < args.size() && args[i - 1] ? args[i - 1] : ctx.input(i);
  };
  auto argType = [&](size_t i) { return llvm::cast<RankedTensorType>(arg(i).getType()); };
  int64_t k = argType(1).getNumElements();
  for (int i = 1; i <= 4; ++i) {
    if (!ctx.hasInput(i))
      continue;
    if (!arg(i) || failed(requireStatic(ctx, arg(i),
                                        i == 1   ? "starts"
                                        : i == 2 ? "ends"
                                        : i == 3 ? "axes"
                                                 : "steps")))
      return failure();
    if (argType(i).getRank() != 1 || argType(i).getNumElements() != k)
      return ctx.error("starts, ends, axes and steps differ in length");
  }
  // Entry j of a [k] vector as an i64[1].
  auto entry = [&](Value v, int64_t j) { return g.slice(v, {j}, {1}, {1}); };
  auto c = [&](int64_t v) { return Importer::indexConstant(b, {1}, [v](int64_t) { return v; }); };
  Value starts = g.cast(arg(1), i64), ends = g.cast(arg(2), i64);
  Value axes = ctx.hasInput(3) ? g.cast(arg(3), i64) : Value();
  Value steps = ctx.hasInput(4) ? g.cast(arg(4), i64) : Value();
  if (!g.ok({starts, ends}))
    return failure();
  // The axes a known `axes` names (all of them when it arrives at run time).
  llvm::SmallVector<int64_t> candidates;
  const HostTensor *knownAxes = ctx.hasInput(3) ? ctx.hostInput(3) : nullptr;
  if (knownAxes && knownAxes->fromSymbolicShape)
    knownAxes = nullptr;
  if (const HostTensor *h = knownAxes) {
    for (double v : h->values) {
      auto a = normalizeAxis(ctx, hostInt(v), rank);
      if (failed(a))
        return failure();
      candidates.push_back(*a);
    }
  } else if (!ctx.hasInput(3)) {
    for (int64_t j = 0; j < std::min(k, rank); ++j)
      candidates.push_back(j);
  } else {
    for (int64_t d = 0; d < rank; ++d)
      candidates.push_back(d);
  }
  Value y = x;
  std::string base = ctx.node.output_size() ? ctx.node.output(0) : ctx.node.name();
  for (int64_t d : candidates) {
    int64_t n = xt.getDimSize(d);
    if (n == 0)
      continue;
    // This axis' start, end and step: the entries whose axis is d (a
    // duplicate axis is an invalid model), else the whole axis.
    Value named, s, e, t;
    for (int64_t j = 0; j < k; ++j) {
      Value aj = axes ? entry(axes, j) : c(j);
      aj = axes ? g.where(g.cmp("lt", aj, c(0)), g.add(aj, c(rank)), aj) : aj;
      Value pick = g.cmp("eq", aj, c(d));
      Value sj = g.where(pick, entry(starts, j), c(0));
      Value ej = g.where(pick, entry(ends, j), c(0));
      Value tj = g.where(pick, steps ? entry(steps, j) : c(1), c(0));
      named = named ? g.bin<kiln::OrOp>(named, pick) : pick;
      s = s ? g.add(s, sj) : sj;
      e = e ? g.add(e, ej) : ej;
      t = t ? g.add(t, tj) : tj;
    }
    if (k == 0)
      continue;
    // The axis' size: n, or the run's size of a data-dependent axis.
    Value size = xs[d] >= 0 ? ctx.imp.symbolInput(xs[d]) : c(n);
    s = g.where(named, s, c(0));
    e = g.where(named, e, size);
    t = g.where(named, t, c(1));
    // ONNX's clamping: negative positions count from the end; a forward
    // slice's start and end stay in [0, n], a backward one's start in
    // [0, n - 1] and its end in [-1, n - 1]. (A step of 0, invalid, divides
    // by 1 instead of trapping.)
    Value forward = g.cmp("gt", t, c(0));
    auto fromEnd = [&](Value v) { return g.where(g.cmp("lt", v, c(0)), g.add(v, size), v); };
    auto clamp = [&](Value v, Value lo) {
      Value hi = g.where(forward, size, g.sub(size, c(1)));
      return g.bin<kiln::MinOp>(g.bin<kiln::MaxOp>(v, lo), hi);
    };
    s = clamp(fromEnd(s), c(0));
    e = clamp(fromEnd(e), g.where(forward, c(0), c(-1)));
    Value safeT = g.where(g.cmp("eq", t, c(0)), c(1), t);
    Value up = g.div(g.add(g.sub(e, s), g.sub(safeT, c(1))), safeT);
    Value negT = g.sub(c(0), safeT);
    Value down = g.div(g.add(g.sub(s, e), g.sub(negT, c(1))), negT);
    Value count = g.bin<kiln::MaxOp>(g.where(forward, up, down), c(0));
    // Position i of the result: s + min(i, count - 1) * t, kept in the axis.
    Value iota = iotaAlong(g, n, 0, 1);
    Value last = g.bin<kiln::MaxOp>(g.sub(count, c(1)), c(0));
    Value at = g.add(s, g.mul(g.bin<kiln::MinOp>(iota, last), t));
    at = g.bin<kiln::MinOp>(g.bin<kiln::MaxOp>(at, c(0)),
                            g.bin<kiln::MaxOp>(g.sub(size, c(1)), c(0)));
    if (!g.ok({count, at}))
      return failure();
    int32_t sym = ctx.imp.addComputedSymbol(base + "[" + std::to_string(d) + "]", n, count);
    y = g.take(ctx.create<kiln::GatherOp>(y, at, b.getI64IntegerAttr(d)));
    if (!g.ok({y}))
      return failure();
    y.getDefiningOp()->setAttr(kiln::attr::kAxisSymbol, b.getDenseI64ArrayAttr({d, sym}));
    if (xs[d] >= 0) // (positions inside the run's size of a data-dependent axis)
      y.getDefiningOp()->setAttr(kiln::attr::kSymbolIndices, b.getUnitAttr());
  }
  return g.result(y);
}

FailureOr<Value> reduceOverRunTimeAxes(NodeContext &ctx, Value x,
                                       function_ref<Value(Value, int64_t)> reduceAxis,
                                       function_ref<Value(Value)> finish) {
  Builder g{ctx};
  OpBuilder &b = ctx.builder;
  bool keep = ctx.attrInt("keepdims", 1) != 0;
  if (!g.ok({x}) || failed(requireStatic(ctx, x, "the input")) ||
      failed(requireStatic(ctx, ctx.input(1), "axes")))
    return failure();
  auto xt = llvm::cast<RankedTensorType>(x.getType());
  int64_t rank = xt.getRank(), k = ctx.inputType(1).getNumElements();
  if (rank == 0)
    return ctx.error("reduces a scalar over axes given at run time");
  if (ctx.inputType(1).getRank() != 1)
    return ctx.error("takes axes of rank " + Twine(ctx.inputType(1).getRank()) +
                     "; they are a 1-D tensor");
  if (!keep && k > rank)
    return ctx.error("names " + Twine(k) + " axes of a rank-" + Twine(rank) + " input");
  Type i64 = b.getIntegerType(64), f32 = b.getF32Type();
  // Axis d is selected when some entry of the axes (negative ones counted
  // from the end) is d.
  Value axes = g.cast(ctx.input(1), i64);
  if (!g.ok({axes}))
    return failure();
  Value r = g.scalar(axes, double(rank));
  Value norm = g.where(g.cmp("lt", axes, g.scalar(axes, 0.0)), g.add(axes, r), axes);
  llvm::SmallVector<Value> chosen; // [1] each
  for (int64_t d = 0; d < rank; ++d) {
    Value hits = g.reduce<kiln::ReduceSumOp>(
        g.cast(g.cmp("eq", norm, g.scalar(norm, double(d))), f32), {0}, true);
    chosen.push_back(g.cmp("gt", hits, g.scalar(hits, 0.5)));
    if (!g.ok({chosen.back()}))
      return failure();
  }
  Value y = x;
  if (xt.getNumElements() == 0) {
    // Every element of the result reduces an empty set, or there is none:
    // the reduction's identity, from reducing each empty axis.
    for (int64_t d = 0; d < rank; ++d)
      if (xt.getDimSize(d) == 0)
        y = reduceAxis(y, d);
  } else {
    for (int64_t d = 0; d < rank; ++d) {
      if (xt.getDimSize(d) <= 1)
        continue; // (reducing one element is the element)
      Value reduced = reduceAxis(y, d);
      if (!g.ok({reduced}))
        return failure();
      Value spread = g.expand(reduced, g.shape(y));
      llvm::SmallVector<int64_t> at(rank, 1);
      y = g.where(g.reshape(chosen[d], at), spread, y);
      if (!g.ok({y}))
        return failure();
    }
  }
  if (!g.ok({y}))
    return failure();
  std::string base = ctx.node.output_size() ? ctx.node.output(0) : ctx.node.name();
  if (!keep) {
    // The axes not selected, in order (RunTimeShapes.cpp).
    Value out = dropReducedAxes(ctx, y, xt.getShape(), chosen, k, base);
    if (!g.ok({out}))
      return failure();
    out = finish(out);
    if (!g.ok({out}))
      return failure();
    return out;
  }
  // Each axis 1 where selected, else its size.
  llvm::SmallVector<std::pair<int64_t, Value>> sizes; // (axis, its run-time size)
  for (int64_t d = 0; d < rank; ++d) {
    int64_t n = xt.getDimSize(d);
    if (n != 1)
      sizes.push_back({d, g.where(chosen[d], g.reshape(g.scalar(axes, 1.0), {1}),
                                  g.reshape(g.scalar(axes, double(n)), {1}))});
  }
  for (auto &[d, v] : sizes)
    if (!g.ok({v}))
      return failure();
  llvm::SmallVector<int64_t> pairs;
  for (auto &[d, v] : sizes) {
    int32_t sym = ctx.imp.addComputedSymbol(base + "[" + std::to_string(d) + "]",
                                            std::max<int64_t>(xt.getDimSize(d), 1), v);
    pairs.append({d, sym});
  }
  Value out = finish(y);
  if (!g.ok({out}))
    return failure();
  if (!pairs.empty()) {
    if (out == x || !out.getDefiningOp())
      return ctx.error("internal: the reduction has no op of its own");
    out.getDefiningOp()->setAttr(kiln::attr::kAxisSymbol, b.getDenseI64ArrayAttr(pairs));
  }
  return out;
}

} // namespace kiln::onnx_import
