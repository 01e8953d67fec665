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

/// The positions of `keep`'s true elements (1-D, i1) in order, along a new
/// data-dependent symbol named `name` (set in `sym`) whose size is their
/// count; past it, the last of them repeated. Null on failure (reported).
mlir::Value selectedPositions(NodeContext &ctx, mlir::Value keep, const std::string &name,
                              int32_t &sym);

/// Refuses `v` (named `what` in the error) when it carries a dynamic
/// dimension: a data-dependent result would count its padding.
mlir::LogicalResult requireStatic(NodeContext &ctx, mlir::Value v, const char *what);
/// NonZero of a run-time input: [rank, count] coordinates, count at most
/// the input's element count.
mlir::LogicalResult nonZeroAtRunTime(NodeContext &ctx);
/// Compress of `x` along `axis` by the node's run-time condition (input 1).
mlir::LogicalResult compressAtRunTime(NodeContext &ctx, mlir::Value x, int64_t axis);

/// Unique of a run-time input (RunTimeUnique.cpp): the distinct elements
/// or slices along the node's axis, their count a data-dependent size.
mlir::LogicalResult uniqueAtRunTime(NodeContext &ctx);

/// TopK with k a run-time value: the whole axis ranked, the output axis a
/// data-dependent size k (at most the axis' size); `k` its value when not
/// the node's input 1 (a size rebuilt at run time).
mlir::LogicalResult topKAtRunTime(NodeContext &ctx, int64_t axis, mlir::Value k = {});

/// Slice (opset 10+) whose starts, ends, axes or steps arrive at run time:
/// each axis they may name gathered from its clamped start by its step, its
/// length a data-dependent size (at most the axis).
/// `args` (starts, ends, axes, steps; null: the node's input) stand for
/// arguments rebuilt from run-time sizes.
mlir::LogicalResult sliceAtRunTime(NodeContext &ctx, llvm::ArrayRef<mlir::Value> args = {});
/// A reduction whose axes arrive at run time (the input static): the tensor
/// at the input's shape where every selected axis holds its reduction, each
/// axis a data-dependent size (1 where selected), or with keepdims 0 the
/// axes not selected (dropReducedAxes); an empty input gives the
/// reduction's identity. Built by `reduceAxis(v, d)` (one axis, keepdims)
/// on the axes the run selects; `finish` maps the result. Null when the
/// axes are known (an empty list: the caller's default).
mlir::FailureOr<mlir::Value>
reduceOverRunTimeAxes(NodeContext &ctx, mlir::Value x,
                      llvm::function_ref<mlir::Value(mlir::Value, int64_t)> reduceAxis,
                      llvm::function_ref<mlir::Value(mlir::Value)> finish);

// Shapes named by run-time values (RunTimeShapes.cpp): the result's rank is
// known, each axis a data-dependent size; the data must be static and
// non-empty.

/// Reshape to a target shape that arrives at run time (0 and -1 as ONNX's).
mlir::LogicalResult reshapeAtRunTime(NodeContext &ctx);
/// Unsqueeze and Squeeze by axes that arrive at run time.
mlir::LogicalResult unsqueezeAtRunTime(NodeContext &ctx);
mlir::LogicalResult squeezeAtRunTime(NodeContext &ctx);
/// Split along `axis` by sizes that arrive at run time (one per output).
mlir::LogicalResult splitAtRunTime(NodeContext &ctx, int64_t axis);
/// CumSum along an axis that arrives at run time (the result's shape is
/// the input's: the running sum along every axis, the named one chosen).
mlir::LogicalResult cumSumAtRunTime(NodeContext &ctx);
// Sizes from run-time values with no bound the graph implies
// (RunTimeGenerators.cpp): bounded by --max-shape for the node's output, or
// by kDefaultSymbolBound.

mlir::LogicalResult expandAtRunTime(NodeContext &ctx);
mlir::LogicalResult tileAtRunTime(NodeContext &ctx);
/// ConstantOfShape of a run-time shape, filled with `value` (one element).
mlir::LogicalResult constantOfShapeAtRunTime(NodeContext &ctx, const HostTensor &value);
mlir::LogicalResult rangeAtRunTime(NodeContext &ctx);
/// OneHot with a run-time depth; `axis` the new axis (normalized).
mlir::LogicalResult oneHotAtRunTime(NodeContext &ctx, int64_t axis);
/// A Hann, Hamming or Blackman window (coefficients a0, a1, a2) of a
/// run-time size, of element type `et`.
mlir::LogicalResult windowAtRunTime(NodeContext &ctx, mlir::Type et, double a0, double a1,
                                    double a2);
/// Pad of `axes` by run-time pads (mode constant, edge, reflect or wrap;
/// `runtimeValue` the constant when it arrives at run time, else `value`).
mlir::LogicalResult padAtRunTime(NodeContext &ctx, llvm::ArrayRef<int64_t> axes,
                                 llvm::StringRef mode, double value, mlir::Value runtimeValue);
/// CenterCropPad of `axes` to a run-time shape (input 1).
mlir::LogicalResult centerCropPadAtRunTime(NodeContext &ctx, llvm::ArrayRef<int64_t> axes);

/// `y` (a reduction's result spread over the input's shape, `shape` the
/// input's sizes) without the `k` axes `chosen` selects (i1[1] each). Null
/// on failure (reported).
mlir::Value dropReducedAxes(NodeContext &ctx, mlir::Value y, llvm::ArrayRef<int64_t> shape,
                            llvm::ArrayRef<mlir::Value> chosen, int64_t k, const std::string &name);

} // namespace kiln::onnx_import

#endif // KILN_FRONTENDS_ONNX_DATADEPENDENTSIZES_H
