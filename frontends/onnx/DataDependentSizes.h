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

/// NonZero of a run-time input: [rank, count] coordinates, count at most
/// the input's element count.
mlir::LogicalResult nonZeroAtRunTime(NodeContext &ctx);
/// Compress of `x` along `axis` by the node's run-time condition (input 1).
mlir::LogicalResult compressAtRunTime(NodeContext &ctx, mlir::Value x, int64_t axis);

/// TopK with k a run-time value: the whole axis ranked, the output axis a
/// data-dependent size k (at most the axis' size).
mlir::LogicalResult topKAtRunTime(NodeContext &ctx, int64_t axis);

} // namespace kiln::onnx_import

#endif // KILN_FRONTENDS_ONNX_DATADEPENDENTSIZES_H
