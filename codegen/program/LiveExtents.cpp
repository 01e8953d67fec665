//===- LiveExtents.cpp - kernels that compute only a run's extents --------===//
//
// See LiveExtents.h. Each op gets a rule: per operand axis, the result axis
// it is read along position by position (or read whole, or read at its live
// extent by a reduction that stops there), and which result axes its kernel
// can compute only at the live extent. Forward, the rules give every
// value's symbols; backward, the axes read past their live extent.
//
//===----------------------------------------------------------------------===//
#include "LiveExtents.h"

#include "dialects/kiln/KilnDialect.h"
#include "kiln/runtime.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace kiln::codegen {
namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getShape();
}

/// How an op reads its operands along the result's axis 0.
struct RowUse {
  int sym = -1;                 // the result's lead, or -1
  SmallVector<bool> rowWise;    // per operand: read row by row (row i for row i)
};

/// The axis-0 rules of the kernels that compute live rows only (conv,
/// pool, gemm, reductions over other axes, fusions of those): what they
/// read row by row along axis 0.
class AxisZeroRules {
public:
  explicit AxisZeroRules(const LiveExtents &x) : x(x) {}
  const LiveExtents &x;
  llvm::DenseMap<Value, int> lead; // fusion-body values
  int leadOf(Value v) const {
    auto it = lead.find(v);
    return it == lead.end() ? x.symbolOf(v, 0) : it->second;
  }

  /// The lead of `op`'s result and which operands it reads row-wise; sym -1
  /// (nothing row-wise) for an op outside the rules.
  RowUse use(Operation *op) {
    RowUse u;
    u.rowWise.assign(op->getNumOperands(), false);
    if (op->getNumResults() != 1)
      return u;
    auto rt = llvm::dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!rt || rt.getRank() == 0 || rt.getDimSize(0) <= 1)
      return u;
    int64_t rank = rt.getRank(), rows = rt.getDimSize(0);
    // Operand k, read with its axis 0 as the result's: must carry the lead.
    auto rowOperand = [&](unsigned k) -> bool {
      Value x = op->getOperand(k);
      auto xt = llvm::cast<RankedTensorType>(x.getType());
      int s = leadOf(x);
      if (xt.getRank() == 0 || xt.getDimSize(0) != rows || s < 0 || (u.sym >= 0 && s != u.sym))
        return false;
      u.sym = s;
      u.rowWise[k] = true;
      return true;
    };
    auto fail = [&] {
      u.sym = -1;
      u.rowWise.assign(op->getNumOperands(), false);
      return u;
    };
    // Elementwise with numpy broadcasting: an operand of the result's rank
    // and rows is read row-wise (and must carry the lead); one of lower rank
    // or a single row is broadcast (read whole).
    if (isElementwise(op) || isa<BatchNormOp>(op)) {
      // Integer division traps on the garbage a skipped row may hold.
      if (isa<DivOp, ModOp>(op) && !llvm::isa<FloatType>(rt.getElementType()))
        return fail();
      unsigned first = 0, last = op->getNumOperands();
      if (isa<BatchNormOp>(op))
        last = 1; // scale, bias, mean, variance: per channel
      for (unsigned k = first; k < last; ++k) {
        auto xt = llvm::cast<RankedTensorType>(op->getOperand(k).getType());
        if (xt.getRank() < rank || xt.getDimSize(0) == 1)
          continue;
        if (!rowOperand(k))
          return fail();
      }
      return u.sym >= 0 ? u : fail();
    }
    // Ops that keep axis 0 of their first operand as the result's (the
    // others are weights, scales or biases, read whole).
    auto firstKeepsRows = [&]() -> bool {
      return llvm::TypeSwitch<Operation *, bool>(op)
          .Case<ConvOp, MaxPoolOp, AvgPoolOp, GlobalAvgPoolOp>([](auto) { return true; })
          .Case<SoftmaxOp, LayerNormOp>([&](auto n) {
            int64_t a = static_cast<int64_t>(n.getAxis());
            return (a < 0 ? a + rank : a) > 0;
          })
          .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp>(
              [](auto r) { return !llvm::is_contained(r.getAxes(), 0); })
          .Case<ArgReduceOp>([&](ArgReduceOp r) {
            int64_t a = static_cast<int64_t>(r.getAxis());
            return (a < 0 ? a + rank : a) > 0;
          })
          .Case<TransposeOp>([](TransposeOp t) { return !t.getPerm().empty() && t.getPerm()[0] == 0; })
          .Case<ReshapeOp>([&](ReshapeOp r) {
            return shapeOf(r.getInput()).size() >= 1 && shapeOf(r.getInput())[0] == rows;
          })
          .Case<SliceOp>([&](SliceOp s) {
            return s.getOffsets()[0] == 0 && s.getStrides()[0] == 1 && s.getSizes()[0] == rows;
          })
          .Case<GemmOp>([&](GemmOp g) { return !g.getTransA(); })
          .Default([](Operation *) { return false; });
    };
    if (auto c = dyn_cast<ConcatOp>(op)) {
      if (c.getAxis() == 0)
        return fail();
      for (unsigned k = 0; k < op->getNumOperands(); ++k)
        if (!rowOperand(k))
          return fail();
      return u;
    }
    if (auto m = dyn_cast<MatMulOp>(op)) {
      int64_t l = shapeOf(m.getLhs()).size(), r = shapeOf(m.getRhs()).size();
      if (l < 2 || l != rank || !rowOperand(0))
        return fail();
      // A batched rhs of the result's rank reads its batch row-wise (or
      // broadcasts a single one); otherwise its axis 0 is contracted.
      if (r == rank && rank > 2 && shapeOf(m.getRhs())[0] != 1 && !rowOperand(1))
        return fail();
      return u;
    }
    if (auto g = dyn_cast<GemmOp>(op)) {
      if (g.getTransA() || !rowOperand(0))
        return fail();
      if (Value c = g.getC()) {
        auto ct = shapeOf(c);
        if (ct.size() == 2 && ct[0] != 1 && !rowOperand(op->getNumOperands() - 1))
          return fail();
      }
      return u;
    }
    if (auto a = dyn_cast<AttentionOp>(op)) {
      // Per batch row: its queries, keys and values; a mask of one row
      // broadcasts (read whole).
      if (shapeOf(a.getQuery()).size() < 3 || !rowOperand(0) || !rowOperand(1) ||
          !rowOperand(2))
        return fail();
      if (Value m = a.getMask(); m && shapeOf(m).size() == static_cast<size_t>(rank) &&
                                 shapeOf(m)[0] != 1 && !rowOperand(3))
        return fail();
      return u;
    }
    if (firstKeepsRows() && op->getNumOperands() >= 1 && rowOperand(0))
      return u;
    if (auto f = dyn_cast<FusionOp>(op))
      return fusion(f);
    return fail();
  }

  /// A fusion computes its body in one kernel: row-wise when every op in
  /// it is, along one symbol, and it yields a value with that lead.
  RowUse fusion(FusionOp f) {
    RowUse u;
    Block &body = f.getBody().front();
    u.rowWise.assign(f->getNumOperands(), false);
    for (auto [k, arg] : llvm::enumerate(body.getArguments())) {
      int s = leadOf(f->getOperand(k));
      if (s >= 0)
        lead[arg] = s;
    }
    llvm::DenseSet<Value> readWhole; // inner values some op reads beyond row i
    int sym = -1;
    for (Operation &inner : body.without_terminator()) {
      RowUse iu = use(&inner);
      if (iu.sym >= 0) {
        if (sym >= 0 && iu.sym != sym)
          return RowUse{-1, SmallVector<bool>(f->getNumOperands(), false)};
        sym = iu.sym;
        lead[inner.getResult(0)] = iu.sym;
      }
      for (auto [k, x] : llvm::enumerate(inner.getOperands()))
        if (!iu.rowWise[k])
          readWhole.insert(x);
    }
    Value y = body.getTerminator()->getOperand(0);
    if (sym < 0 || leadOf(y) != sym)
      return RowUse{-1, SmallVector<bool>(f->getNumOperands(), false)};
    // A value with the lead that an inner op reads beyond row i (a
    // reduction over the axis inside the kernel, say) keeps the whole
    // fusion at the bound: its kernel would need those rows computed.
    for (Value v : readWhole)
      if (leadOf(v) >= 0)
        return RowUse{-1, SmallVector<bool>(f->getNumOperands(), false)};
    u.sym = sym;
    for (auto [k, arg] : llvm::enumerate(body.getArguments()))
      u.rowWise[k] = leadOf(arg) == sym && !arg.use_empty();
    return u;
  }
};


/// How an operand axis is read.
constexpr int kWhole = -1; // every position (its padding must be computed)
constexpr int kLive = -2;  // positions [0, n) of its own symbol (a reduction)

/// One value an op reads: per axis, the result axis it maps to position by
/// position, kWhole or kLive.
struct Read {
  Value v;
  SmallVector<int> map;
};

struct Rule {
  SmallVector<Read> reads;
  SmallVector<bool> restrictable; // per result axis
  /// A result axis that is the axis its kLive reads reduce (softmax): when
  /// it is computed whole, so are they (its padding reads theirs).
  int tied = -1;
};

/// Whether the CUDA targets' kernel of `op` keeps to its rule (the
/// GPU-shaped builders that take the live box: elementwise ops and fusions
/// of them, the gathers, slices, concats and transposes of gpuForEach,
/// softmax, layer and batch norm rows, reductions' live outputs (with
/// their fused prologues and epilogues); matrix products, with their
/// epilogues, whose blocks past the live tiles leave and whose k loop stops
/// at the live depth; convolutions, pools and Gemm over the live batch;
/// attention, every batch row.
/// Positions a kernel computes anyway read garbage padding and hold
/// garbage nobody reads: none of these kernels can fault on it). Any other
/// op computes every position at the bounds there, reading its operands
/// whole.
static bool gpuWalksLive(Operation *op) {
  // (The batch rows of convolutions, pools and Gemm: their GPU kernels
  // skip the images and rows past the live batch.)
  // (The fused attention kernel computes every batch row: the rows are
  // independent, so the padding rows hold garbage nobody reads.)
  auto anchor = [](Operation *o) {
    return isa<kiln::ReduceSumOp, kiln::ReduceMeanOp, kiln::ReduceMaxOp, kiln::ReduceMinOp,
               kiln::ReduceProdOp, kiln::MatMulOp, kiln::GemmOp, kiln::ConvOp,
               kiln::MaxPoolOp, kiln::AvgPoolOp, kiln::GlobalAvgPoolOp, kiln::AttentionOp>(o);
  };
  if (auto f = dyn_cast<kiln::FusionOp>(op)) {
    // Elementwise throughout, or around one of the ops above (attention
    // with the views of its heads).
    int anchors = 0;
    return llvm::all_of(f.getBody().front().without_terminator(), [&](Operation &inner) {
      return kiln::isElementwise(&inner) ||
             isa<kiln::ReshapeOp, kiln::TransposeOp, kiln::SliceOp>(inner) ||
             (anchor(&inner) && ++anchors == 1);
    });
  }
  return kiln::isElementwise(op) || anchor(op) ||
         isa<kiln::ReshapeOp, kiln::TransposeOp, kiln::SliceOp, kiln::ConcatOp, kiln::GatherOp,
             kiln::SoftmaxOp, kiln::LayerNormOp, kiln::BatchNormOp>(op);
}

class Analysis {
public:
  Analysis(LiveExtents &x, ArrayRef<bool> known, ArrayRef<int64_t> derived, bool gpu)
      : x(x), known(known), derived(derived), gpu(gpu), axisZero(x) {}

  LiveExtents &x;
  ArrayRef<bool> known;
  ArrayRef<int64_t> derived; // kiln.symbol_derived: {op, a, b} per symbol
  bool gpu;                  // the CUDA targets' kernels (gpuWalksLive)
  AxisZeroRules axisZero;
  llvm::DenseMap<Operation *, Rule> rules;

  bool isKnown(int s) const {
    return s >= 0 && s < static_cast<int>(known.size()) && known[s];
  }
  /// The symbol a static multiple of `s` (KILN_SYM_MUL_CONST) stands on.
  int baseOf(int s) const {
    int64_t k = 3 * static_cast<int64_t>(s);
    if (s >= 0 && k + 2 < static_cast<int64_t>(derived.size()) &&
        derived[k] == KILN_SYM_MUL_CONST)
      return static_cast<int>(derived[k + 1]);
    return s;
  }
  /// Whether live prefixes of sizes `s` and `t` are the same elements: a
  /// reshape regrouping static axes behind a symbol ([B, 12, ...] ->
  /// [B*12, ...] and back) maps the first B rows onto the first B*12.
  bool proportional(int s, int t) const { return s >= 0 && t >= 0 && baseOf(s) == baseOf(t); }
  /// kLive for an axis carrying a symbol known before the run, else kWhole.
  int liveOr(Value v, int64_t a) const {
    return isKnown(x.symbolOf(v, a)) ? kLive : kWhole;
  }
  /// Numpy broadcasting of `v` against a result of shape `out`: axes of
  /// equal size map to the result's (right-aligned); broadcast ones whole.
  Read broadcast(Value v, ArrayRef<int64_t> out) const {
    auto in = shapeOf(v);
    int64_t lead = static_cast<int64_t>(out.size()) - static_cast<int64_t>(in.size());
    Read r{v, SmallVector<int>(in.size(), kWhole)};
    for (int64_t a = 0; a < static_cast<int64_t>(in.size()); ++a)
      if (lead + a >= 0 && in[a] == out[lead + a])
        r.map[a] = static_cast<int>(lead + a);
    return r;
  }
  Read identity(Value v) const {
    Read r{v, SmallVector<int>(shapeOf(v).size(), kWhole)};
    for (size_t a = 0; a < r.map.size(); ++a)
      r.map[a] = static_cast<int>(a);
    return r;
  }
  static SmallVector<bool> all(int64_t rank, bool v = true) { return SmallVector<bool>(rank, v); }

  /// A reshape's axes that keep their position: the same size after the
  /// same number of elements (so the same bound strides).
  /// A symbolic axis whose group of static axes behind it is regrouped
  /// ([B, 12, 64] -> [B*12, 64], and back) maps to the group's outer axis
  /// when the symbol `op` states there is proportional to its own.
  Read reshape(Value in, ArrayRef<int64_t> out, Operation *op = nullptr) const {
    auto sh = shapeOf(in);
    Read r{in, SmallVector<int>(sh.size(), kWhole)};
    int64_t before = 1;
    for (size_t a = 0; a < sh.size(); ++a) {
      int64_t outBefore = 1;
      for (size_t d = 0; d < out.size(); ++d) {
        if (outBefore == before && out[d] == sh[a]) {
          r.map[a] = static_cast<int>(d);
          break;
        }
        if (outBefore == before && op && out[d] != 1 &&
            proportional(x.symbolOf(in, a), statedSymbol(op, d)) &&
            innerStatic(in, a, out, d)) {
          r.map[a] = static_cast<int>(d);
          break;
        }
        outBefore *= out[d];
      }
      before *= sh[a];
    }
    return r;
  }
  /// The symbol `op` states for its result's axis d (kiln.axis_symbol), or -1.
  static int statedSymbol(Operation *op, int64_t d) {
    if (auto pairs = op->getAttrOfType<DenseI64ArrayAttr>(kiln::attr::kAxisSymbol))
      for (int64_t i = 0; i + 1 < pairs.size(); i += 2)
        if (pairs[i] == d)
          return static_cast<int>(pairs[i + 1]);
    return -1;
  }
  /// Whether the axes of `in` after `a` in its group (the input axes from
  /// `a` and output axes from `d` of equal element counts) carry no symbol.
  bool innerStatic(Value in, size_t a, ArrayRef<int64_t> out, size_t d) const {
    auto sh = shapeOf(in);
    int64_t pi = sh[a], po = out[d];
    size_t i = a + 1, o = d + 1;
    while (pi != po) {
      if (pi < po && i < sh.size()) {
        if (x.symbolOf(in, i) >= 0)
          return false;
        pi *= sh[i++];
      } else if (po < pi && o < out.size()) {
        po *= out[o++];
      } else {
        return false;
      }
    }
    return true;
  }

  /// A matrix product [.., M, K] x [.., K, N] (or [K, N]) -> [.., M, N]
  /// read through `lhs` and `rhs` (fusion operands standing for them).
  std::optional<Rule> matmul(Value lhs, Value rhs, ArrayRef<int64_t> out) const {
    int64_t R = out.size();
    auto l = shapeOf(lhs), r = shapeOf(rhs);
    if (R < 2 || static_cast<int64_t>(l.size()) != R ||
        (static_cast<int64_t>(r.size()) != R && r.size() != 2))
      return std::nullopt;
    Rule rule;
    Read a{lhs, SmallVector<int>(R, kWhole)};
    for (int64_t d = 0; d + 2 < R; ++d)
      if (l[d] == out[d])
        a.map[d] = static_cast<int>(d);
    a.map[R - 2] = static_cast<int>(R - 2);
    a.map[R - 1] = liveOr(lhs, R - 1);
    int64_t rr = r.size();
    Read bm{rhs, SmallVector<int>(rr, kWhole)};
    for (int64_t d = 0; d + 2 < rr; ++d)
      if (r[d] == out[d])
        bm.map[d] = static_cast<int>(d);
    bm.map[rr - 2] = liveOr(rhs, rr - 2);
    bm.map[rr - 1] = static_cast<int>(R - 1);
    // (The same symbol on both sides of the contraction, or none.)
    if (x.symbolOf(lhs, R - 1) != x.symbolOf(rhs, rr - 2))
      a.map[R - 1] = bm.map[rr - 2] = kWhole;
    rule.reads = {a, bm};
    rule.restrictable = all(R, false);
    rule.restrictable[R - 2] = rule.restrictable[R - 1] = true;
    if (R > 2)
      rule.restrictable[0] = true; // (a prefix of the batches)
    return rule;
  }

  /// kiln.matmul_nbits of `ops` (lhs, codes, scales, zero points): the
  /// result's rows are the lhs's, its depth and the weights read whole. A
  /// leading axis stops at its live extent only where the live rows are a
  /// prefix of the flattened ones (every axis before it of extent 1), the
  /// rows the kernel computes.
  std::optional<Rule> matmulNBits(ValueRange ops, ArrayRef<int64_t> out) const {
    int64_t R = out.size();
    if (R < 1 || ops.size() != 4 || static_cast<int64_t>(shapeOf(ops[0]).size()) != R)
      return std::nullopt;
    Rule rule;
    Read a{ops[0], SmallVector<int>(R, kWhole)};
    for (int64_t d = 0; d + 1 < R; ++d)
      a.map[d] = static_cast<int>(d);
    rule.reads = {a};
    for (Value w : ops.drop_front())
      rule.reads.push_back(Read{w, SmallVector<int>(shapeOf(w).size(), kWhole)});
    rule.restrictable = all(R, false);
    int64_t before = 1;
    for (int64_t d = 0; d + 1 < R; ++d) {
      rule.restrictable[d] = before == 1;
      before *= out[d];
    }
    return rule;
  }

  /// A reduction of `in` (the reduced input's shape) over `axes` into
  /// `out`: the kept axes map to the result's, the reduced ones are read
  /// whole. Per axis of `in`: the result axis, or kWhole.
  static SmallVector<int> reduceMap(ArrayRef<int64_t> in, ArrayRef<int64_t> axes,
                                    ArrayRef<int64_t> out) {
    bool keep = in.size() == out.size();
    SmallVector<int> map(in.size(), kWhole);
    int d = 0;
    for (int64_t a = 0; a < static_cast<int64_t>(in.size()); ++a) {
      bool reduced = llvm::is_contained(axes, a);
      if (!reduced)
        map[a] = d;
      if (!reduced || keep)
        ++d;
    }
    return map;
  }
  /// `v` read through an elementwise prologue of shape `in` feeding a
  /// reduction with `map` (reduceMap).
  Read throughReduce(Value v, ArrayRef<int64_t> in, ArrayRef<int> map) const {
    Read r = broadcast(v, in);
    for (int &d : r.map)
      if (d >= 0)
        d = map[d];
    return r;
  }
  static ArrayRef<int64_t> axesOf(Operation *op) {
    return llvm::TypeSwitch<Operation *, ArrayRef<int64_t>>(op)
        .Case<kiln::ReduceSumOp, kiln::ReduceMeanOp, kiln::ReduceMaxOp, kiln::ReduceMinOp,
              kiln::ReduceProdOp>([](auto r) { return r.getAxes(); })
        .Default([](Operation *) { return ArrayRef<int64_t>(); });
  }
  static bool isReduction(Operation *op) {
    return isa<kiln::ReduceSumOp, kiln::ReduceMeanOp, kiln::ReduceMaxOp, kiln::ReduceMinOp,
               kiln::ReduceProdOp>(op);
  }

  /// A reduction with an elementwise prologue and epilogue in a fusion.
  std::optional<Rule> reduceFusion(kiln::FusionOp f, ArrayRef<Operation *> ops) {
    auto redIt = llvm::find_if(ops, isReduction);
    Operation *red = *redIt;
    auto in = shapeOf(red->getOperand(0)), out = shapeOf(f.getResult());
    if (shapeOf(red->getResult(0)) != out)
      return std::nullopt;
    SmallVector<int> map = reduceMap(in, axesOf(red), out);
    Block &body = f.getBody().front();
    llvm::DenseSet<Operation *> pro(ops.begin(), redIt);
    Rule rule;
    rule.restrictable = all(out.size());
    for (Operation *o : ops)
      if (o != red && !kiln::isElementwise(o))
        return std::nullopt;
    for (auto [k, arg] : llvm::enumerate(body.getArguments())) {
      if (arg.use_empty())
        continue;
      bool byPro = false, byEpi = false;
      for (Operation *u : arg.getUsers())
        (pro.contains(u) || u == red ? byPro : byEpi) = true;
      if (byPro && byEpi)
        return std::nullopt;
      Value v = f->getOperand(k);
      rule.reads.push_back(byPro ? throughReduce(v, in, map) : broadcast(v, out));
    }
    return rule;
  }

  /// The rule of a fusion: elementwise throughout, or a matrix product of
  /// two of its operands with an elementwise epilogue.
  std::optional<Rule> fusion(kiln::FusionOp f) {
    Block &body = f.getBody().front();
    auto out = shapeOf(f.getResult());
    SmallVector<Operation *> ops;
    for (Operation &o : body.without_terminator())
      ops.push_back(&o);
    if (ops.empty())
      return std::nullopt;
    if (llvm::any_of(ops, isReduction))
      return reduceFusion(f, ops);
    auto operandOf = [&](Value inner) -> Value {
      auto arg = llvm::dyn_cast<BlockArgument>(inner);
      return arg && arg.getOwner() == &body ? f->getOperand(arg.getArgNumber()) : Value();
    };
    size_t first = 0;
    Rule rule;
    if (auto m = dyn_cast<kiln::MatMulOp>(ops[0])) {
      Value a = operandOf(m.getLhs()), b = operandOf(m.getRhs());
      if (!a || !b || shapeOf(m.getResult()) != out)
        return std::nullopt;
      auto mr = matmul(a, b, out);
      if (!mr)
        return std::nullopt;
      rule = *mr;
      first = 1;
    } else if (auto m = dyn_cast<kiln::MatMulNBitsOp>(ops[0])) {
      SmallVector<Value> outer;
      for (Value v : m->getOperands())
        outer.push_back(operandOf(v));
      if (llvm::any_of(outer, [](Value v) { return !v; }) || shapeOf(m.getResult()) != out)
        return std::nullopt;
      auto mr = matmulNBits(outer, out);
      if (!mr)
        return std::nullopt;
      rule = *mr;
      first = 1;
    } else {
      rule.restrictable = all(out.size());
    }
    for (size_t i = first; i < ops.size(); ++i)
      if (!kiln::isElementwise(ops[i]))
        return std::nullopt;
    // The other operands (the elementwise ops' sites) broadcast against the
    // result; an operand read by the product and by the epilogue keeps the
    // product's reading.
    for (auto [k, arg] : llvm::enumerate(body.getArguments())) {
      bool byProduct = first && llvm::is_contained(ops[0]->getOperands(), Value(arg));
      bool elsewhere = llvm::any_of(arg.getUsers(), [&](Operation *u) { return u != ops[0] || !first; });
      if (byProduct && elsewhere)
        return std::nullopt;
      if (!byProduct && !arg.use_empty())
        rule.reads.push_back(broadcast(f->getOperand(k), out));
    }
    return rule;
  }

  /// The repacked concat a symbol-indices gather puts one piece after
  /// another (see LiveExtents::packedConcat), or null.
  kiln::ConcatOp packedConcatOf(kiln::GatherOp g) const {
    auto c = g.getData().getDefiningOp<kiln::ConcatOp>();
    auto pairs = g->getAttrOfType<DenseI64ArrayAttr>(kiln::attr::kAxisSymbol);
    if (!c || !c->hasAttr(kiln::attr::kRepacked) || !g->hasAttr(kiln::attr::kSymbolIndices) ||
        !c->hasOneUse() || !pairs || pairs.size() != 2 ||
        static_cast<int64_t>(c.getAxis()) != static_cast<int64_t>(g.getAxis()) ||
        pairs[0] != static_cast<int64_t>(g.getAxis()) || shapeOf(g.getIndices()).size() != 1 ||
        !isKnown(static_cast<int>(pairs[1])))
      return nullptr;
    // Every piece's extent along the axis known before the run.
    int64_t axis = c.getAxis();
    for (Value v : c.getInputs())
      if (x.symbolOf(v, axis) >= 0 ? !isKnown(x.symbolOf(v, axis)) : false)
        return nullptr;
    return c;
  }

  Rule ruleFor(Operation *op) {
    Rule none;
    for (Value v : op->getOperands())
      if (llvm::isa<RankedTensorType>(v.getType()))
        none.reads.push_back(Read{v, SmallVector<int>(shapeOf(v).size(), kWhole)});
    if (op->getNumResults() != 1 || (gpu && !gpuWalksLive(op)))
      return none;
    auto rt = llvm::dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!rt || rt.getRank() == 0)
      return none;
    auto out = rt.getShape();
    int64_t R = out.size();
    Rule r;
    if (kiln::isElementwise(op)) {
      for (Value v : op->getOperands())
        r.reads.push_back(broadcast(v, out));
      r.restrictable = all(R);
      return r;
    }
    if (auto f = dyn_cast<kiln::FusionOp>(op))
      if (auto fr = fusion(f))
        return *fr;
    if (auto m = dyn_cast<kiln::MatMulOp>(op))
      if (auto mr = matmul(m.getLhs(), m.getRhs(), out))
        return *mr;
    if (auto m = dyn_cast<kiln::MatMulNBitsOp>(op))
      if (auto mr = matmulNBits(m->getOperands(), out))
        return *mr;
    if (isReduction(op)) {
      Value in = op->getOperand(0);
      Read rd{in, reduceMap(shapeOf(in), axesOf(op), out)};
      r.reads = {rd};
      r.restrictable = all(R);
      return r;
    }
    if (auto s = dyn_cast<kiln::SoftmaxOp>(op)) {
      int64_t a = static_cast<int64_t>(s.getAxis());
      a = a < 0 ? a + R : a;
      Read in = identity(s.getInput());
      in.map[a] = liveOr(s.getInput(), a);
      r.reads = {in};
      r.restrictable = all(R);
      r.tied = static_cast<int>(a);
      return r;
    }
    if (auto ln = dyn_cast<kiln::LayerNormOp>(op)) {
      // Each row (the axes before `axis`) is normalized on its own; the
      // normalized axes, the scale and the bias are read whole.
      int64_t a = static_cast<int64_t>(ln.getAxis());
      a = a < 0 ? a + R : a;
      Read in = identity(ln.getInput());
      for (int64_t d = a; d < R; ++d)
        in.map[d] = kWhole;
      r.reads = {in};
      for (Value v : op->getOperands().drop_front())
        r.reads.push_back(Read{v, SmallVector<int>(shapeOf(v).size(), kWhole)});
      r.restrictable = all(R, false);
      for (int64_t d = 0; d < a; ++d)
        r.restrictable[d] = true;
      return r;
    }
    if (auto t = dyn_cast<kiln::TransposeOp>(op)) {
      Read in{t.getInput(), SmallVector<int>(R, kWhole)};
      for (int64_t d = 0; d < R; ++d)
        in.map[t.getPerm()[d]] = static_cast<int>(d);
      r.reads = {in};
      r.restrictable = all(R);
      return r;
    }
    if (auto s = dyn_cast<kiln::ReshapeOp>(op)) {
      r.reads = {reshape(s.getInput(), out, op)};
      r.restrictable = all(R); // (no kernel: a view of its input)
      return r;
    }
    if (auto s = dyn_cast<kiln::SliceOp>(op)) {
      auto in = shapeOf(s.getInput());
      Read rd{s.getInput(), SmallVector<int>(R, kWhole)};
      for (int64_t d = 0; d < R; ++d)
        if (s.getOffsets()[d] == 0 && s.getStrides()[d] == 1 && s.getSizes()[d] == in[d])
          rd.map[d] = static_cast<int>(d);
      r.reads = {rd};
      r.restrictable = all(R);
      return r;
    }
    if (auto c = dyn_cast<kiln::ConcatOp>(op)) {
      int64_t axis = c.getAxis();
      if (c->hasAttr(kiln::attr::kRepacked) && c->hasOneUse())
        if (auto g = dyn_cast<kiln::GatherOp>(*c->getUsers().begin()); g && packedConcatOf(g))
          return Rule{{}, all(R, false)}; // (no kernel: its gather reads the pieces)
      for (Value v : c.getInputs()) {
        Read rd = identity(v);
        rd.map[axis] = kWhole;
        r.reads.push_back(rd);
      }
      r.restrictable = all(R);
      r.restrictable[axis] = false;
      return r;
    }
    if (auto g = dyn_cast<kiln::GatherOp>(op)) {
      int64_t axis = g.getAxis();
      if (auto c = packedConcatOf(g)) {
        for (Value v : c.getInputs()) {
          Read rd = identity(v);
          rd.map[axis] = x.symbolOf(v, axis) >= 0 ? kLive : kWhole;
          r.reads.push_back(rd);
        }
        r.restrictable = all(R);
        x.packedConcat[op] = c;
        return r;
      }
      auto data = shapeOf(g.getData());
      int64_t ir = shapeOf(g.getIndices()).size();
      Read d{g.getData(), SmallVector<int>(data.size(), kWhole)};
      for (int64_t a = 0; a < static_cast<int64_t>(data.size()); ++a)
        if (a != axis)
          d.map[a] = static_cast<int>(a < axis ? a : a + ir - 1);
      // Constant indices (the pooler's first token): positions a valid run
      // has, so the axis is read within its live extent.
      DenseIntElementsAttr idx;
      if (matchPattern(g.getIndices(), m_Constant(&idx)) &&
          llvm::all_of(idx.getValues<APInt>(), [](const APInt &v) { return !v.isNegative(); }))
        d.map[axis] = liveOr(g.getData(), axis);
      Read i{g.getIndices(), SmallVector<int>(ir, kWhole)};
      for (int64_t a = 0; a < ir; ++a)
        i.map[a] = static_cast<int>(axis + a);
      r.reads = {d, i};
      r.restrictable = all(R);
      return r;
    }
    // The axis-0 rules: row by row along axis 0, the rest read whole.
    RowUse u = axisZero.use(op);
    if (u.sym < 0)
      return none;
    for (auto [k, v] : llvm::enumerate(op->getOperands())) {
      Read rd{v, SmallVector<int>(shapeOf(v).size(), kWhole)};
      if (u.rowWise[k])
        rd.map[0] = 0;
      r.reads.push_back(rd);
    }
    r.restrictable = all(R, false);
    r.restrictable[0] = true;
    return r;
  }

  /// Forward: the rule and the result's symbols.
  void visit(Operation *op) {
    Rule rule = ruleFor(op);
    if (op->getNumResults() == 1 && llvm::isa<RankedTensorType>(op->getResult(0).getType())) {
      int64_t R = shapeOf(op->getResult(0)).size();
      auto out = shapeOf(op->getResult(0));
      SmallVector<int> syms(R, -1);
      SmallVector<bool> clash(R, false);
      for (const Read &rd : rule.reads) {
        auto in = shapeOf(rd.v);
        for (auto [a, d] : llvm::enumerate(rd.map)) {
          int s = x.symbolOf(rd.v, a);
          if (d < 0 || s < 0 || in[a] != out[d])
            continue;
          if (syms[d] >= 0 && syms[d] != s)
            clash[d] = true;
          syms[d] = s;
        }
      }
      for (int64_t d = 0; d < R; ++d)
        if (clash[d])
          syms[d] = -1;
      // (A softmax's axis: the symbol of the axis it reduces.)
      if (rule.tied >= 0 && !rule.reads.empty())
        syms[rule.tied] = x.symbolOf(rule.reads[0].v, rule.tied);
      // An axis whose symbol the op states (a positional constant, the
      // gather putting a symbolic axis' pieces in place).
      if (auto pairs = op->getAttrOfType<DenseI64ArrayAttr>(kiln::attr::kAxisSymbol))
        for (int64_t i = 0; i + 1 < pairs.size(); i += 2)
          if (pairs[i] >= 0 && pairs[i] < R)
            syms[pairs[i]] = static_cast<int>(pairs[i + 1]);
      x.symbols[op->getResult(0)] = syms;
    }
    for (const Read &rd : rule.reads)
      if (llvm::is_contained(rd.map, kLive))
        x.sized.insert(op);
    rules[op] = std::move(rule);
  }
};

} // namespace

/// A padding mask (see LiveExtents::passThrough) whose kernel would stop
/// at the live extent of every axis it masks, its data of the result's
/// shape and type, not a result of the function.
static bool isLiveMask(Operation *op, ArrayRef<int> box) {
  auto w = dyn_cast<kiln::WhereOp>(op);
  auto axes = op->getAttrOfType<DenseI64ArrayAttr>(kiln::attr::kMaskedAxes);
  if (!w || !axes || w.getLhs().getType() != w.getResult().getType())
    return false;
  for (Operation *user : w.getResult().getUsers())
    if (isa<func::ReturnOp>(user))
      return false;
  return llvm::all_of(axes.asArrayRef(), [&](int64_t a) {
    return a >= 0 && a < static_cast<int64_t>(box.size()) && box[a] >= 0;
  });
}

LiveExtents liveExtents(func::FuncOp fn, ArrayRef<bool> known, bool gpu) {
  LiveExtents x;
  ArrayRef<int64_t> derived;
  if (auto d = fn->getAttrOfType<DenseI64ArrayAttr>(kiln::attr::kSymbolDerived))
    derived = d.asArrayRef();
  Analysis a(x, known, derived, gpu);
  for (auto [i, arg] : llvm::enumerate(fn.getArguments())) {
    auto attrs = fn.getArgAttrDict(i);
    auto syms = attrs ? attrs.getAs<DenseI32ArrayAttr>(kiln::attr::kSymbols) : nullptr;
    if (syms && syms.size() == static_cast<int64_t>(shapeOf(arg).size()))
      x.symbols[arg] = SmallVector<int>(syms.asArrayRef().begin(), syms.asArrayRef().end());
  }
  Block &body = fn.getBody().front();
  for (Operation &op : body.without_terminator())
    a.visit(&op);

  // The index computations of packed concats, when nothing else reads them.
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (op.getNumResults() != 1 || op.getResult(0).use_empty() ||
        isa<kiln::ConstantOp>(op))
      continue;
    bool unused = llvm::all_of(op.getResult(0).getUses(), [&](OpOperand &use) {
      Operation *user = use.getOwner();
      return x.unused.contains(user) ||
             (x.packedConcat.count(user) && use.getOperandNumber() == 1);
    });
    if (unused)
      x.unused.insert(&op);
  }
  for (auto [gather, concat] : x.packedConcat)
    x.unused.insert(concat);
  // Backward: the axes read past their live extent.
  llvm::DenseMap<Value, SmallVector<bool>> whole;
  auto markWhole = [&](Value v, int64_t axis) {
    auto &w = whole[v];
    w.resize(shapeOf(v).size(), false);
    w[axis] = true;
  };
  auto isWhole = [&](Value v, int64_t axis) {
    auto it = whole.find(v);
    return it != whole.end() && axis < static_cast<int64_t>(it->second.size()) && it->second[axis];
  };
  // The outputs are cropped to the sizes of the symbols they carry.
  Operation *ret = body.getTerminator();
  for (auto [i, v] : llvm::enumerate(ret->getOperands())) {
    auto attrs = fn.getResultAttrDict(i);
    auto syms = attrs ? attrs.getAs<DenseI32ArrayAttr>(kiln::attr::kSymbols) : nullptr;
    for (int64_t d = 0; d < static_cast<int64_t>(shapeOf(v).size()); ++d)
      if (!syms || d >= syms.size() || syms[d] != x.symbolOf(v, d) || !a.isKnown(syms[d]))
        markWhole(v, d);
  }
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    auto it = a.rules.find(&op);
    if (it == a.rules.end() || x.unused.contains(&op))
      continue;
    const Rule &rule = it->second;
    SmallVector<int> box;
    bool any = false;
    if (op.getNumResults() == 1 && llvm::isa<RankedTensorType>(op.getResult(0).getType())) {
      Value r = op.getResult(0);
      int64_t R = shapeOf(r).size();
      box.assign(R, -1);
      for (int64_t d = 0; d < R && d < static_cast<int64_t>(rule.restrictable.size()); ++d) {
        int s = x.symbolOf(r, d);
        if (rule.restrictable[d] && a.isKnown(s) && !isWhole(r, d)) {
          box[d] = s;
          any = true;
        }
      }
    }
    if (any && !isa<kiln::ReshapeOp>(op)) {
      x.box[&op] = box;
      x.sized.insert(&op);
      if (isLiveMask(&op, box))
        x.passThrough.insert(&op);
    }
    for (const Read &rd : rule.reads)
      for (auto [axis, d] : llvm::enumerate(rd.map)) {
        if (d == kLive && (rule.tied < 0 || box.empty() || box[rule.tied] >= 0))
          continue;
        int s = x.symbolOf(rd.v, axis);
        bool prefix = d >= 0 && box[d] >= 0 &&
                      (s < 0 || s == box[d] ||
                       (isa<kiln::ReshapeOp>(op) && a.proportional(s, box[d])));
        if (!prefix)
          markWhole(rd.v, axis);
      }
  }
  // The conditions only pass-through masks read.
  llvm::DenseSet<Operation *> conditions;
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (op.getNumResults() != 1 || op.getResult(0).use_empty() || isa<kiln::ConstantOp>(op))
      continue;
    if (llvm::all_of(op.getResult(0).getUses(), [&](OpOperand &use) {
          return conditions.contains(use.getOwner()) ||
                 (x.passThrough.contains(use.getOwner()) && use.getOperandNumber() == 0);
        }))
      conditions.insert(&op);
  }
  x.unused.insert(conditions.begin(), conditions.end());
  for (BlockArgument arg : fn.getArguments()) {
    bool read = false;
    for (int64_t d = 0; d < static_cast<int64_t>(shapeOf(arg).size()); ++d)
      read |= x.symbolOf(arg, d) >= 0 && isWhole(arg, d);
    x.argPaddingRead.push_back(read);
  }
  return x;
}

} // namespace kiln::codegen
