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

// The enum attributes before the dialect: its kiln.* attribute helpers
// (kiln.precision) take them.
#include "dialects/kiln/KilnEnums.h.inc"
#define GET_ATTRDEF_CLASSES
#include "dialects/kiln/KilnAttrs.h.inc"

#include "dialects/kiln/KilnDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/kiln/KilnOps.h.inc"

namespace kiln {
/// Whether `op` computes each result element from the elements at the same
/// position of its operands (numpy broadcasting): arithmetic and
/// activations. Such ops fuse into epilogues and elementwise kernels.
bool isElementwise(mlir::Operation *op);

/// The ops whose operands broadcast numpy-style against each other: binary
/// arithmetic, logic and bit ops, comparisons and where.
/// `BroadcastingOps::contains(op)`, or `BroadcastingOps::has<OpTy>` at
/// compile time.
template <typename... Ops> struct OpList {
  static bool contains(mlir::Operation *op) { return llvm::isa<Ops...>(op); }
  template <typename OpTy> static constexpr bool has = llvm::is_one_of<OpTy, Ops...>::value;
};
using BroadcastingOps =
    OpList<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, ModOp, AndOp, OrOp, XorOp, ShlOp,
           ShrOp, CompareOp, WhereOp>;

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
/// `v` itself: row-major strides, offset 0.
StridedView rowMajorView(mlir::Value v);
/// The view `in` of the operand of `def` (a kiln.transpose, kiln.slice or
/// kiln.reshape) carried to its result; nullopt for other ops and for
/// reshapes that merge dimensions not contiguous in `in`.
std::optional<StridedView> viewThrough(mlir::Operation *def, const StridedView &in);
/// Whether `view`, of a tensor of `shape`, is its base's whole buffer in
/// row-major order: the tensor is a reshape of the base.
bool isRowMajorOf(const StridedView &view, llvm::ArrayRef<int64_t> shape);

/// Narrow storage types (NarrowTypes.cpp): float8 (f8E4M3FN, f8E4M3FNUZ,
/// f8E5M2, f8E5M2FNUZ, f8E8M0FNU), float4 (f4E2M1FN) and 4-/2-bit
/// integers. The importer gives them to the model's tensors;
/// kiln-widen-narrow-types carries them in f32 or i8/ui8 (the carrier),
/// and the runtime converts the model's narrow inputs and outputs.
/// The runtime's dtype code (kiln/runtime.h) of a narrow type; 0 otherwise.
int32_t narrowDtype(mlir::Type t);
/// f32, i8 or ui8 for a narrow type; null otherwise.
mlir::Type narrowCarrier(mlir::Type t);
/// 0 "up", 1 "down", 2 "nearest" (f8E8M0FNU rounding); -1 for others.
int roundModeCode(llvm::StringRef mode);
/// `v` rounded to a value of narrow type `format`, as kiln.narrow rounds.
double roundToNarrow(double v, mlir::Type format, bool saturate, llvm::StringRef roundMode);
} // namespace kiln

#include "dialects/kiln/KilnAttributes.h"

#endif // KILN_DIALECT_KILNDIALECT_H
