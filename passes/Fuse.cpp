//===- Fuse.cpp - group anchors and elementwise chains into kiln.fusion ----===//
#include "passes/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_FUSEPASS
#include "passes/Passes.h.inc"

namespace {

bool isElementwise(Operation *op) {
  return kiln::isElementwise(op) || isa<BatchNormOp>(op);
}

bool isAnchor(Operation *op) {
  // Matmuls whose operands are matrices or batches of them (a vector operand
  // drops a dimension from the result, which epilogues do not follow).
  if (auto mm = dyn_cast<MatMulOp>(op))
    return llvm::cast<RankedTensorType>(mm.getLhs().getType()).getRank() >= 2 &&
           llvm::cast<RankedTensorType>(mm.getRhs().getType()).getRank() >= 2;
  return isa<ConvOp, GemmOp>(op);
}

ArrayRef<int64_t> shapeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getShape();
}

/// Whether the operands of `op` (other than `chain`) can be read inside a
/// kernel anchored by `anchor`: anything for gemm/matmul/elementwise; for a
/// conv, the full output shape or a broadcast over both spatial dimensions.
bool sidesOk(Operation *op, Value chain, Operation *anchor) {
  if (!anchor || !isa<ConvOp>(anchor) || isa<BatchNormOp>(op))
    return true;
  ArrayRef<int64_t> out = shapeOf(op->getResult(0));
  for (Value side : op->getOperands()) {
    if (side == chain)
      continue;
    ArrayRef<int64_t> s = shapeOf(side);
    if (s.size() > out.size())
      return false;
    SmallVector<int64_t> aligned(out.size() - s.size(), 1);
    aligned.append(s.begin(), s.end());
    int h = cast<ConvOp>(anchor).getLayout() == "nhwc" ? 1 : 2; // spatial dims h, h+1
    bool full = aligned[h] == out[h] && aligned[h + 1] == out[h + 1];
    bool spatialBroadcast = aligned[h] == 1 && aligned[h + 1] == 1;
    if (!(full || spatialBroadcast))
      return false;
  }
  return true;
}

/// Whether `user`, an elementwise op consuming `chain`, can join a group
/// whose anchor is `anchor` (null for a pure elementwise group).
bool canJoin(Operation *user, Value chain, Operation *anchor) {
  if (!isElementwise(user) || user->getResult(0).getType() != chain.getType())
    return false;
  if (isa<BatchNormOp>(user) && user->getOperand(0) != chain)
    return false; // the chain must be the normalized input, not a parameter
  return sidesOk(user, chain, anchor);
}

/// Rough flops per element of an elementwise op: transcendental functions
/// cost ~20 (polynomials), arithmetic 1.
int64_t flopsPerElement(Operation *op) {
  if (isa<ExpOp, LogOp, ErfOp, TanhOp, SigmoidOp, SiluOp, GeluOp, PowOp>(op))
    return 20;
  return 1;
}

/// The cost model's recompute-or-materialize decision for an elementwise
/// value with several users. Materializing writes it once and reads it once
/// per user (4 bytes each); recomputing repeats its flops in every user but
/// the first. At about 4 flops per byte of memory traffic on the CPUs Kiln
/// targets, recompute when (users - 1) * flops < 4 * 4 * (users + 1).
bool recomputeInUsers(Operation *op) {
  if (!kiln::isElementwise(op) || op->hasOneUse() || op->use_empty())
    return false;
  Type type = op->getResult(0).getType();
  for (Operation *u : op->getUsers())
    if (!kiln::isElementwise(u) || u->getResult(0).getType() != type ||
        u->getBlock() != op->getBlock())
      return false;
  // Its inputs must be materialized anyway (arguments, constants, values
  // with other users, results of reductions, pools...): a value that would
  // end an anchor's epilogue or an elementwise chain is better written once
  // there than split off its producer.
  for (Value v : op->getOperands()) {
    Operation *def = v.getDefiningOp();
    if (def && !isa<ConstantOp>(def) && v.hasOneUse() &&
        (isAnchor(def) || isElementwise(def)))
      return false;
  }
  int64_t users = std::distance(op->getUsers().begin(), op->getUsers().end());
  return (users - 1) * flopsPerElement(op) < 16 * (users + 1);
}

/// Gives every user but the first its own copy of `op`, which then fuses
/// into the user's kernel.
void duplicateForUsers(Operation *op) {
  SmallVector<OpOperand *> uses;
  for (OpOperand &use : op->getUses())
    uses.push_back(&use);
  for (OpOperand *use : llvm::drop_begin(uses)) {
    OpBuilder b(use->getOwner());
    Operation *copy = b.clone(*op);
    use->set(copy->getResult(0));
  }
}

/// Single-use elementwise producers of `user`'s other operands (recomputed
/// values, or ones defined before the chain) that can be evaluated inside
/// the same kernel: same result type, readable sides.
void prologueOf(Operation *user, Value chain, Operation *anchor,
                const llvm::SmallPtrSetImpl<Operation *> &taken,
                SmallVectorImpl<Operation *> &out) {
  for (Value v : user->getOperands()) {
    Operation *def = v.getDefiningOp();
    if (v == chain || !def || !def->hasOneUse() || taken.contains(def) ||
        !kiln::isElementwise(def) || def->getBlock() != user->getBlock() ||
        def->getResult(0).getType() != user->getResult(0).getType() ||
        !sidesOk(def, Value(), anchor) || llvm::is_contained(out, def))
      continue;
    // Producers of its operands first (post-order keeps the group in
    // dependence order).
    prologueOf(def, Value(), anchor, taken, out);
    out.push_back(def);
  }
}

SmallVector<Operation *> prologue(Operation *user, Value chain, Operation *anchor,
                                  const llvm::SmallPtrSetImpl<Operation *> &taken) {
  SmallVector<Operation *> out;
  prologueOf(user, chain, anchor, taken, out);
  return out;
}

void wrap(ArrayRef<Operation *> group) {
  Operation *last = group.back();
  llvm::SmallPtrSet<Operation *, 8> inGroup(group.begin(), group.end());
  llvm::SetVector<Value> inputs;
  for (Operation *op : group)
    for (Value v : op->getOperands())
      if (!inGroup.contains(v.getDefiningOp()))
        inputs.insert(v);
  OpBuilder b(last);
  SmallVector<Location> locs;
  for (Operation *op : group)
    locs.push_back(op->getLoc());
  Location loc = FusedLoc::get(b.getContext(), locs);
  auto fusion = FusionOp::create(b, loc, last->getResult(0).getType(),
                                 inputs.getArrayRef());
  Block *body = new Block();
  fusion.getBody().push_back(body);
  IRMapping map;
  for (Value v : inputs)
    map.map(v, body->addArgument(v.getType(), v.getLoc()));
  OpBuilder inner = OpBuilder::atBlockEnd(body);
  for (Operation *op : group)
    inner.clone(*op, map);
  YieldOp::create(inner, loc, map.lookup(last->getResult(0)));
  last->getResult(0).replaceAllUsesWith(fusion.getResult());
  for (Operation *op : llvm::reverse(group))
    op->erase();
}

/// Attention with the transposes that split heads (of its query, key and
/// value) and merge them (of its result): the kernel reads and writes those
/// layouts directly. Key and value rows must stay contiguous.
SmallVector<Operation *> attentionGroup(AttentionOp att,
                                        const llvm::SmallPtrSetImpl<Operation *> &taken) {
  SmallVector<Operation *> group;
  for (unsigned i = 0; i < 3; ++i) {
    auto t = att->getOperand(i).getDefiningOp<TransposeOp>();
    if (!t || !t->hasOneUse() || taken.contains(t) || t->getBlock() != att->getBlock() ||
        llvm::is_contained(group, t.getOperation()))
      continue;
    int64_t rank = t.getPerm().size();
    if (i > 0 && t.getPerm().back() != rank - 1)
      continue;
    group.push_back(t);
  }
  llvm::sort(group, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  group.push_back(att);
  if (att->hasOneUse())
    if (auto t = dyn_cast<TransposeOp>(*att->getUsers().begin()))
      group.push_back(t);
  return group;
}

struct FusePass : impl::FusePassBase<FusePass> {
  void runOnOperation() override {
    // Cheap elementwise values with several elementwise users: recompute.
    SmallVector<Operation *> shared;
    getOperation().walk([&](Operation *op) {
      if (recomputeInUsers(op))
        shared.push_back(op);
    });
    for (Operation *op : shared)
      duplicateForUsers(op);

    SmallVector<SmallVector<Operation *>> groups;
    llvm::SmallPtrSet<Operation *, 32> taken;
    // Anchors first, so that a recomputed producer defined before an anchor
    // joins the anchor's epilogue rather than starting a group of its own.
    for (bool anchorsPhase : {true, false})
    for (Block &block : getOperation().getBody()) {
      for (Operation &op : block) {
        if (anchorsPhase != (isAnchor(&op) || isa<AttentionOp>(&op)))
          continue;
        if (auto att = dyn_cast<AttentionOp>(&op)) {
          auto group = attentionGroup(att, taken);
          for (Operation *g : group)
            taken.insert(g);
          if (group.size() > 1)
            groups.push_back(group);
          continue;
        }
        if (taken.contains(&op) || !(isAnchor(&op) || isElementwise(&op)))
          continue;
        Operation *anchor = isAnchor(&op) ? &op : nullptr;
        SmallVector<Operation *> group{&op};
        Value chain = op.getResult(0);
        while (chain.hasOneUse()) {
          Operation *user = *chain.getUsers().begin();
          // A user already in another group (both operands of an add end
          // chains, say) stays there.
          if (user->getBlock() != &block || taken.contains(user) ||
              !canJoin(user, chain, anchor))
            break;
          // Recomputed producers of its other operands come along.
          for (Operation *pre : prologue(user, chain, anchor, taken)) {
            if (llvm::is_contained(group, pre))
              continue;
            group.push_back(pre);
            taken.insert(pre);
          }
          group.push_back(user);
          chain = user->getResult(0);
        }
        for (Operation *g : group)
          taken.insert(g);
        if (group.size() > 1)
          groups.push_back(group);
      }
    }
    for (auto &g : groups)
      wrap(g);
  }
};

} // namespace
} // namespace kiln
