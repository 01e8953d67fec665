//===- MaskSymbols.cpp - reductions over dynamic dimensions ---------------===//
//
// A graph compiled at a symbol's bound and run on inputs padded to it (see
// DynamicDims.h) stays exact through a reduction over the symbolic axis when
// the padded positions are replaced by the reduction's identity first (XLA's
// dynamic padder does the same): sums, products, means, softmax, reverse
// cumulative sums and matrix products over the axis read
// `where(iota < size, x, identity)`, with `size` the symbol's run-time value
// -- a hidden i64 input the runtime fills (`kiln.symbol_input`). A mean's
// input is also scaled by bound / size (it divides by the bound's count).
// Ops are only given new operands, never replaced: converters building
// several ops hold on to their results while this runs. Max, min, first-index argmax/argmin and
// forward cumsum need no mask: padding repeats the last real position, so it
// never changes them (SymbolTracker accepts those as they are).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/ImporterImpl.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace kiln::onnx_import {

Value Importer::symbolInput(int32_t sym) {
  if (auto c = computedSizes.find(sym); c != computedSizes.end())
    return c->second;
  if (symbols.dependsOnComputed(sym))
    return derivedSizeInGraph(sym);
  // (Derived symbols too: the runtime computes every symbol's size.)
  auto it = symbolArgs.find(sym);
  if (it != symbolArgs.end())
    return it->second;
  auto t = RankedTensorType::get({1}, IntegerType::get(ctx, 64));
  Value arg = entryBlock->addArgument(t, entryBlock->getParentOp()->getLoc());
  symbols.setSymbols(arg, AxisSymbols{-1});
  symbolArgs[sym] = arg;
  return arg;
}

Value Importer::sizeValue(OpBuilder &b, Location loc, SymbolTracker::SymSize x) {
  HostTensor c;
  c.elementType = b.getIntegerType(64);
  c.shape = {1};
  c.values = {static_cast<double>(x.c)};
  if (x.sym < 0)
    return materialize(b, c, "size");
  Value v = symbolInput(x.sym);
  return x.c ? kiln::AddOp::create(b, loc, v, materialize(b, c, "size")).getResult() : v;
}

Value Importer::indexConstant(OpBuilder &b, ArrayRef<int64_t> shape,
                              llvm::function_ref<int64_t(int64_t)> value) {
  HostTensor h;
  h.elementType = b.getIntegerType(64);
  h.shape.assign(shape.begin(), shape.end());
  int64_t n = h.numElements();
  for (int64_t i = 0; i < n; ++i)
    h.values.push_back(static_cast<double>(value(i)));
  return materialize(b, h, "index");
}

Value Importer::lastPosition(OpBuilder &b, Location loc, SymbolTracker::SymSize x) {
  Value last = kiln::SubOp::create(b, loc, sizeValue(b, loc, x),
                                   indexConstant(b, {1}, [](int64_t) { return 1; }));
  return kiln::MaxOp::create(b, loc, last, indexConstant(b, {1}, [](int64_t) { return 0; }));
}

Value Importer::repackAxis(OpBuilder &b, Location loc, Value packed, int64_t axis,
                           ArrayRef<RepackPiece> pieces, int64_t outSize, int64_t repeat) {
  // Output position j < total reads piece i (the last whose start o_i <= j)
  // at from_i + (j - o_i) * step_i; positions past the total read the last
  // real one; indices clamped to the packed axis. Repeated, j is first
  // taken modulo one round's size.
  auto constant = [&](ArrayRef<int64_t> shape, llvm::function_ref<int64_t(int64_t)> value) {
    return indexConstant(b, shape, value);
  };
  SymbolTracker::SymSize round, total;
  for (const RepackPiece &p : pieces)
    round = symbols.add(round, p.size);
  total = round.sym < 0 ? SymbolTracker::SymSize{-1, round.c * repeat}
        : repeat == 1  ? round
                       : SymbolTracker::SymSize{symbols.product(symbols.symbolOf(round), repeat), 0};
  Value j = constant({outSize}, [](int64_t i) { return i; });
  j = kiln::MinOp::create(b, loc, j, lastPosition(b, loc, total));
  if (repeat > 1) {
    Value once = kiln::AddOp::create(b, loc, lastPosition(b, loc, round),
                                     constant({1}, [](int64_t) { return 1; }));
    j = kiln::ModOp::create(b, loc, j, once, false);
  }
  auto read = [&](const RepackPiece &p, Value offset) -> Value {
    Value rel = offset ? Value(kiln::SubOp::create(b, loc, j, offset)) : j;
    if (p.step != 1)
      rel = kiln::MulOp::create(b, loc, rel, constant({1}, [&](int64_t) { return p.step; }));
    if (p.from.sym < 0 && p.from.c == 0)
      return rel;
    return kiln::AddOp::create(b, loc, rel, sizeValue(b, loc, p.from));
  };
  Value idx = read(pieces[0], Value());
  SymbolTracker::SymSize start = pieces[0].size;
  for (const RepackPiece &p : pieces.drop_front()) {
    Value o = sizeValue(b, loc, start);
    Value here = kiln::CompareOp::create(b, loc, j, o, "ge");
    idx = kiln::WhereOp::create(b, loc, here, read(p, o), idx);
    start = symbols.add(start, p.size);
  }
  int64_t dim = llvm::cast<RankedTensorType>(packed.getType()).getDimSize(axis);
  idx = kiln::MaxOp::create(b, loc, idx, constant({1}, [](int64_t) { return 0; }));
  idx = kiln::MinOp::create(b, loc, idx,
                            constant({1}, [&](int64_t) { return std::max<int64_t>(dim - 1, 0); }));
  auto g = kiln::GatherOp::create(b, loc, packed, idx, b.getI64IntegerAttr(axis));
  g->setAttr(kiln::attr::kSymbolIndices, b.getUnitAttr());
  g->setAttr(kiln::attr::kAxisSymbol, b.getDenseI64ArrayAttr({axis, symbols.symbolOf(total)}));
  return g.getResult();
}

FailureOr<Operation *> Importer::maskAlongSymbols(Operation *op) {
  // The symbolic axes among `axes` of `v` that no mask covers yet.
  auto symbolicAxes = [&](Value v, ArrayRef<int64_t> axes) {
    SmallVector<std::pair<int64_t, int32_t>> r;
    AxisSymbols a = symbols.of(v);
    Operation *def = v.getDefiningOp();
    auto done = def ? def->getAttrOfType<DenseI64ArrayAttr>(kiln::attr::kMaskedAxes) : nullptr;
    for (int64_t d : axes)
      if (d >= 0 && d < (int64_t)a.size() && a[d] >= 0 &&
          !(done && llvm::is_contained(done.asArrayRef(), d)))
        r.push_back({d, a[d]});
    return r;
  };
  OpBuilder b(op);
  Location loc = op->getLoc();
  Operation *first = nullptr;
  auto note = [&](Value v) {
    if (!first)
      first = v.getDefiningOp();
    return v;
  };
  // where(iota_d < size_s for every (d, s), x, fill)
  auto mask = [&](Value x, ArrayRef<std::pair<int64_t, int32_t>> axes, double fill) -> Value {
    auto t = llvm::cast<RankedTensorType>(x.getType());
    Value cond;
    for (auto [d, s] : axes) {
      HostTensor iota;
      iota.elementType = b.getIntegerType(64);
      iota.shape.assign(t.getRank(), 1);
      iota.shape[d] = t.getDimSize(d);
      for (int64_t i = 0; i < t.getDimSize(d); ++i)
        iota.values.push_back(static_cast<double>(i));
      Value c = note(materialize(b, iota, "iota"));
      // (Positional along the symbol: kernels computing live extents.)
      if (auto k = c.getDefiningOp<kiln::ConstantOp>())
        k->setAttr(kiln::attr::kAxisSymbol, b.getDenseI64ArrayAttr({d, s}));
      Value lt = kiln::CompareOp::create(b, loc, c, symbolInput(s), "lt");
      cond = cond ? Value(kiln::AndOp::create(b, loc, cond, lt)) : lt;
    }
    HostTensor f;
    f.elementType = t.getElementType();
    f.values = {fill};
    Value fv = materialize(b, f, "identity");
    auto w = kiln::WhereOp::create(b, loc, cond, x, fv);
    SmallVector<int64_t> masked;
    for (auto [d, s] : axes)
      masked.push_back(d);
    w->setAttr(kiln::attr::kMaskedAxes, b.getDenseI64ArrayAttr(masked));
    return w.getResult();
  };
  double inf = std::numeric_limits<double>::infinity();
  auto isFloat = [](Value v) {
    return llvm::isa<FloatType>(llvm::cast<RankedTensorType>(v.getType()).getElementType());
  };

  if (isa<kiln::ReduceSumOp, kiln::ReduceProdOp, kiln::ReduceMeanOp>(op)) {
    Value x = op->getOperand(0);
    auto axesAttr = op->getAttrOfType<DenseI64ArrayAttr>("axes");
    auto sa = symbolicAxes(x, axesAttr.asArrayRef());
    if (sa.empty())
      return static_cast<Operation *>(nullptr);
    Value m = mask(x, sa, isa<kiln::ReduceProdOp>(op) ? 1.0 : 0.0);
    if (isa<kiln::ReduceMeanOp>(op)) {
      // The mean divides by the bound's count: scale the masked input by
      // bound / size per symbol. (The op stays, so values that name its
      // result -- converters still building -- stay valid.)
      auto xt = llvm::cast<RankedTensorType>(x.getType());
      Type et = xt.getElementType();
      auto vec = RankedTensorType::get({1}, et);
      Value scale;
      for (auto [d, s] : sa) {
        HostTensor bound;
        bound.elementType = et;
        bound.shape = {1};
        bound.values = {static_cast<double>(xt.getDimSize(d))};
        Value n = kiln::CastOp::create(b, loc, vec, symbolInput(s));
        Value r = kiln::DivOp::create(b, loc, materialize(b, bound, "bound"), n);
        scale = scale ? Value(kiln::MulOp::create(b, loc, scale, r)) : r;
      }
      auto scaled = kiln::MulOp::create(b, loc, m, scale);
      scaled->setAttr(kiln::attr::kMaskedAxes, m.getDefiningOp()->getAttr(kiln::attr::kMaskedAxes));
      m = scaled.getResult();
    }
    op->setOperand(0, m);
    return first;
  }
  if (auto sm = dyn_cast<kiln::SoftmaxOp>(op)) {
    int64_t rank = llvm::cast<RankedTensorType>(sm.getInput().getType()).getRank();
    int64_t axis = static_cast<int64_t>(sm.getAxis()); // I64Attr reads as uint64_t
    if (axis < 0)
      axis += rank;
    auto sa = symbolicAxes(sm.getInput(), {axis});
    if (sa.empty())
      return static_cast<Operation *>(nullptr);
    op->setOperand(0, mask(sm.getInput(), sa, -inf));
    return first;
  }
  if (auto cs = dyn_cast<kiln::CumSumOp>(op)) {
    auto sa = symbolicAxes(cs.getInput(), {static_cast<int64_t>(cs.getAxis())});
    if (sa.empty() || !cs.getReverse())
      return static_cast<Operation *>(nullptr); // forward: reads only earlier positions
    op->setOperand(0, mask(cs.getInput(), sa, 0.0));
    return first;
  }
  if (auto tk = dyn_cast<kiln::TopKIndicesOp>(op)) {
    // Padding ranks last: below (above, for the smallest) every live value.
    auto sa = symbolicAxes(tk.getInput(), {static_cast<int64_t>(tk.getAxis())});
    if (sa.empty() || !isFloat(tk.getInput()))
      return static_cast<Operation *>(nullptr);
    op->setOperand(0, mask(tk.getInput(), sa, tk.getLargest() ? -inf : inf));
    return first;
  }
  if (auto ar = dyn_cast<kiln::ArgReduceOp>(op)) {
    auto sa = symbolicAxes(ar.getInput(), {static_cast<int64_t>(ar.getAxis())});
    if (sa.empty() || !ar.getSelectLastIndex() || !isFloat(ar.getInput()))
      return static_cast<Operation *>(nullptr);
    op->setOperand(0, mask(ar.getInput(), sa, ar.getMax() ? -inf : inf));
    return first;
  }
  if (auto mm = dyn_cast<kiln::MatMulOp>(op)) {
    int64_t lr = llvm::cast<RankedTensorType>(mm.getLhs().getType()).getRank();
    int64_t rr = llvm::cast<RankedTensorType>(mm.getRhs().getType()).getRank();
    auto sl = symbolicAxes(mm.getLhs(), {lr - 1});
    auto sr = symbolicAxes(mm.getRhs(), {rr >= 2 ? rr - 2 : 0});
    if (sl.empty() && sr.empty())
      return static_cast<Operation *>(nullptr);
    if (!sl.empty())
      op->setOperand(0, mask(mm.getLhs(), sl, 0.0));
    if (!sr.empty())
      op->setOperand(1, mask(mm.getRhs(), sr, 0.0));
    return first;
  }
  // A scattering reduction over a symbolic number of updates: the padded
  // updates (repeats of the last) become the reduction's identity.
  auto reductionOf = [](Operation *o) {
    auto r = o->getAttrOfType<StringAttr>("reduction");
    return r ? r.getValue() : StringRef("none");
  };
  if (isa<kiln::ScatterNDOp, kiln::ScatterElementsOp>(op) && reductionOf(op) != "none") {
    Value upd = op->getOperand(2);
    auto ut = llvm::cast<RankedTensorType>(upd.getType());
    SmallVector<int64_t> axes;
    if (auto sc = dyn_cast<kiln::ScatterNDOp>(op)) {
      int64_t batch = llvm::cast<RankedTensorType>(sc.getIndices().getType()).getRank() - 1;
      for (int64_t k = 0; k < batch; ++k)
        axes.push_back(k);
    } else {
      axes.push_back(op->getAttrOfType<IntegerAttr>("axis").getInt());
    }
    auto sa = symbolicAxes(upd, axes);
    if (!sa.empty()) {
      StringRef red = reductionOf(op);
      Type et = ut.getElementType();
      double fill = red == "add" ? 0.0 : red == "mul" ? 1.0 : 0.0;
      if (red == "max" || red == "min") {
        bool mx = red == "max";
        if (llvm::isa<FloatType>(et)) {
          fill = mx ? -inf : inf;
        } else {
          unsigned w = et.getIntOrFloatBitWidth();
          bool uns = et.isUnsignedInteger() || et.isInteger(1);
          fill = uns ? (mx ? 0.0 : std::ldexp(1.0, w) - 1)
                     : (mx ? -std::ldexp(1.0, w - 1) : std::ldexp(1.0, w - 1) - 1);
        }
      }
      op->setOperand(2, mask(upd, sa, fill));
      return first;
    }
  }
  if (auto sc = dyn_cast<kiln::ScatterNDOp>(op);
      sc && !op->hasAttr(kiln::attr::kSymbolIndices) && op->hasAttr(kiln::attr::kUserIndices)) {
    // Index tuples into symbolic axes: negative entries count from the
    // run-time sizes (per tuple position: the symbol's size or the static
    // dimension).
    Value data = sc.getData(), idx = sc.getIndices();
    auto it = llvm::cast<RankedTensorType>(idx.getType());
    int64_t q = it.getShape().back();
    AxisSymbols d = symbols.of(data);
    if (llvm::none_of(llvm::ArrayRef<int32_t>(d).take_front(q), [](int32_t v) { return v >= 0; }))
      return static_cast<Operation *>(nullptr);
    auto dt = llvm::cast<RankedTensorType>(data.getType());
    Type ie = it.getElementType();
    SmallVector<Value> parts;
    for (int64_t j = 0; j < q; ++j) {
      Value part;
      if (d[j] >= 0) {
        part = symbolInput(d[j]);
        if (ie != b.getIntegerType(64))
          part = note(kiln::CastOp::create(b, loc, RankedTensorType::get({1}, ie), part).getResult());
      } else {
        HostTensor c;
        c.elementType = ie;
        c.shape = {1};
        c.values = {static_cast<double>(dt.getDimSize(j))};
        part = note(materialize(b, c, "dim"));
      }
      parts.push_back(part);
    }
    Value sizes = q == 1 ? parts[0]
                         : note(kiln::ConcatOp::create(b, loc, parts, b.getI64IntegerAttr(0))
                                    .getResult());
    HostTensor zero;
    zero.elementType = ie;
    zero.values = {0.0};
    Value z = note(materialize(b, zero, "zero"));
    Value neg = kiln::CompareOp::create(b, loc, idx, z, "lt");
    Value wrapped = kiln::AddOp::create(b, loc, idx, sizes);
    op->setOperand(1, kiln::WhereOp::create(b, loc, neg, wrapped, idx).getResult());
    op->setAttr(kiln::attr::kSymbolIndices, b.getUnitAttr());
    return first;
  }
  if (isa<kiln::GatherOp, kiln::GatherElementsOp, kiln::ScatterElementsOp>(op) &&
      !op->hasAttr(kiln::attr::kSymbolIndices) && op->hasAttr(kiln::attr::kUserIndices)) {
    // Gathering (scattering) along a symbolic axis reads (writes) only real
    // positions for indices in range; negative ones count from the run-time
    // size, not the bound.
    Value data = op->getOperand(0), idx = op->getOperand(1);
    int64_t rank = llvm::cast<RankedTensorType>(data.getType()).getRank();
    int64_t axis = op->getAttrOfType<IntegerAttr>("axis").getInt();
    axis = axis < 0 ? axis + rank : axis;
    auto sa = symbolicAxes(data, {axis});
    if (sa.empty())
      return static_cast<Operation *>(nullptr);
    DenseIntElementsAttr constant; // (none negative: nothing to wrap)
    if (matchPattern(idx, m_Constant(&constant)) &&
        llvm::all_of(constant.getValues<APInt>(), [](const APInt &v) { return !v.isNegative(); })) {
      op->setAttr(kiln::attr::kSymbolIndices, b.getUnitAttr());
      return static_cast<Operation *>(nullptr);
    }
    auto it = llvm::cast<RankedTensorType>(idx.getType());
    auto vec = RankedTensorType::get({1}, it.getElementType());
    Value size = symbolInput(sa[0].second);
    if (it.getElementType() != llvm::cast<RankedTensorType>(size.getType()).getElementType())
      size = note(kiln::CastOp::create(b, loc, vec, size).getResult());
    if (it.getRank() == 0) // (a scalar index stays a scalar: the result's rank follows it)
      size = note(kiln::ReshapeOp::create(b, loc, RankedTensorType::get({}, it.getElementType()),
                                          size)
                      .getResult());
    HostTensor zero;
    zero.elementType = it.getElementType();
    zero.values = {0.0};
    Value z = note(materialize(b, zero, "zero"));
    Value neg = kiln::CompareOp::create(b, loc, idx, z, "lt");
    Value wrapped = kiln::AddOp::create(b, loc, idx, size);
    Value fixed = kiln::WhereOp::create(b, loc, neg, wrapped, idx);
    op->setOperand(1, fixed);
    op->setAttr(kiln::attr::kSymbolIndices, b.getUnitAttr());
    return first;
  }
  if (kiln::BroadcastingOps::contains(op) && !op->hasAttr(kiln::attr::kMaskedAxes)) {
    // Two symbols broadcast on one axis: an operand of size 1 must pad by
    // repeating its one position (SymbolTracker::broadcast); operands whose
    // padding may hold other values are gathered so that it does.
    int64_t rank = llvm::cast<RankedTensorType>(op->getResult(0).getType()).getRank();
    SmallVector<int64_t> meet; // result axes where two symbols meet
    for (int64_t r = 0; r < rank; ++r) {
      int32_t seen = -1;
      bool two = false;
      for (Value v : op->getOperands()) {
        AxisSymbols a = symbols.of(v);
        int64_t d = r - (rank - (int64_t)a.size());
        if (d < 0 || a[d] < 0)
          continue;
        two |= seen >= 0 && seen != a[d];
        seen = a[d];
      }
      if (two)
        meet.push_back(r);
    }
    bool changed = false;
    for (unsigned i = 0; i < op->getNumOperands() && !meet.empty(); ++i) {
      Value v = op->getOperand(i);
      if (SymbolTracker::repeatsLast(v))
        continue;
      AxisSymbols a = symbols.of(v);
      for (int64_t r : meet) {
        int64_t d = r - (rank - (int64_t)a.size());
        if (d < 0 || a[d] < 0)
          continue;
        int64_t dim = llvm::cast<RankedTensorType>(v.getType()).getDimSize(d);
        v = repackAxis(b, loc, v, d, {RepackPiece{{a[d], 0}, {-1, 0}, 1}}, dim);
        note(v);
        changed = true;
      }
      op->setOperand(i, v);
    }
    if (changed)
      return first;
  }
  if (auto g = dyn_cast<kiln::GemmOp>(op)) {
    auto sa = symbolicAxes(g.getA(), {g.getTransA() ? 0 : 1});
    auto sb = symbolicAxes(g.getB(), {g.getTransB() ? 1 : 0});
    if (sa.empty() && sb.empty())
      return static_cast<Operation *>(nullptr);
    if (!sa.empty())
      op->setOperand(0, mask(g.getA(), sa, 0.0));
    if (!sb.empty())
      op->setOperand(1, mask(g.getB(), sb, 0.0));
    return first;
  }
  return static_cast<Operation *>(nullptr);
}

} // namespace kiln::onnx_import
