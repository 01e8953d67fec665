//===- LiveExtents.h - kernels that compute only a run's extents -*- C++ -*-===//
//
// A model with symbolic dimensions is compiled at the symbols' bounds, every
// tensor at its bound shape and strides; the runtime pads a smaller run's
// inputs to them. Positions past a symbol's run-time size along an axis are
// padding. Where nothing reads a value's padding along an axis, the kernel
// computing it need only compute the *live* positions [0, n) there: its
// loops run to the run's sizes (the sizes come as kernel arguments) and its
// launch shrinks with them, so a decode step with 64 cached keys does not
// pay for a cache bounded at 4096.
//
// The analysis is over func.func @main of kiln ops:
//  - forward: the symbol of every axis of every value whose positions
//    along it are computed position by position (position i of the result
//    reads position i of the operand axes that map to it: elementwise ops
//    with numpy broadcasting, transposes, reshapes keeping the axis,
//    gathers, the rows and columns of matrix products, softmax, ...);
//  - backward: which axes of which values some kernel reads past the live
//    positions (a reduction or gather along the axis, an axis mapping to a
//    result axis that is computed whole, ...). Those axes of those values
//    are computed whole, and so are the axes they read.
// Reductions and contractions over a symbolic axis whose kernels stop at
// the live extent (softmax, the k loop of a matrix product) read only the
// live positions: their results are exact without the padding.
//
// Only symbols whose sizes are known before the run (inputs' and those
// derived from them) bound extents. For the CUDA targets (`gpu`), only the
// ops whose GPU-shaped kernels keep to their rules get them (elementwise
// ops, the data movers, softmax and the norms, reductions, matrix products,
// convolutions, pools and Gemm, and fusions around one of them: see
// gpuWalksLive); the others compute, and read, everything at the bounds.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_PROGRAM_LIVEEXTENTS_H
#define KILN_CODEGEN_PROGRAM_LIVEEXTENTS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

namespace kiln::codegen {

struct LiveExtents {
  /// Per value: per axis, the symbol whose run-time size its live positions
  /// end at (-1: no symbol, every position is data).
  llvm::DenseMap<mlir::Value, llvm::SmallVector<int>> symbols;
  /// Per op whose kernel computes only live positions: per result axis, the
  /// symbol it stops at, or -1 (the whole axis).
  llvm::DenseMap<mlir::Operation *, llvm::SmallVector<int>> box;
  /// Repacked concats along a symbolic axis (kiln.repacked) whose only user
  /// is the gather putting their pieces one after another: the gather's
  /// kernel reads the pieces at their run-time sizes, the concat has none.
  llvm::DenseMap<mlir::Operation *, mlir::Operation *> packedConcat; // gather -> concat
  /// Ops without a kernel: packedConcat's concats, and the ops computing
  /// only the indices of its gathers.
  llvm::DenseSet<mlir::Operation *> unused;
  /// Padding masks without a kernel (MaskSymbols' where(iota < size, x,
  /// fill)) where every reader stops at the live extent of the masked axes:
  /// on the live positions the mask is x, so its result is x's buffer. The
  /// ops computing only their conditions join `unused`.
  llvm::DenseSet<mlir::Operation *> passThrough;
  /// Ops whose kernels take the run's sizes: those in `box`, and those
  /// reducing over a symbolic axis only to its live extent.
  llvm::DenseSet<mlir::Operation *> sized;
  /// Per argument of the function: some kernel reads past the live extent
  /// of one of its symbolic axes.
  llvm::SmallVector<bool> argPaddingRead;

  /// The symbol of axis `axis` of `v`, or -1.
  int symbolOf(mlir::Value v, int64_t axis) const {
    auto it = symbols.find(v);
    if (it == symbols.end() || axis < 0 || axis >= static_cast<int64_t>(it->second.size()))
      return -1;
    return it->second[axis];
  }
};

/// The live extents of `fn`'s values and kernels. `known[s]`: symbol s's
/// size is known before the run (the others bound nothing); `gpu`: for the
/// CUDA targets' kernels.
LiveExtents liveExtents(mlir::func::FuncOp fn, llvm::ArrayRef<bool> known, bool gpu = false);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_PROGRAM_LIVEEXTENTS_H
