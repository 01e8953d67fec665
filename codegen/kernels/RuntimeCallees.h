//===- RuntimeCallees.h - the functions kernels call, declared --*- C++ -*-===//
//
// Kernels call the runtime's ukernels (runtime/include/kiln/runtime.h:
// matrix products, Winograd convolutions) and, on the CUDA target, the
// prelude's thread, barrier, shuffle and tensor-core helpers. Each is
// declared once in the kernels module, here, with the argument list its C
// prototype has; KernelEmitter's ukernel()/ukernelEp() build the calls.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_KERNELS_RUNTIMECALLEES_H
#define KILN_CODEGEN_KERNELS_RUNTIMECALLEES_H

#include "mlir/IR/BuiltinOps.h"

namespace kiln::codegen::kernels {

/// Declares (private func.func) every ukernel in `kernels`, and with `gpu`
/// the CUDA prelude's helpers too.
void declareRuntimeCallees(mlir::ModuleOp kernels, mlir::Location loc, bool gpu);

} // namespace kiln::codegen::kernels

#endif // KILN_CODEGEN_KERNELS_RUNTIMECALLEES_H
