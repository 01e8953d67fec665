//===- LiveRows.cpp - kernels that compute only a run's rows --------------===//
//
// See LiveRows.h. A value's *lead* is the symbol on its axis 0 when its rows
// along that axis are computed independently (row i of the value depends on
// row i of the inputs that carry the symbol, and on the whole of the others):
// then the rows past the run's size are padding that only padding reads.
//
//===----------------------------------------------------------------------===//
#include "LiveRows.h"

#include "dialects/kiln/KilnDialect.h"

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

class Analysis {
public:
  llvm::DenseMap<Value, int> lead;
  int leadOf(Value v) const {
    auto it = lead.find(v);
    return it == lead.end() ? -1 : it->second;
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

} // namespace

llvm::DenseMap<Operation *, int> liveRowOps(func::FuncOp fn) {
  Analysis a;
  for (auto [i, arg] : llvm::enumerate(fn.getArguments())) {
    auto attrs = fn.getArgAttrDict(i);
    auto syms = attrs ? attrs.getAs<DenseI32ArrayAttr>(kiln::attr::kSymbols) : nullptr;
    if (syms && !syms.empty() && syms[0] >= 0)
      a.lead[arg] = syms[0];
  }
  Block &body = fn.getBody().front();
  llvm::DenseMap<Operation *, RowUse> uses;
  for (Operation &op : body.without_terminator()) {
    if (auto c = dyn_cast<ConstantOp>(op)) {
      // A positional constant along a symbolic axis 0 (Trilu's mask).
      if (auto pairs = c->getAttrOfType<DenseI64ArrayAttr>(kiln::attr::kAxisSymbol))
        for (int64_t i = 0; i + 1 < pairs.size(); i += 2)
          if (pairs[i] == 0)
            a.lead[c.getResult()] = static_cast<int>(pairs[i + 1]);
      continue;
    }
    RowUse u = a.use(&op);
    if (u.sym >= 0)
      a.lead[op.getResult(0)] = u.sym;
    uses[&op] = std::move(u);
  }
  // Backward: padded rows a kernel at the bound reads must be valid.
  llvm::DenseSet<Value> needPad;
  llvm::DenseMap<Operation *, int> live;
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    auto it = uses.find(&op);
    if (it == uses.end())
      continue;
    const RowUse &u = it->second;
    bool atBound = u.sym < 0 || needPad.contains(op.getResult(0));
    if (!atBound)
      live[&op] = u.sym;
    for (auto [k, x] : llvm::enumerate(op.getOperands()))
      if (atBound || !u.rowWise[k])
        needPad.insert(x);
  }
  return live;
}

} // namespace kiln::codegen
