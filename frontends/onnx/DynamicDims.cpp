//===- DynamicDims.cpp - which axes carry symbolic dimensions -------------===//
#include "frontends/onnx/DynamicDims.h"

#include "dialects/kiln/KilnDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace kiln::onnx_import {

namespace {
int64_t rankOf(Value v) {
  auto t = llvm::dyn_cast<RankedTensorType>(v.getType());
  return t ? t.getRank() : 0;
}
int64_t dimOf(Value v, int64_t d) {
  return llvm::cast<RankedTensorType>(v.getType()).getDimSize(d);
}
} // namespace

int32_t SymbolTracker::addSymbol(const std::string &name, int64_t bound) {
  names.push_back(name);
  bounds.push_back(bound);
  derived.push_back({});
  return names.size() - 1;
}

int32_t SymbolTracker::addComputed(const std::string &name, int64_t bound) {
  int32_t id = addSymbol(name, bound);
  derived[id] = {KILN_SYM_COMPUTED, numComputed++, 0};
  return id;
}

bool SymbolTracker::dependsOnComputed(int32_t s) const {
  if (s < 0 || s >= static_cast<int32_t>(derived.size()))
    return false;
  const Derivation &d = derived[s];
  if (d.op == KILN_SYM_COMPUTED)
    return true;
  if (d.op == KILN_SYM_INPUT)
    return false;
  bool symB = KILN_SYM_B_IS_SYMBOL(d.op);
  return dependsOnComputed(d.a) || (symB && dependsOnComputed(static_cast<int32_t>(d.b)));
}

int32_t SymbolTracker::derive(int64_t op, int32_t a, int64_t b) {
  // (A sum, product or broadcast of two symbols is one symbol in either order.)
  if ((op == KILN_SYM_ADD || op == KILN_SYM_MUL || op == KILN_SYM_BROADCAST) && b < a) {
    int32_t first = static_cast<int32_t>(b);
    b = a;
    a = first;
  }
  for (size_t i = 0; i < names.size(); ++i)
    if (derived[i].op == op && derived[i].a == a && derived[i].b == b)
      return i;
  int64_t ba = bounds[a], bb = 0;
  std::string na = names[a], nb = std::to_string(b);
  bool symB = KILN_SYM_B_IS_SYMBOL(op);
  if (symB) {
    bb = bounds[b];
    nb = names[b];
  }
  int64_t bound = ba;
  std::string name;
  switch (op) {
  case KILN_SYM_MUL_CONST: bound = ba * b; name = na + "*" + nb; break;
  case KILN_SYM_ADD: bound = ba + bb; name = na + "+" + nb; break;
  case KILN_SYM_MUL: bound = ba * bb; name = na + "*" + nb; break;
  case KILN_SYM_ADD_CONST:
    bound = std::max<int64_t>(0, ba + b);
    name = na + (b < 0 ? "" : "+") + nb;
    break;
  case KILN_SYM_MIN_CONST: bound = std::min(ba, b); name = "min(" + na + "," + nb + ")"; break;
  case KILN_SYM_SUB: name = na + "-" + nb; break;
  case KILN_SYM_CEIL_DIV_CONST:
    bound = (ba + b - 1) / b;
    name = "ceil(" + na + "/" + nb + ")";
    break;
  case KILN_SYM_DIV_CONST: bound = ba / b; name = na + "/" + nb; break;
  case KILN_SYM_BROADCAST:
    bound = std::max(ba, bb);
    name = "broadcast(" + na + "," + nb + ")";
    break;
  default: break;
  }
  int32_t id = addSymbol(name, bound);
  derived[id] = {op, a, b};
  return id;
}

int32_t SymbolTracker::product(int32_t s, int64_t factor) {
  if (factor == 1)
    return s;
  if (derived[s].op == KILN_SYM_MUL_CONST) { // (a product of a product: one factor)
    factor *= derived[s].b;
    s = derived[s].a;
  }
  return derive(KILN_SYM_MUL_CONST, s, factor);
}

SymbolTracker::SymSize SymbolTracker::add(SymSize x, SymSize y) {
  if (x.sym < 0)
    return {y.sym, y.c + x.c};
  if (y.sym < 0)
    return {x.sym, x.c + y.c};
  // k*s + m*s is (k+m)*s (a tile, a concat of one value with itself).
  auto factored = [&](int32_t t) -> std::pair<int32_t, int64_t> {
    if (derived[t].op == KILN_SYM_MUL_CONST)
      return {derived[t].a, derived[t].b};
    return {t, 1};
  };
  auto [xs, xk] = factored(x.sym);
  auto [ys, yk] = factored(y.sym);
  if (xs == ys)
    return {product(xs, xk + yk), x.c + y.c};
  return {derive(KILN_SYM_ADD, x.sym, y.sym), x.c + y.c};
}

int32_t SymbolTracker::symbolOf(SymSize x) {
  if (x.sym < 0 || x.c == 0)
    return x.sym;
  return derive(KILN_SYM_ADD_CONST, x.sym, x.c);
}

void SymbolTracker::setSymbols(Value v, const AxisSymbols &a) {
  if (llvm::any_of(a, [](int32_t s) { return s >= 0; }))
    axes[v] = a;
}

AxisSymbols SymbolTracker::of(Value v) const {
  auto it = axes.find(v);
  if (it != axes.end())
    return it->second;
  return AxisSymbols(rankOf(v), -1);
}

bool SymbolTracker::carriesSymbol(Value v) const { return axes.count(v) != 0; }

bool SymbolTracker::repeatsLast(Value v) {
  Operation *def = v.getDefiningOp();
  // (A positional constant states its symbols too, but its padding holds
  // the bound's positions, not copies of the last real one.)
  return !def || (def->hasAttr(kiln::attr::kAxisSymbol) && !llvm::isa<kiln::ConstantOp>(def));
}

bool SymbolTracker::masked(Value v, int64_t d) const {
  Operation *def = v.getDefiningOp();
  auto m = def ? def->getAttrOfType<DenseI64ArrayAttr>(kiln::attr::kMaskedAxes) : nullptr;
  return m && llvm::is_contained(m.asArrayRef(), d);
}

bool SymbolTracker::requireSize(Value v, int64_t d, int64_t size) {
  if (fix || !v || d < 0 || d >= rankOf(v))
    return false;
  int32_t s = of(v)[d];
  // Only symbols the inputs carry (a derived one is not an input's to fix),
  // and not to its own bound: a static size equal to it was most likely
  // computed from it (then the op is refused as before, naming the symbol).
  if (s < 0 || isDerived(s) || size == bounds[s])
    return false;
  fix = Fix{s, size, -1};
  return true;
}

bool SymbolTracker::requireEqual(Value a, int64_t da, Value b, int64_t db) {
  if (fix || !a || !b || da < 0 || db < 0 || da >= rankOf(a) || db >= rankOf(b))
    return false;
  int32_t sa = of(a)[da], sb = of(b)[db];
  if (sa >= 0 && sb >= 0) {
    if (sa == sb || isDerived(sa) || isDerived(sb))
      return false;
    fix = Fix{std::max(sa, sb), 0, std::min(sa, sb)};
    return true;
  }
  if (sa >= 0)
    return requireSize(a, da, dimOf(b, db));
  if (sb >= 0)
    return requireSize(b, db, dimOf(a, da));
  return false;
}

bool SymbolTracker::constrain(StringRef opName, ValueRange operands,
                              DictionaryAttr attrs) {
  if (empty() || fix)
    return false;
  auto boolAttr = [&](StringRef n) {
    auto a = attrs ? attrs.getAs<BoolAttr>(n) : nullptr;
    return a && a.getValue();
  };
  auto intAttr = [&](StringRef n, int64_t dflt) {
    auto a = attrs ? attrs.getAs<IntegerAttr>(n) : nullptr;
    return a ? a.getInt() : dflt;
  };
  auto ranked = [&](size_t i) {
    return i < operands.size() && operands[i] &&
           llvm::isa<RankedTensorType>(operands[i].getType());
  };
  if (opName == kiln::GemmOp::getOperationName()) {
    if (!ranked(0) || !ranked(1) || rankOf(operands[0]) != 2 || rankOf(operands[1]) != 2)
      return false;
    Value a = operands[0], b = operands[1];
    int64_t kA = boolAttr("trans_a") ? 0 : 1, kB = boolAttr("trans_b") ? 1 : 0;
    return requireEqual(a, kA, b, kB);
  }
  if (opName == kiln::MatMulOp::getOperationName()) {
    if (!ranked(0) || !ranked(1) || rankOf(operands[0]) < 1 || rankOf(operands[1]) < 1)
      return false;
    Value l = operands[0], r = operands[1];
    int64_t rr = rankOf(r);
    return requireEqual(l, rankOf(l) - 1, r, rr >= 2 ? rr - 2 : 0);
  }
  if (opName == kiln::BatchNormOp::getOperationName()) {
    if (!ranked(0) || rankOf(operands[0]) < 2)
      return false;
    for (size_t i = 1; i < operands.size(); ++i)
      if (ranked(i) && rankOf(operands[i]) == 1 && requireEqual(operands[i], 0, operands[0], 1))
        return true;
    return false;
  }
  if (opName == kiln::LayerNormOp::getOperationName()) {
    if (!ranked(0))
      return false;
    Value in = operands[0];
    int64_t rank = rankOf(in), axis = intAttr("axis", -1);
    for (size_t i = 1; i < operands.size(); ++i) {
      if (!ranked(i))
        continue;
      Value p = operands[i];
      // Right-aligned over the normalized axes [axis, rank).
      for (int64_t d = 0; d < rankOf(p); ++d) {
        int64_t id = d + rank - rankOf(p);
        if (id >= axis && id >= 0 && requireEqual(p, d, in, id))
          return true;
      }
    }
    return false;
  }
  if (opName == kiln::ConvOp::getOperationName()) {
    if (!ranked(0) || !ranked(1) || rankOf(operands[0]) < 3 ||
        rankOf(operands[1]) != rankOf(operands[0]))
      return false;
    Value x = operands[0], w = operands[1];
    int64_t group = std::max<int64_t>(1, intAttr("group", 1));
    // The weight's input channels are the data's per group.
    if (of(w)[1] >= 0 && of(x)[1] < 0 && dimOf(x, 1) % group == 0)
      return requireSize(w, 1, dimOf(x, 1) / group);
    if (group == 1 && requireEqual(w, 1, x, 1))
      return true;
    // The bias has one value per output channel.
    return ranked(2) && rankOf(operands[2]) == 1 && requireEqual(operands[2], 0, w, 0);
  }
  if (opName == kiln::ConcatOp::getOperationName()) {
    int64_t rank = ranked(0) ? rankOf(operands[0]) : 0;
    int64_t axis = intAttr("axis", 0);
    axis = axis < 0 ? axis + rank : axis;
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis)
        continue;
      for (size_t i = 1; i < operands.size(); ++i)
        if (ranked(i) && rankOf(operands[i]) == rank &&
            requireEqual(operands[i], d, operands[0], d))
          return true;
    }
    return false;
  }
  return false;
}

/// numpy broadcasting of `operands` to the op's first result: a result axis
/// carries a symbol when an operand's aligned axis does; every other operand
/// must carry the same symbol there or have size 1 (a static size there
/// would pin the symbol to the bound).
LogicalResult SymbolTracker::broadcast(Operation *op, ValueRange operands,
                                       std::string &why) {
  Value res = op->getResult(0);
  int64_t rank = rankOf(res);
  AxisSymbols out(rank, -1);
  for (int64_t r = 0; r < rank; ++r) {
    for (Value v : operands) {
      int64_t d = r - (rank - rankOf(v));
      if (d < 0)
        continue;
      int32_t s = of(v)[d];
      if (s < 0)
        continue;
      if (out[r] >= 0 && out[r] != s) {
        // Two symbols with one bound broadcast as numpy does when both
        // pad by repeating their last position (a run gives equal sizes
        // or one of them 1: the runtime checks BROADCAST).
        bool safe = bounds[out[r]] == bounds[s];
        for (Value w : operands) {
          int64_t e = r - (rank - rankOf(w));
          if (e >= 0 && of(w)[e] >= 0 && !repeatsLast(w))
            safe = false;
        }
        if (!safe) {
          why = "dynamic dimensions " + symbolName(out[r]) + " and " + symbolName(s) +
                " meet on one axis (Kiln cannot prove they are equal)";
          return failure();
        }
        s = derive(KILN_SYM_BROADCAST, std::min(out[r], s), std::max(out[r], s));
      }
      out[r] = s;
    }
    if (out[r] < 0)
      continue;
    for (auto [i, v] : llvm::enumerate(operands)) {
      int64_t d = r - (rank - rankOf(v));
      if (d < 0 || of(v)[d] >= 0 || dimOf(v, d) == 1)
        continue;
      // The symbol must be that size: fix it (the operands carrying it).
      // (requireSize refuses the bound itself: a static size equal to it is
      // most likely derived from it, e.g. an iota over the padded axis.)
      for (Value w : operands) {
        int64_t e = r - (rank - rankOf(w));
        if (e >= 0 && of(w)[e] == out[r] && requireSize(w, e, dimOf(v, d)))
          return failure();
      }
      why = "operand " + std::to_string(i) + " has the static size " +
            std::to_string(dimOf(v, d)) + " along dynamic dimension " +
            symbolName(out[r]);
      return failure();
    }
  }
  setSymbols(res, out);
  return success();
}

std::optional<AxisSymbols> SymbolTracker::reshapeSymbols(Value in, ArrayRef<int64_t> outS,
                                                         std::string &why, bool dryRun) {
  // The shapes in groups of equal element counts (size-1 axes on
  // their own). In a group, a symbolic input axis survives on an
  // output axis of the same size with the same count before it; one
  // that is the outermost of a merge makes the merged axis a derived
  // symbol (symbol x the static rest: its real elements are a
  // prefix); a derived one split back into its base's bound and its
  // factor gives the outer axis the base symbol.
  auto mixes = [&](int32_t s) -> std::optional<AxisSymbols> {
    why = "it merges or splits dynamic dimension " + symbolName(s) +
          ", so padding it to its bound would change the result";
    return std::nullopt;
  };
  AxisSymbols a = of(in), out(outS.size(), -1);
  auto inS = llvm::cast<RankedTensorType>(in.getType()).getShape();
  int64_t rank = outS.size();
  int64_t i = 0, o = 0, n = inS.size();
  while (i < n || o < rank) {
    if (i < n && o < rank && inS[i] == 1 && outS[o] == 1 && a[i] >= 0) {
      out[o++] = a[i++]; // (a symbol at a bound of 1)
      continue;
    }
    if (i < n && inS[i] == 1 && a[i] < 0) {
      ++i;
      continue;
    }
    if (o < rank && outS[o] == 1 && !(i < n && inS[i] == 1)) {
      ++o;
      continue;
    }
    if (i >= n || o >= rank)
      break;
    int64_t i0 = i, o0 = o, pi = inS[i++], po = outS[o++];
    growGroup(inS, outS, i, o, pi, po); // (counts that never agree: checked below)
    bool sym = false;
    for (int64_t k = i0; k < i; ++k)
      sym |= a[k] >= 0;
    if (!sym)
      continue;
    if (pi == po && i - i0 == 1 && o - o0 == 1) {
      out[o0] = a[i0];
      continue;
    }
    bool innerStatic = true;
    for (int64_t k = i0 + 1; k < i; ++k)
      innerStatic &= a[k] < 0;
    int32_t t = a[i0];
    if (pi == po && t >= 0 && innerStatic && inS[i0] > 0 && outS[o0] > 0) {
      // The symbol outermost (its real elements a prefix): base x f x the
      // static inner count live elements, the output's outer axis takes
      // all of them that its static inner axes do not (a merge: [B, 32]
      // -> [B*32]; back: [B*4, 8] -> [B, 32]; both: [B, 32] -> [B*4, 8]).
      int32_t base = t;
      int64_t f = 1;
      if (derived[t].op == KILN_SYM_MUL_CONST) {
        base = derived[t].a;
        f = derived[t].b;
      }
      int64_t live = f * (pi / inS[i0]), innerOut = po / outS[o0];
      if (innerOut > 0 && live % innerOut == 0) {
        out[o0] = dryRun ? t : product(base, live / innerOut);
        continue;
      }
    }
    // One symbol split into an outer axis and static inner ones (its real
    // elements stay a prefix): the outer axis carries it divided by the
    // inner count f -- a product's factor divided, or DIV_CONST (a run's
    // size must be a multiple of f).
    if (pi == po && i - i0 == 1 && t >= 0 && o - o0 >= 2 && outS[o0] > 0) {
      int64_t f = po / outS[o0];
      if (dryRun)
        out[o0] = t;
      else if (derived[t].op == KILN_SYM_MUL_CONST && derived[t].b % f == 0)
        out[o0] = product(derived[t].a, derived[t].b / f);
      else
        out[o0] = derive(KILN_SYM_DIV_CONST, t, f);
      continue;
    }
    for (int64_t k = i0; k < i; ++k)
      if (a[k] >= 0)
        return mixes(a[k]);
  }
  for (; i < n; ++i)
    if (a[i] >= 0)
      return mixes(a[i]);
  return out;
}

LogicalResult SymbolTracker::visit(Operation *op, std::string &why) {
  if (op->getNumResults() == 0)
    return success();
  bool any = llvm::any_of(op->getOperands(), [&](Value v) { return carriesSymbol(v); });
  if (!any && !op->hasAttr(kiln::attr::kAxisSymbol))
    return success(); // static in, static out
  Value res = op->getResult(0);
  LogicalResult r = visitOp(op, why);
  // An op that repacks an axis (Importer::repackAxis), or a constant whose
  // elements depend only on their position (Trilu's mask), states its
  // symbols: [axis, symbol] pairs.
  if (succeeded(r))
    if (auto as = op->getAttrOfType<DenseI64ArrayAttr>(kiln::attr::kAxisSymbol)) {
      AxisSymbols out = of(res);
      for (int64_t i = 0; i + 1 < (int64_t)as.size(); i += 2)
        if (as[i] >= 0 && as[i] < (int64_t)out.size())
          out[as[i]] = static_cast<int32_t>(as[i + 1]);
      axes.erase(res);
      setSymbols(res, out);
    }
  return r;
}

LogicalResult SymbolTracker::visitOp(Operation *op, std::string &why) {
  Value res = op->getResult(0);
  int64_t rank = rankOf(res);
  auto mixes = [&](int32_t s, const std::string &what) {
    why = what + " dynamic dimension " + symbolName(s) +
          ", so padding it to its bound would change the result";
    return failure();
  };
  // Operands that must be static (weights, per-channel parameters).
  auto mustBeStatic = [&](ValueRange vs, const char *what) -> LogicalResult {
    for (Value v : vs)
      for (int32_t s : of(v))
        if (s >= 0) {
          why = std::string("its ") + what + " has dynamic dimension " + symbolName(s);
          return failure();
        }
    return success();
  };
  // Only the leading (batch) axis may be dynamic.
  auto batchOnly = [&](Value in) -> LogicalResult {
    AxisSymbols a = of(in);
    for (size_t d = 1; d < a.size(); ++d)
      if (a[d] >= 0)
        return mixes(a[d], "it mixes positions along");
    AxisSymbols out(rank, -1);
    if (!a.empty() && rank)
      out[0] = a[0];
    setSymbols(res, out);
    return success();
  };
  // Reductions/normalizations over `reduced` axes of `in`; `invariant`:
  // repeating the last position (the padding) never changes the result.
  auto reduce = [&](Value in, llvm::ArrayRef<int64_t> reduced, bool keepdims,
                    bool invariant = false) -> LogicalResult {
    AxisSymbols a = of(in), out;
    for (int64_t d = 0; d < (int64_t)a.size(); ++d) {
      bool red = llvm::is_contained(reduced, d);
      if (red && a[d] >= 0 && !invariant && !masked(in, d))
        return mixes(a[d], "it reduces over");
      if (!red || keepdims)
        out.push_back(red ? -1 : a[d]);
    }
    out.resize(rank, -1);
    setSymbols(res, out);
    return success();
  };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      // (Static; visit() applies the symbols a positional one states.)
      .Case<kiln::ConstantOp>([&](auto) { return success(); })
      .Case<kiln::ConvOp>([&](kiln::ConvOp c) -> LogicalResult {
        // Output channel o reads only filter o: a symbol on the filters
        // (and the same one on the bias) carries over to the channels.
        AxisSymbols w = of(c.getWeight());
        int32_t filters = w.empty() ? -1 : w[0];
        if (!w.empty())
          w[0] = -1;
        for (int32_t s : w)
          if (s >= 0) {
            why = "its weight has dynamic dimension " + symbolName(s) +
                  " on an axis other than the filters'";
            return failure();
          }
        if (Value bias = c.getBias())
          if (of(bias)[0] != filters) {
            why = "its bias and weight differ along dynamic dimension " +
                  symbolName(std::max(of(bias)[0], filters));
            return failure();
          }
        if (failed(batchOnly(c.getInput())))
          return failure();
        if (filters >= 0) {
          AxisSymbols out = of(res);
          out[1] = filters;
          setSymbols(res, out);
        }
        return success();
      })
      .Case<kiln::MaxPoolOp, kiln::AvgPoolOp, kiln::GlobalAvgPoolOp>(
          [&](Operation *p) { return batchOnly(p->getOperand(0)); })
      .Case<kiln::BatchNormOp>([&](kiln::BatchNormOp bn) {
        if (failed(mustBeStatic(bn->getOperands().drop_front(), "scale, bias, mean or variance")))
          return failure();
        return batchOnly(bn.getInput());
      })
      .Case<kiln::GemmOp>([&](kiln::GemmOp g) {
        AxisSymbols a = of(g.getA()), b = of(g.getB());
        int rowA = g.getTransA() ? 1 : 0, kB = g.getTransB() ? 1 : 0;
        if (a[1 - rowA] >= 0 && !masked(g.getA(), 1 - rowA))
          return mixes(a[1 - rowA], "it contracts over");
        if (b[kB] >= 0 && !masked(g.getB(), kB))
          return mixes(b[kB], "it contracts over");
        AxisSymbols out{a[rowA], b[1 - kB]};
        setSymbols(res, out);
        if (Value c = g.getC()) {
          AxisSymbols cs = of(c);
          int64_t off = 2 - rankOf(c);
          for (int64_t d = 0; d < rankOf(c); ++d) {
            int32_t want = out[d + off];
            if (cs[d] >= 0 && want >= 0 && cs[d] != want)
              return mixes(cs[d], "its bias meets");
            if (cs[d] >= 0 && want < 0) {
              if (dimOf(res, d + off) != 1 && dimOf(res, d + off) != dimOf(c, d))
                return mixes(cs[d], "it broadcasts");
              out[d + off] = cs[d];
            }
            if (cs[d] < 0 && want >= 0 && dimOf(c, d) != 1)
              return mixes(want, "its bias has a static size along");
          }
          setSymbols(res, out);
        }
        return success();
      })
      .Case<kiln::MatMulIntegerOp, kiln::MatMulNBitsOp>([&](auto m) -> LogicalResult {
        // Rows of the lhs (every axis but the contracted last) carry over;
        // the weights (and their zero points and scales) are static.
        Value l = m.getLhs();
        AxisSymbols ls = of(l);
        int64_t lr = ls.size();
        if (ls[lr - 1] >= 0 && !masked(l, lr - 1))
          return mixes(ls[lr - 1], "it contracts over");
        for (Value v : m->getOperands().drop_front())
          for (int32_t s : of(v))
            if (s >= 0) {
              why = "its weights or zero points have dynamic dimension " + symbolName(s);
              return failure();
            }
        ls[lr - 1] = -1;
        setSymbols(res, ls);
        return success();
      })
      .Case<kiln::MatMulOp>([&](kiln::MatMulOp m) {
        Value l = m.getLhs(), r = m.getRhs();
        AxisSymbols ls = of(l), rs = of(r);
        int64_t lr = ls.size(), rr = rs.size();
        // Contraction: the last axis of lhs, the second-to-last (or only) of rhs.
        int64_t kr = rr >= 2 ? rr - 2 : 0;
        if (ls[lr - 1] >= 0 && !masked(l, lr - 1))
          return mixes(ls[lr - 1], "it contracts over");
        if (rs[kr] >= 0 && !masked(r, kr))
          return mixes(rs[kr], "it contracts over");
        AxisSymbols out(rank, -1);
        int64_t batch = rank - (lr >= 2 ? 1 : 0) - (rr >= 2 ? 1 : 0);
        if (lr >= 2)
          out[batch] = ls[lr - 2];
        if (rr >= 2)
          out[rank - 1] = rs[rr - 1];
        // Batch axes broadcast as in numpy.
        for (int64_t d = 0; d < batch; ++d) {
          for (auto [v, s, vr] : {std::tuple{l, &ls, lr}, std::tuple{r, &rs, rr}}) {
            int64_t vd = d - (batch - (vr - 2));
            if (vr < 2 || vd < 0)
              continue;
            int32_t sym = (*s)[vd];
            if (sym >= 0 && out[d] >= 0 && out[d] != sym)
              return mixes(sym, "its batch axes meet");
            if (sym >= 0)
              out[d] = sym;
          }
          for (auto [v, s, vr] : {std::tuple{l, &ls, lr}, std::tuple{r, &rs, rr}}) {
            int64_t vd = d - (batch - (vr - 2));
            if (vr < 2 || vd < 0 || out[d] < 0)
              continue;
            if ((*s)[vd] < 0 && dimOf(v, vd) != 1)
              return mixes(out[d], "an operand has a static batch size along");
          }
        }
        setSymbols(res, out);
        return success();
      })
      .Case<kiln::SoftmaxOp>([&](kiln::SoftmaxOp s) {
        int64_t ax = s.getAxis() < 0 ? s.getAxis() + rank : s.getAxis();
        if (failed(reduce(s.getInput(), {ax}, true)))
          return failure();
        setSymbols(res, of(s.getInput())); // (each position is normalized)
        return success();
      })
      .Case<kiln::ReduceSumOp, kiln::ReduceMeanOp, kiln::ReduceMaxOp, kiln::ReduceMinOp,
            kiln::ReduceProdOp>([&](auto r) {
        llvm::SmallVector<int64_t> ax(r.getAxes());
        bool invariant = isa<kiln::ReduceMaxOp, kiln::ReduceMinOp>(r.getOperation());
        return reduce(r.getInput(), ax, r.getKeepdims(), invariant);
      })
      .Case<kiln::ArgReduceOp>([&](kiln::ArgReduceOp r) {
        // The first extreme index is never a repeat of the last position.
        return reduce(r.getInput(), {static_cast<int64_t>(r.getAxis())}, r.getKeepdims(), !r.getSelectLastIndex());
      })
      .Case<kiln::CumSumOp>([&](kiln::CumSumOp c) {
        // Forward sums read only earlier positions.
        if (failed(reduce(c.getInput(), {static_cast<int64_t>(c.getAxis())}, true, !c.getReverse())))
          return failure();
        setSymbols(res, of(c.getInput()));
        return success();
      })
      .Case<kiln::LayerNormOp>([&](kiln::LayerNormOp ln) {
        if (failed(mustBeStatic(ln->getOperands().drop_front(), "scale or bias")))
          return failure();
        int64_t ax = ln.getAxis() < 0 ? ln.getAxis() + rank : ln.getAxis();
        llvm::SmallVector<int64_t> red;
        for (int64_t d = ax; d < rank; ++d)
          red.push_back(d);
        return reduce(ln.getInput(), red, true);
      })
      .Case<kiln::AttentionOp>([&](kiln::AttentionOp a) {
        // Rows of the query are independent; keys and values are mixed.
        for (Value kv : {a.getKey(), a.getValue()}) {
          AxisSymbols s = of(kv);
          for (int64_t d = s.size() - 2; d < (int64_t)s.size(); ++d)
            if (s[d] >= 0)
              return mixes(s[d], "it attends over");
        }
        AxisSymbols q = of(a.getQuery());
        if (q.back() >= 0)
          return mixes(q.back(), "it contracts over");
        if (Value mask = a.getMask()) {
          AxisSymbols ms = of(mask);
          if (!ms.empty() && ms.back() >= 0)
            return mixes(ms.back(), "its mask runs over");
        }
        llvm::SmallVector<Value> ops{a.getQuery(), a.getKey(), a.getValue()};
        if (Value mask = a.getMask())
          ops.push_back(mask);
        return broadcast(op, ops, why);
      })
      .Case<kiln::ReshapeOp>([&](kiln::ReshapeOp r) -> LogicalResult {
        // A view of the padded buffer merging dynamic axes, read at real
        // positions only (GatherND's linearized tuples, compactReshape's
        // gather): the merged axis is the bound's; the creator states the
        // other axes' symbols (kiln.axis_symbol).
        if (r->hasAttr(kiln::attr::kRepacked))
          return success();
        std::optional<AxisSymbols> out = reshapeSymbols(
            r.getInput(), llvm::cast<RankedTensorType>(res.getType()).getShape(), why);
        if (!out)
          return failure();
        setSymbols(res, *out);
        // Regrouped static axes behind a symbol ([B, 12, ..] <-> [B*12, ..]):
        // the result's symbols, for the code generator (LiveExtents maps
        // the input's live rows onto them).
        auto multiple = [&](int32_t sym) {
          return sym >= 0 && derived[sym].op == KILN_SYM_MUL_CONST;
        };
        if (llvm::any_of(*out, multiple) || llvm::any_of(of(r.getInput()), multiple)) {
          SmallVector<int64_t> pairs;
          for (auto [d, sym] : llvm::enumerate(*out))
            if (sym >= 0)
              pairs.append({static_cast<int64_t>(d), sym});
          if (!pairs.empty() && !r->hasAttr(kiln::attr::kAxisSymbol))
            r->setAttr(kiln::attr::kAxisSymbol, DenseI64ArrayAttr::get(r.getContext(), pairs));
        }
        return success();
      })
      .Case<kiln::TransposeOp>([&](kiln::TransposeOp t) {
        AxisSymbols a = of(t.getInput()), out;
        for (int64_t p : t.getPerm())
          out.push_back(a[p]);
        setSymbols(res, out);
        return success();
      })
      .Case<kiln::SliceOp>([&](kiln::SliceOp s) {
        AxisSymbols a = of(s.getInput());
        // A pinned symbol (1 or K at run time, see pins) keeps its first K.
        auto pinned = s->getAttrOfType<IntegerAttr>(kiln::attr::kPinsSymbol);
        for (size_t d = 0; d < a.size(); ++d) {
          bool whole = s.getOffsets()[d] == 0 && s.getStrides()[d] == 1 &&
                       s.getSizes()[d] == dimOf(s.getInput(), d);
          if (a[d] >= 0 && !whole && pinned && pinned.getInt() == a[d] &&
              s.getOffsets()[d] == 0 && s.getStrides()[d] == 1)
            a[d] = -1;
          else if (a[d] >= 0 && !whole)
            return mixes(a[d], "it slices");
        }
        setSymbols(res, a);
        return success();
      })
      .Case<kiln::ConcatOp>([&](kiln::ConcatOp c) {
        int64_t ax = c.getAxis() < 0 ? c.getAxis() + rank : c.getAxis();
        AxisSymbols out(rank, -1);
        // (A repacked concat's axis is gathered into place by the op after it.)
        bool repacked = c->hasAttr(kiln::attr::kRepacked);
        for (Value v : c.getInputs()) {
          AxisSymbols s = of(v);
          if (repacked)
            s[ax] = -1;
          if (s[ax] >= 0)
            return mixes(s[ax], "it concatenates along");
          for (int64_t d = 0; d < rank; ++d)
            if (s[d] >= 0)
              out[d] = s[d];
        }
        for (auto [i, v] : llvm::enumerate(c.getInputs())) {
          AxisSymbols s = of(v);
          if (repacked)
            s[ax] = -1;
          for (int64_t d = 0; d < rank; ++d)
            if (out[d] >= 0 && s[d] != out[d])
              return mixes(out[d], "operand " + std::to_string(i) +
                                       " has a static size (or another symbol) along");
        }
        setSymbols(res, out);
        return success();
      })
      .Case<kiln::GatherOp>([&](kiln::GatherOp g) {
        AxisSymbols d = of(g.getData()), ix = of(g.getIndices());
        int64_t ax = g.getAxis() < 0 ? g.getAxis() + (int64_t)d.size() : g.getAxis();
        // (MaskSymbols wraps negative indices by the run-time size.)
        if (d[ax] >= 0 && !g->hasAttr(kiln::attr::kSymbolIndices))
          return mixes(d[ax], "it gathers along");
        AxisSymbols out(d.begin(), d.begin() + ax);
        out.append(ix.begin(), ix.end());
        out.append(d.begin() + ax + 1, d.end());
        out.resize(rank, -1);
        setSymbols(res, out);
        return success();
      })
      .Case<kiln::GatherElementsOp>([&](kiln::GatherElementsOp g) {
        AxisSymbols d = of(g.getData()), ix = of(g.getIndices());
        int64_t ax = g.getAxis() < 0 ? g.getAxis() + (int64_t)d.size() : g.getAxis();
        if (d[ax] >= 0 && !g->hasAttr(kiln::attr::kSymbolIndices))
          return mixes(d[ax], "it gathers along");
        AxisSymbols out = ix;
        for (int64_t k = 0; k < (int64_t)d.size(); ++k) {
          if (k == ax || d[k] == ix[k])
            continue;
          return mixes(d[k] >= 0 ? d[k] : ix[k],
                       "its data and indices differ (static or another symbol) along");
        }
        setSymbols(res, out);
        return success();
      })
      .Case<kiln::TopKIndicesOp>([&](kiln::TopKIndicesOp t) -> LogicalResult {
        // Along a symbolic axis, float padding is masked to rank last
        // (MaskSymbols) where the ranking serves a run-time k (marked
        // kSymbolIndices: its users keep k, a data-dependent size): a full
        // ranking lists the live positions first, so it keeps the symbol.
        // (A static k could exceed the run's size.)
        AxisSymbols a = of(t.getInput());
        int64_t ax = static_cast<int64_t>(t.getAxis());
        bool isFloat = llvm::isa<FloatType>(
            llvm::cast<RankedTensorType>(t.getInput().getType()).getElementType());
        if (a[ax] >= 0 && (!isFloat || !t->hasAttr(kiln::attr::kSymbolIndices)))
          return mixes(a[ax], "it ranks along");
        if (a[ax] >= 0 && static_cast<int64_t>(t.getK()) != dimOf(t.getInput(), ax))
          a[ax] = -1;
        setSymbols(res, a);
        return success();
      })
      .Case<kiln::NonMaxSuppressionOp>([&](kiln::NonMaxSuppressionOp) -> LogicalResult {
        // It reads the boxes up to its count operand (the boxes axis' run-time
        // size); its importer refuses dynamic batches and classes. Each line
        // is filled to its end.
        setSymbols(res, AxisSymbols(rank, -1));
        return success();
      })
      .Case<kiln::RoiAlignOp>([&](kiln::RoiAlignOp ra) -> LogicalResult {
        // A region per row of rois (and of batch_indices: the same size);
        // the channels are the images'. (The importer refuses a dynamic
        // image batch.)
        AxisSymbols r = of(ra.getRois()), bi = of(ra.getBatchIndices()), x = of(ra.getInput());
        if (r[0] >= 0 && bi[0] >= 0 && r[0] != bi[0])
          return mixes(r[0], "its rois and batch_indices give different sizes to");
        setSymbols(res, AxisSymbols{r[0] >= 0 ? r[0] : bi[0], x[1], -1, -1});
        return success();
      })
      .Case<kiln::ScatterElementsOp>([&](kiln::ScatterElementsOp sc) -> LogicalResult {
        // Position-wise off the axis: the indices and updates carry the
        // data's symbols there (or none where they are static).
        // Along the axis: indices in range write real positions only
        // (MaskSymbols wraps negative ones by the run-time size); padded
        // indices repeat the last one with its update, harmless for a
        // plain write; a reduction's padded updates are masked to its
        // identity.
        AxisSymbols d = of(sc.getData());
        int64_t ax = static_cast<int64_t>(sc.getAxis());
        if (d[ax] >= 0 && !sc->hasAttr(kiln::attr::kSymbolIndices))
          return mixes(d[ax], "it scatters along");
        for (Value v : {sc.getIndices(), sc.getUpdates()}) {
          AxisSymbols s = of(v);
          for (int64_t k = 0; k < (int64_t)s.size(); ++k) {
            if (k == ax && s[k] >= 0 && sc.getReduction() != "none" &&
                !masked(sc.getUpdates(), k))
              return mixes(s[k], "it reduces its updates along");
            if (k != ax && s[k] != d[k])
              return mixes(s[k] >= 0 ? s[k] : d[k],
                           "its indices or updates differ from its data along");
          }
        }
        setSymbols(res, d);
        return success();
      })
      .Case<kiln::ScatterNDOp>([&](kiln::ScatterNDOp sc) -> LogicalResult {
        // Indexed axes: negative entries wrapped by MaskSymbols; the slices'
        // axes position-wise. Padded index tuples repeat the last one with
        // its update: harmless for a plain write; a reduction's padded
        // updates are masked to its identity.
        AxisSymbols d = of(sc.getData()), ix = of(sc.getIndices()), u = of(sc.getUpdates());
        int64_t q = llvm::cast<RankedTensorType>(sc.getIndices().getType()).getShape().back();
        for (int64_t k = 0; k < q; ++k)
          if (d[k] >= 0 && !sc->hasAttr(kiln::attr::kSymbolIndices))
            return mixes(d[k], "it scatters along");
        if (ix.back() >= 0)
          return mixes(ix.back(), "its index tuples run along");
        int64_t batch = ix.size() - 1;
        for (int64_t k = 0; k < batch; ++k)
          if ((ix[k] >= 0 || u[k] >= 0) && sc.getReduction() != "none" &&
              !masked(sc.getUpdates(), k))
            return mixes(ix[k] >= 0 ? ix[k] : u[k], "it reduces its updates along");
        for (int64_t k = batch; k < (int64_t)u.size(); ++k)
          if (u[k] != d[q + k - batch])
            return mixes(u[k] >= 0 ? u[k] : d[q + k - batch],
                         "its updates differ from its data along");
        setSymbols(res, d);
        return success();
      })
      .Case<kiln::WhereOp>([&](kiln::WhereOp w) -> LogicalResult {
        if (w->hasAttr(kiln::attr::kMaskedAxes)) { // a mask: positions stay
          setSymbols(res, of(w->getOperand(1)));
          return success();
        }
        return broadcast(w, w->getOperands(), why);
      })
      .Default([&](Operation *o) -> LogicalResult {
        if (o->hasTrait<OpTrait::SameOperandsAndResultType>() ||
            o->hasTrait<OpTrait::SameOperandsAndResultShape>() ||
            kiln::BroadcastingOps::contains(o) || llvm::isa<kiln::ExpandOp>(o))
          return broadcast(o, o->getOperands(), why);
        why = "'" + o->getName().getStringRef().str() +
              "' has no rule for dynamic dimensions yet";
        return failure();
      });
}

} // namespace kiln::onnx_import
