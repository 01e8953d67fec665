//===- ConstantFolds.h - folding kiln ops over constant operands -*- C++ -*-===//
//
// Elementwise f32 arithmetic whose operands are all constants becomes a
// constant at compile time: a QDQ model's weights arrive as
// (cast(int8) - zero_point) * scale, which then reach the contraction
// kernels as f32 weights (packed at compile time) instead of being
// dequantized on every run.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECTS_KILN_CONSTANTFOLDS_H
#define KILN_DIALECTS_KILN_CONSTANTFOLDS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"

namespace kiln {

/// The elementwise f32 binary op `op` (kiln.add, sub, mul, div: `fn`) over
/// constant operands `lhs` and `rhs` (dense or resource elements, numpy
/// broadcasting) as a constant of its result type, or null: the operands
/// are not both f32 constants, or broadcasting would make the constant
/// larger than both of them (past 1024 elements: a kernel computes that
/// cheaper than the artifact stores it).
mlir::Attribute foldF32Binary(mlir::Operation *op, mlir::Attribute lhs, mlir::Attribute rhs,
                              float (*fn)(float, float));

/// A resource-backed constant `value` under the static shape `type` (same
/// element count and type), or null.
mlir::Attribute reshapedResource(mlir::Attribute value, mlir::RankedTensorType type);

} // namespace kiln

#endif // KILN_DIALECTS_KILN_CONSTANTFOLDS_H
