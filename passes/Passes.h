//===- Passes.h - kiln graph passes -----------------------------*- C++ -*-===//
#ifndef KILN_PASSES_PASSES_H
#define KILN_PASSES_PASSES_H

#include "dialects/kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Wraps `group` (ops of one block, in dependence order; the last one's
/// result is the group's) in a kiln.fusion placed at the last op: operands
/// from outside the group become the fusion's inputs. (kiln-fuse's regions;
/// kiln-rematerialize regroups with it.)
FusionOp wrapInFusion(llvm::ArrayRef<mlir::Operation *> group);

/// How many values kiln-rematerialize could recompute in `fn`.
int64_t countRematerializeCandidates(mlir::func::FuncOp fn);

/// Whether kiln-lower-precision may lower `op` (an f32 conv, gemm or
/// matmul; attention too unless for tensor cores): the contractions it
/// counts, in order, for keep-index.
bool isLowerableContraction(mlir::Operation *op, bool tensorCores);

/// Whether kiln-quantize-int8 can quantize `op` (a gemm or matmul of an f32
/// lhs and f32 constant 2-D weights): the products --precision=int8
/// calibrates, in order.
bool isInt8Candidate(mlir::Operation *op);

} // namespace kiln

#endif // KILN_PASSES_PASSES_H
