//===- ScalarOps.h - one element of an elementwise op -----------*- C++ -*-===//
//
// The value of an elementwise kiln op at one element (scalarOp), which
// every kernel that applies an elementwise op calls (elementwise kernels,
// fusion epilogues and prologues), and the broadcast strides of its operands.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_KERNELS_SCALAROPS_H
#define KILN_CODEGEN_KERNELS_SCALAROPS_H

#include "codegen/kernels/KernelEmitter.h"

namespace kiln::codegen::kernels {

/// Strides, in the coordinates of `out`, at which numpy broadcasting reads an
/// operand of shape `in` (0 along broadcast dimensions).
std::vector<int64_t> numpyStrides(ArrayRef<int64_t> in, ArrayRef<int64_t> out);

/// Strides at which elementwise `user` reads `operand`, in the coordinates
/// of its result: per-channel (dimension 1) for batch-norm parameters,
/// numpy broadcasting otherwise.
std::vector<int64_t> operandStrides(Operation *user, unsigned operandNo);

/// The scalar computation of one elementwise op on scalar operands.
Value scalarOp(KernelEmitter &e, Operation *op, ArrayRef<Value> v);

} // namespace kiln::codegen::kernels

#endif // KILN_CODEGEN_KERNELS_SCALAROPS_H
