//===- LiveRows.h - kernels that compute only a run's rows ------*- C++ -*-===//
//
// A model with a symbolic dimension is compiled at the symbol's bound; the
// runtime pads a smaller run's inputs to it. Where the symbol is the
// leading axis of a kernel's output and nothing downstream reads the padded
// rows, the kernel need only compute the run's rows: its launch shrinks
// with the run's size (Launch::liveSymbol), so a batch-1 run of a model
// bounded at 64 does not pay for 64 images.
//
// The analysis is over func.func @main of kiln ops:
//  - forward: which values have a symbol on axis 0 whose rows are computed
//    row by row (output row i reads input rows i only, along that axis);
//  - backward: which values must have valid padded rows (a kernel reads
//    them beyond the run's rows: a reduction or gather along the axis, a
//    broadcast of one symbol against another, a max over padding that
//    repeats the last row, ...). Those kernels, and the kernels computing
//    their inputs, stay at the bound.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_PROGRAM_LIVEROWS_H
#define KILN_CODEGEN_PROGRAM_LIVEROWS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

namespace kiln::codegen {

/// The ops of `fn` whose kernels may compute only the rows of their result's
/// axis 0 below the run's size of a symbol, mapped to that symbol.
llvm::DenseMap<mlir::Operation *, int> liveRowOps(mlir::func::FuncOp fn);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_PROGRAM_LIVEROWS_H
