//===- LowerPrecision.cpp - autocast ahead of time: bf16/fp16 contractions ===//
//
// kiln-lower-precision (Passes.td): convolutions, gemms and matmuls take
// bf16 (or f16) operands and give a bf16 result, accumulating in f32; so
// does attention on the CPU (its query, key and value; the mask and the
// softmax stay f32, the probabilities meet the values in bf16);
// elementwise additions and products of values that are already bf16 give
// bf16 (autocast's "promote" ops); everything else -- softmax,
// normalizations, reductions, exp/log/pow, the model's outputs -- stays f32.
// Constant weights convert at compile time (the canonicalizer folds the
// casts of constants).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_LOWERPRECISIONPASS
#include "passes/Passes.h.inc"

namespace {

Type elemOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()).getElementType(); }

Type withElem(Value v, Type e) {
  return llvm::cast<RankedTensorType>(v.getType()).clone(e);
}

/// The ONNX node names an op stands for (its NameLocs).
void namesOf(Location loc, SmallVectorImpl<std::string> &out) {
  if (auto n = llvm::dyn_cast<NameLoc>(loc))
    out.push_back(n.getName().str());
  else if (auto f = llvm::dyn_cast<FusedLoc>(loc))
    for (Location l : f.getLocations())
      namesOf(l, out);
}

/// The ONNX op types a lowered kiln op comes from, for --keep-fp32 by type.
ArrayRef<StringRef> onnxTypesOf(Operation *op) {
  static const StringRef conv[] = {"conv", "convtranspose", "convinteger"};
  static const StringRef gemm[] = {"gemm"};
  static const StringRef matmul[] = {"matmul", "einsum", "linear"};
  static const StringRef attention[] = {"attention", "multiheadattention"};
  if (isa<AttentionOp>(op))
    return attention;
  if (isa<ConvOp>(op))
    return conv;
  if (isa<GemmOp>(op))
    return gemm;
  return matmul;
}

struct LowerPrecisionPass : impl::LowerPrecisionPassBase<LowerPrecisionPass> {
  using LowerPrecisionPassBase::LowerPrecisionPassBase;

  Type low;                         // bf16 or f16
  llvm::DenseSet<Value> exact;      // f32 values that hold only `low` values

  /// --keep-fp32: by kiln op name, ONNX op type (case-insensitive) or node
  /// name (exact).
  bool kept(Operation *op) {
    std::string kilnName = op->getName().stripDialect().str();
    SmallVector<std::string> names;
    namesOf(op->getLoc(), names);
    for (const std::string &k : keepFp32) {
      std::string lower = llvm::StringRef(k).lower();
      if (lower == kilnName || llvm::is_contained(onnxTypesOf(op), lower) ||
          llvm::is_contained(names, k))
        return true;
    }
    return false;
  }

  /// `v` in `low` precision: the f32 value cast down (an exact value's cast
  /// back up is folded away by the canonicalizer).
  Value down(OpBuilder &b, Location loc, Value v) {
    return CastOp::create(b, loc, withElem(v, low), v).getResult();
  }

  /// `v` rounded to `low` values, in f32: a cast down and back up (the
  /// kernels do it in registers).
  Value rounded(OpBuilder &b, Location loc, Value v) {
    auto d = CastOp::create(b, loc, withElem(v, low), v);
    Value up = CastOp::create(b, loc, v.getType(), d.getResult()).getResult();
    exact.insert(up);
    return up;
  }

  /// Rounds the value `use` reads to `low` values. Through the reshapes and
  /// transposes that only this use reads (attention's head split), it is
  /// rounded where it is made, so that the rounding fuses into its producer
  /// and the moves stay views of it.
  void roundOperand(OpBuilder &b, OpOperand &use) {
    OpOperand *at = &use;
    Operation *def = at->get().getDefiningOp();
    while (def && isa<ReshapeOp, TransposeOp>(def) && at->get().hasOneUse()) {
      at = &def->getOpOperand(0);
      def = at->get().getDefiningOp();
    }
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(at->getOwner());
    at->set(rounded(b, at->getOwner()->getLoc(), at->get()));
    for (Operation *o = at->getOwner(); o != use.getOwner();
         o = *o->getResult(0).getUsers().begin())
      exact.insert(o->getResult(0));
  }

  /// Replaces `op`'s f32 result by the result rounded to `low` values.
  void roundResult(OpBuilder &b, Operation *op) {
    Value r = op->getResult(0);
    b.setInsertionPointAfter(op);
    Value up = rounded(b, op->getLoc(), r);
    r.replaceAllUsesExcept(up, up.getDefiningOp()->getOperand(0).getDefiningOp());
  }

  void runOnOperation() override {
    if (precision == "bf16")
      low = BFloat16Type::get(&getContext());
    else if (precision == "fp16" || precision == "f16")
      low = Float16Type::get(&getContext());
    else {
      getOperation().emitError("kiln-lower-precision: precision must be bf16 or fp16, not '")
          << precision << "'";
      return signalPassFailure();
    }
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (op->getParentOp() == getOperation())
        ops.push_back(op);
    });
    int64_t contraction = 0;
    for (Operation *op : ops) {
      OpBuilder b(op);
      bool attention = isa<AttentionOp>(op);
      if (isLowerableContraction(op, tensorCores)) {
        int64_t index = contraction++;
        if (kept(op) || llvm::is_contained(keepIndex, index))
          continue;
        attr::setPrecision(op, precision == "bf16" ? Precision::BF16 : Precision::F16);
        if (!tensorCores) {
          // The CPU computes in f32 on rounded values: operands that do not
          // hold `low` values yet round (constants at compile time), and so
          // does the result.
          // (Attention's mask, operand 3, is added to f32 scores.)
          for (OpOperand &use : op->getOpOperands())
            if (elemOf(use.get()).isF32() && !exact.contains(use.get()) &&
                !(attention && use.getOperandNumber() >= 3))
              roundOperand(b, use);
          // Attention's kernel rounds the result as it stores it (a cast
          // after it would be a kernel of its own).
          if (attention)
            exact.insert(op->getResult(0));
          else
            roundResult(b, op);
          continue;
        }
        // Tensor cores: operands in `low` (an exact value's down cast folds
        // into the up cast that made it, or converts), the result in `low`.
        for (OpOperand &use : op->getOpOperands()) {
          if (!elemOf(use.get()).isF32())
            continue;
          use.set(down(b, op->getLoc(), use.get()));
        }
        Value r = op->getResult(0);
        r.setType(withElem(r, low));
        b.setInsertionPointAfter(op);
        auto up = CastOp::create(b, op->getLoc(), withElem(r, Float32Type::get(&getContext())), r);
        r.replaceAllUsesExcept(up.getResult(), up);
        exact.insert(up.getResult());
        continue;
      }
      if (op->getNumResults() != 1 || !llvm::isa<RankedTensorType>(op->getResult(0).getType()) ||
          !elemOf(op->getResult(0)).isF32())
        continue;
      auto allExact = [&] {
        for (Value v : op->getOperands())
          if (llvm::isa<RankedTensorType>(v.getType()) && elemOf(v).isF32() && !exact.contains(v))
            return false;
        return op->getNumOperands() > 0;
      };
      // Values that move or select among exact values stay exact.
      if (isa<ReluOp, NegOp, AbsOp, MaxPoolOp, ReshapeOp, TransposeOp, SliceOp, ConcatOp,
              ExpandOp, MaxOp, MinOp>(op)) {
        if (allExact())
          exact.insert(op->getResult(0));
        continue;
      }
      // Sums and products of exact values are rounded to `low`, as
      // autocast's bf16 tensors would hold them (residual adds).
      if (isa<AddOp, SubOp, MulOp>(op) && allExact())
        roundResult(b, op);
    }
  }
};

} // namespace

// Attention only where its kernel takes rounded operands (the CPU; the
// tensor-core kernels' attention is f32).
bool isLowerableContraction(Operation *op, bool tensorCores) {
  if (!isa<ConvOp, GemmOp, MatMulOp>(op) && !(isa<AttentionOp>(op) && !tensorCores))
    return false;
  return elemOf(op->getResult(0)).isF32();
}

} // namespace kiln
