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

/// The output size of one windowed spatial dimension (convolution or
/// pooling; ONNX's rule: with ceil mode the last window starts inside the
/// input or its begin padding); 0 when no window fits.
int64_t windowOut(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pBegin, int64_t pEnd,
                  bool ceilMode);

/// Where a tensor's elements lie in the buffer of another: element i (a
/// coordinate per dimension) is at offset + sum(i[d] * strides[d]) of
/// `base`'s row-major buffer.
struct StridedView {
  mlir::Value base;
  int64_t offset = 0;
  llvm::SmallVector<int64_t> strides;
};

/// The view of `v` through the kiln.transpose, kiln.slice and kiln.reshape
/// ops that produce it (back to `stop`, or to the first value made by
/// another op or a block argument); nullopt when a reshape merges
/// dimensions that are not contiguous in the view. Kernels read such views
/// in place.
std::optional<StridedView> stridedViewOf(mlir::Value v, mlir::Value stop = {});
} // namespace kiln

#endif // KILN_DIALECT_KILNDIALECT_H
