//===- Fuse.cpp - group anchors and elementwise chains into kiln.fusion ----===//
#include "dialects/kiln/ConvStrategy.h"
#include "passes/ConstantData.h"
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
  return isa<ConvOp, ConvIntegerOp, GemmOp, MatMulIntegerOp, MatMulNBitsOp>(op);
}

ArrayRef<int64_t> shapeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getShape();
}

/// Whether the operands of `op` (other than `chain`) can be read inside a
/// kernel anchored by `anchor`: anything for gemm/matmul/elementwise; for a
/// conv, the full output shape or a broadcast over both spatial dimensions.
bool sidesOk(Operation *op, Value chain, Operation *anchor) {
  if (!anchor || !isa<ConvOp, ConvIntegerOp>(anchor) || isa<BatchNormOp>(op))
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
    int h = attr::isChannelsLast(anchor) ? 1 : 2; // spatial dims h, h+1
    bool full = aligned[h] == out[h] && aligned[h + 1] == out[h + 1];
    bool spatialBroadcast = aligned[h] == 1 && aligned[h + 1] == 1;
    if (!(full || spatialBroadcast))
      return false;
  }
  return true;
}

Type elementTypeOf(Value v) { return llvm::cast<ShapedType>(v.getType()).getElementType(); }

/// A cast of `chain` that is half of a rounding pair `f32 -> bf16/f16/8-bit
/// integer -> f32` (kiln-lower-precision's results on the CPU, a QDQ model's
/// quantized activations): the down cast whose one
/// user casts back, or that cast back. An anchor's epilogue rounds in
/// registers and keeps its element type.
bool isRoundingPair(Operation *user, Value chain) {
  auto cast = dyn_cast<CastOp>(user);
  if (!cast)
    return false;
  auto elem = [](Value v) { return llvm::cast<ShapedType>(v.getType()).getElementType(); };
  // (bf16/f16: kiln-lower-precision's rounding; 8-bit integers: a QDQ
  // model's quantize-dequantize of an activation.)
  auto narrow = [](Type t) { return t.isBF16() || t.isF16() || t.isInteger(8); };
  if (elem(chain).isF32() && narrow(elem(cast.getResult())))
    return cast->hasOneUse() && isa<CastOp>(*cast->getUsers().begin()) &&
           cast->getUsers().begin()->getResult(0).getType() == chain.getType();
  if (narrow(elem(chain)) && elem(cast.getResult()).isF32())
    if (auto down = chain.getDefiningOp<CastOp>())
      return down.getInput().getType() == cast.getResult().getType();
  return false;
}

/// A byte convolution (option byte-convs): a depthwise NHWC conv of f32
/// constant weights in the direct kernel's register form whose ring of
/// converted input rows fits its stack, which can read an 8-bit input
/// through its dequantization and write an 8-bit result.
bool isByteConv(Operation *op) {
  auto conv = dyn_cast_or_null<ConvOp>(op);
  if (!conv || !attr::isChannelsLast(conv) || !conv.getWeight().getDefiningOp<ConstantOp>() ||
      !elementTypeOf(conv.getInput()).isF32())
    return false;
  ArrayRef<int64_t> in = shapeOf(conv.getInput()), w = shapeOf(conv.getWeight()),
                    out = shapeOf(conv.getResult());
  int64_t G = static_cast<int64_t>(conv.getGroup());
  auto pads = conv.getPads();
  int64_t paddedWidth = in[2] + pads[1] + pads[3];
  return in[3] == G && out[3] == G && w[1] == 1 &&
         conv_strategy::depthwiseInRegisters(w[2], w[3], paddedWidth, in[3]) &&
         conv_strategy::byteRingFits(w[2], conv.getDilations()[0], paddedWidth);
}

/// The ops that compute a byte convolution's input from an 8-bit
/// activation -- cast(q), maybe minus a scalar constant (its zero point) --
/// each read by the next alone: its prologue, producers first. Empty when
/// the input is anything else.
SmallVector<Operation *> byteInput(ConvOp conv) {
  SmallVector<Operation *> ops;
  Value v = conv.getInput();
  if (auto sub = v.getDefiningOp<SubOp>()) {
    if (!sub->hasOneUse() || !sub.getRhs().getDefiningOp<ConstantOp>() ||
        llvm::cast<RankedTensorType>(sub.getRhs().getType()).getNumElements() != 1 ||
        sub.getLhs().getType() != v.getType())
      return {};
    ops.push_back(sub);
    v = sub.getLhs();
  }
  auto cast = v.getDefiningOp<CastOp>();
  if (!cast || !cast->hasOneUse() || !elementTypeOf(cast.getInput()).isInteger(8))
    return {};
  ops.push_back(cast);
  for (Operation *op : ops)
    if (op->getBlock() != conv->getBlock())
      return {};
  std::reverse(ops.begin(), ops.end());
  return ops;
}

/// Whether `user`, an elementwise op consuming `chain`, can join a group
/// whose anchor is `anchor` (null for a pure elementwise group); `byteConv`:
/// the anchor is a byte convolution, whose epilogue may end in a cast to
/// 8 bits.
bool canJoin(Operation *user, Value chain, Operation *anchor, bool byteConv) {
  if (!isElementwise(user))
    return false;
  // Elementwise chains may change element type (casts, comparisons, bool
  // logic: the kernel computes each op in its own type and stores the last
  // converted); anchors' epilogues keep their element type. The shape never
  // changes along a chain.
  // (An 8-bit product's epilogue is typed like an elementwise chain: its
  // int32 sums cast to f32, scaled, requantized to 8 bits.)
  Type rt = user->getResult(0).getType();
  bool typed = !anchor || isa<MatMulIntegerOp, ConvIntegerOp>(anchor);
  bool toBytes = byteConv && isa<CastOp>(user) && elementTypeOf(chain).isF32() &&
                 llvm::cast<ShapedType>(rt).getElementType().isInteger(8);
  bool typeOk = !typed ? (!isa<CastOp>(user) && rt == chain.getType()) ||
                             isRoundingPair(user, chain) || toBytes
                       : shapeOf(user->getResult(0)) == shapeOf(chain);
  if (!typeOk)
    return false;
  // Epilogues read side operands in the anchor's element type (a where's
  // i1 condition, e.g. a dynamic-shape mask, is an elementwise group's).
  auto elemOf = [](Value v) { return llvm::cast<ShapedType>(v.getType()).getElementType(); };
  if (!typed && llvm::any_of(user->getOperands(), [&](Value o) {
        return elemOf(o) != elemOf(chain);
      }))
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
  llvm::SmallPtrSet<Operation *, 4> distinct(op->getUsers().begin(), op->getUsers().end());
  int64_t users = distinct.size();
  if (users < 2)
    return false; // one user reading it twice (d * d) fuses it once
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
    // An epilogue reads its side operands in the anchor's element type: no
    // cast from another type (the up half of a rounding pair stays with its
    // down half, a tensor-core product's bf16 result is read as stored).
    // An 8-bit product's epilogue is typed: it reads an 8-bit side as it is
    // stored and converts it in registers (a residual that is another
    // layer's quantized output: 1 byte a value read, no f32 copy written).
    bool typed = anchor && isa<MatMulIntegerOp, ConvIntegerOp>(anchor) &&
                 elementTypeOf(def->getOperand(0)).isInteger(8);
    if (anchor && !typed && isa<CastOp>(def) &&
        elementTypeOf(def->getOperand(0)) != elementTypeOf(def->getResult(0)))
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

} // namespace

FusionOp wrapInFusion(ArrayRef<Operation *> group) {
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
  return fusion;
}

namespace {

/// Used, by one op only (maybe as several of its operands: d * d).
bool hasOneUser(Value v) {
  return !v.use_empty() && llvm::all_equal(v.getUsers());
}

bool isReduction(Operation *op) {
  return isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp>(op);
}

/// The elementwise ops that compute a reduction's input and nothing else
/// (single use, the input's shape), producers first: the reduction kernel
/// evaluates them per element it reads.
void reductionPrologue(Value v, const llvm::SmallPtrSetImpl<Operation *> &taken,
                       Block *block, SmallVectorImpl<Operation *> &out) {
  Operation *def = v.getDefiningOp();
  if (!def || !isElementwise(def) || !hasOneUser(v) || taken.contains(def) ||
      def->getBlock() != block || llvm::is_contained(out, def))
    return;
  for (Value operand : def->getOperands())
    if (operand.getType() == v.getType())
      reductionPrologue(operand, taken, block, out);
  out.push_back(def);
}

/// Attention with the ops that make its query, key and value views of other
/// tensors (the transposes and reshapes that split heads, the slices of a
/// joined Q/K/V projection) and the transpose that merges heads after it:
/// the kernel reads and writes those layouts directly. Key and value rows
/// must stay contiguous.
SmallVector<Operation *> attentionGroup(AttentionOp att,
                                        const llvm::SmallPtrSetImpl<Operation *> &taken) {
  SmallVector<Operation *> group;
  for (unsigned i = 0; i < 3; ++i) {
    SmallVector<Operation *> chain;
    Value v = att->getOperand(i);
    while (Operation *def = v.getDefiningOp()) {
      if (!isa<TransposeOp, ReshapeOp, SliceOp>(def) || !def->hasOneUse() ||
          taken.contains(def) || def->getBlock() != att->getBlock() ||
          llvm::is_contained(group, def))
        break;
      chain.push_back(def);
      v = def->getOperand(0);
    }
    // The kernel's view of the chain's input must exist (reshapes that
    // merge non-contiguous dimensions do not), with key and value rows
    // contiguous.
    auto view = stridedViewOf(att->getOperand(i), v);
    if (!view || (i > 0 && view->strides.back() != 1))
      continue;
    group.append(chain.begin(), chain.end());
  }
  llvm::sort(group, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  group.push_back(att);
  if (att->hasOneUse())
    if (auto t = dyn_cast<TransposeOp>(*att->getUsers().begin()))
      group.push_back(t);
  return group;
}

//===----------------------------------------------------------------------===//
// Horizontal fusion: matmuls that share their input
//===----------------------------------------------------------------------===//

/// Whether `v` reaches an attention operand only through single-use
/// reshapes and transposes (which the attention kernel reads through).
bool feedsAttention(Value v) {
  while (v.hasOneUse()) {
    Operation *user = *v.getUsers().begin();
    if (isa<AttentionOp>(user))
      return true;
    if (!isa<ReshapeOp, TransposeOp>(user))
      return false;
    v = user->getResult(0);
  }
  return false;
}

/// One projection: x @ W (+ b), W a constant matrix, b a constant vector.
struct Projection {
  MatMulOp matmul;
  AddOp bias; // or null
  Value result() { return bias ? bias.getResult() : matmul.getResult(); }
};

/// Matmuls of the same input by constant matrices whose results (after an
/// optional constant bias) all feed attention become one matmul by the
/// matrices side by side, and slices of its result: one kernel reads the
/// input once, and the attention kernel reads its query, key and value
/// slices in place (the Q/K/V projections of a transformer layer).
void joinProjections(func::FuncOp fn) {
  llvm::MapVector<Value, SmallVector<Projection>> byInput;
  fn.walk([&](MatMulOp mm) {
    auto rhs = llvm::cast<RankedTensorType>(mm.getRhs().getType());
    auto lhs = llvm::cast<RankedTensorType>(mm.getLhs().getType());
    if (rhs.getRank() != 2 || lhs.getRank() < 2 || !getF32Constant(mm.getRhs()))
      return;
    Projection p{mm, nullptr};
    if (mm->hasOneUse())
      if (auto add = dyn_cast<AddOp>(*mm->getUsers().begin())) {
        Value other = add.getLhs() == mm.getResult() ? add.getRhs() : add.getLhs();
        auto t = llvm::cast<RankedTensorType>(other.getType());
        if (add.getType() == mm.getType() && t.getRank() == 1 && getF32Constant(other))
          p.bias = add;
      }
    if (feedsAttention(p.result()))
      byInput[mm.getLhs()].push_back(p);
  });
  for (auto &[x, projections] : byInput) {
    if (projections.size() < 2)
      continue;
    int64_t K = llvm::cast<RankedTensorType>(projections[0].matmul.getRhs().getType()).getDimSize(0);
    int64_t N = 0;
    bool anyBias = false;
    for (Projection &p : projections) {
      N += llvm::cast<RankedTensorType>(p.matmul.getRhs().getType()).getDimSize(1);
      anyBias |= static_cast<bool>(p.bias);
    }
    // [K x N] weights and an N-vector bias (zeros where a projection has none).
    std::vector<float> w(K * N), b(N, 0.0f);
    int64_t col = 0;
    for (Projection &p : projections) {
      int64_t n = llvm::cast<RankedTensorType>(p.matmul.getRhs().getType()).getDimSize(1);
      auto wi = *getF32Constant(p.matmul.getRhs());
      for (int64_t k = 0; k < K; ++k)
        std::copy(wi.begin() + k * n, wi.begin() + (k + 1) * n, w.begin() + k * N + col);
      if (p.bias) {
        Value bv = p.bias.getLhs() == p.matmul.getResult() ? p.bias.getRhs() : p.bias.getLhs();
        auto bi = *getF32Constant(bv);
        std::copy(bi.begin(), bi.end(), b.begin() + col);
      }
      col += n;
    }
    // Build after the last projection's defining values, before its first use.
    Operation *first = projections[0].matmul;
    for (Projection &p : projections)
      if (p.matmul->isBeforeInBlock(first))
        first = p.matmul;
    OpBuilder builder(first);
    SmallVector<Location> locs;
    for (Projection &p : projections)
      locs.push_back(p.matmul.getLoc());
    Location loc = FusedLoc::get(fn.getContext(), locs);
    auto f32 = builder.getF32Type();
    Value wc = makeF32Constant(builder, loc, RankedTensorType::get({K, N}, f32), w, "qkv_weight");
    Value y = MatMulOp::create(builder, loc, x, wc);
    if (anyBias) {
      Value bc = makeF32Constant(builder, loc, RankedTensorType::get({N}, f32), b, "qkv_bias");
      y = AddOp::create(builder, loc, y, bc);
    }
    int64_t rank = llvm::cast<RankedTensorType>(y.getType()).getRank();
    builder.setInsertionPointAfter(y.getDefiningOp());
    col = 0;
    for (Projection &p : projections) {
      auto type = llvm::cast<RankedTensorType>(p.result().getType());
      SmallVector<int64_t> offsets(rank, 0), strides(rank, 1);
      offsets.back() = col;
      col += type.getShape().back();
      auto slice = SliceOp::create(builder, p.matmul.getLoc(), y, offsets, type.getShape(), strides);
      p.result().replaceAllUsesWith(slice.getResult());
    }
    for (Projection &p : projections) {
      if (p.bias)
        p.bias->erase();
      p.matmul->erase();
    }
  }
}
struct FusePass : impl::FusePassBase<FusePass> {
  using FusePassBase::FusePassBase;

  void runOnOperation() override {
    joinProjections(getOperation());
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
    // Byte convolutions claim their input's dequantization first (else the
    // producer's epilogue would take the cast back up with its rounding
    // pair and write f32).
    llvm::DenseMap<Operation *, SmallVector<Operation *>> byteInputs;
    if (byteConvs)
      getOperation().walk([&](ConvOp conv) {
        if (!isByteConv(conv))
          return;
        auto ops = byteInput(conv);
        for (Operation *op : ops)
          taken.insert(op);
        byteInputs[conv] = std::move(ops);
      });
    // Anchors first, so that a recomputed producer defined before an anchor
    // joins the anchor's epilogue rather than starting a group of its own.
    for (bool anchorsPhase : {true, false})
    for (Block &block : getOperation().getBody()) {
      for (Operation &op : block) {
        if (anchorsPhase != (isAnchor(&op) || isa<AttentionOp>(&op) || isReduction(&op)))
          continue;
        if (auto att = dyn_cast<AttentionOp>(&op)) {
          auto group = attentionGroup(att, taken);
          for (Operation *g : group)
            taken.insert(g);
          if (group.size() > 1)
            groups.push_back(group);
          continue;
        }
        if (taken.contains(&op) || !(isAnchor(&op) || isElementwise(&op) || isReduction(&op)))
          continue;
        Operation *anchor = isAnchor(&op) ? &op : nullptr;
        bool byteConv = byteInputs.count(&op) != 0;
        SmallVector<Operation *> group;
        if (isReduction(&op))
          reductionPrologue(op.getOperand(0), taken, &block, group);
        if (byteConv)
          group.append(byteInputs[&op]);
        group.push_back(&op);
        Value chain = op.getResult(0);
        while (chain.hasOneUse()) {
          Operation *user = *chain.getUsers().begin();
          // A user already in another group (both operands of an add end
          // chains, say) stays there.
          if (user->getBlock() != &block || taken.contains(user) ||
              !canJoin(user, chain, anchor, byteConv))
            break;
          // A reduction's epilogue keeps its element type too (no cast, no
          // comparison: the kernel stores in the reduction's type).
          if (isReduction(&op) && user->getResult(0).getType() != chain.getType())
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
        // An anchor's epilogue keeps its element type: a rounding pair's
        // down half whose up half went elsewhere stays out (a byte
        // convolution's cast to 8 bits stays: it writes bytes).
        auto toBytes = [&](Operation *last) {
          return byteConv && elementTypeOf(last->getResult(0)).isInteger(8);
        };
        if (anchor && !isa<MatMulIntegerOp, ConvIntegerOp>(anchor) && group.size() > 1 &&
            isa<CastOp>(group.back()) && !toBytes(group.back()) &&
            group.back()->getResult(0).getType() != anchor->getResult(0).getType())
          group.pop_back();
        for (Operation *g : group)
          taken.insert(g);
        if (group.size() > 1)
          groups.push_back(group);
      }
    }
    for (auto &g : groups)
      wrapInFusion(g);
  }
};

} // namespace
} // namespace kiln
