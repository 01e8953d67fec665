//===- DataDependentSizes.h - sizes the run computes from the data -*- C++ -*-===//
//
// Converters whose output size depends on run-time values (see
// DataDependentSizes.cpp): the output's axis carries a data-dependent
// symbol, built at its bound, cropped by the runtime.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_ONNX_DATADEPENDENTSIZES_H
#define KILN_FRONTENDS_ONNX_DATADEPENDENTSIZES_H

#include "frontends/onnx/NodeContext.h"

namespace kiln::onnx_import {

/// Refuses `v` (named `what` in the error) when it carries a dynamic
/// dimension: a data-dependent result would count its padding.
mlir::LogicalResult requireStatic(NodeContext &ctx, mlir::Value v, const char *what);
/// NonZero of a run-time input: [rank, count] coordinates, count at most
/// the input's element count.
mlir::LogicalResult nonZeroAtRunTime(NodeContext &ctx);
/// Compress of `x` along `axis` by the node's run-time condition (input 1).
mlir::LogicalResult compressAtRunTime(NodeContext &ctx, mlir::Value x, int64_t axis);

/// TopK with k a run-time value: the whole axis ranked, the output axis a
/// data-dependent size k (at most the axis' size).
mlir::LogicalResult topKAtRunTime(NodeContext &ctx, int64_t axis);

/// Slice (opset 10+) whose starts, ends, axes or steps arrive at run time:
/// each axis they may name gathered from its clamped start by its step, its
/// length a data-dependent size (at most the axis).
mlir::LogicalResult sliceAtRunTime(NodeContext &ctx);
/// A reduction whose axes arrive at run time (keepdims 1; the input static):
/// the tensor at the input's shape where every selected axis holds its
/// reduction, each axis a data-dependent size (1 where selected). Built by
/// `reduceAxis(v, d)` (one axis, keepdims) on the axes the run selects;
/// `finish` maps the result (the last op, which states the sizes). Null
/// when the axes are known (an empty list: the caller's default).
mlir::FailureOr<mlir::Value>
reduceOverRunTimeAxes(NodeContext &ctx, mlir::Value x,
                      llvm::function_ref<mlir::Value(mlir::Value, int64_t)> reduceAxis,
                      llvm::function_ref<mlir::Value(mlir::Value)> finish);

} // namespace kiln::onnx_import

#endif // KILN_FRONTENDS_ONNX_DATADEPENDENTSIZES_H
