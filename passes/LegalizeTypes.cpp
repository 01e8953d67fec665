//===- LegalizeTypes.cpp - f16/bf16 arithmetic in f32 between casts -------===//
//
// Kernels compute in f32. Each op with an f16 or bf16 tensor is cloned over
// f32 operands (kiln.cast to f32) and its results cast back to their type.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "mlir/IR/IRMapping.h"

namespace kiln {
#define GEN_PASS_DEF_LEGALIZETYPESPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// An f16 or bf16 tensor type (what this pass rewrites). f64 is left
/// alone: f32 has neither its range nor its precision.
bool isNarrow(Type t) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(t);
  return tensor && (tensor.getElementType().isF16() || tensor.getElementType().isBF16());
}

Type withF32(Type t) {
  auto tensor = llvm::cast<RankedTensorType>(t);
  return tensor.clone(Float32Type::get(t.getContext()));
}

struct LegalizeTypesPass : kiln::impl::LegalizeTypesPassBase<LegalizeTypesPass> {
  using LegalizeTypesPassBase::LegalizeTypesPassBase;

  bool keeps(Operation *op) const {
    if (isa<ConstantOp, CastOp, ReshapeOp, TransposeOp, SliceOp, ConcatOp, FusionOp, YieldOp,
            ExpandOp, GatherOp, GatherElementsOp, ScatterElementsOp, ScatterNDOp,
            TopKIndicesOp>(op))
      return true;
    if (tensorCores && isa<MatMulOp, GemmOp, ConvOp>(op)) {
      Type et = llvm::cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
      return et.isF16() || et.isBF16();
    }
    return false;
  }

  void runOnOperation() override {
    SmallVector<Operation *> work;
    getOperation().walk([&](Operation *op) {
      if (!llvm::isa<KilnDialect>(op->getDialect()) || keeps(op))
        return;
      if (llvm::any_of(op->getOperandTypes(), isNarrow) ||
          llvm::any_of(op->getResultTypes(), isNarrow))
        work.push_back(op);
    });
    for (Operation *op : work) {
      OpBuilder b(op);
      IRMapping map;
      for (Value v : op->getOperands())
        if (isNarrow(v.getType()))
          map.map(v, CastOp::create(b, op->getLoc(), withF32(v.getType()), v).getResult());
      Operation *wide = b.clone(*op, map);
      for (OpResult r : wide->getResults())
        if (isNarrow(r.getType()))
          r.setType(withF32(r.getType()));
      for (auto [old, now] : llvm::zip(op->getResults(), wide->getResults())) {
        Value v = now;
        if (old.getType() != now.getType())
          v = CastOp::create(b, op->getLoc(), old.getType(), now).getResult();
        old.replaceAllUsesWith(v);
      }
      op->erase();
    }
  }
};

} // namespace
