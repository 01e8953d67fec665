//===- KilnDialect.h - the kiln dialect and its ops -------------*- C++ -*-===//
//
// Include this to use the kiln dialect: it declares the dialect and every op.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_KILNDIALECT_H
#define KILN_DIALECT_KILNDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/kiln/KilnDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/kiln/KilnOps.h.inc"

namespace kiln {
/// Whether `op` computes each result element from the elements at the same
/// position of its operands (numpy broadcasting): arithmetic and
/// activations. Such ops fuse into epilogues and elementwise kernels.
bool isElementwise(mlir::Operation *op);
} // namespace kiln

#endif // KILN_DIALECT_KILNDIALECT_H
