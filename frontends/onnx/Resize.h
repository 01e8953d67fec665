//===- Resize.h - Resize's attributes, shared by its two builders -*- C++ -*-===//
//
// Resize and Upsample as gathers with weights: with compile-time scales or
// sizes the per-position taps are computed at import (ConvertIndexMaps.cpp);
// with run-time ones the graph computes them (RunTimeResize.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_ONNX_RESIZE_H
#define KILN_FRONTENDS_ONNX_RESIZE_H

#include "frontends/onnx/NodeContext.h"

#include <string>
#include <vector>

namespace kiln::onnx_import {

/// The node's interpolation attributes, as the ONNX reference reads them.
struct ResizeAttrs {
  std::string mode = "nearest";
  std::string coord = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double cubicA = -0.75;
  bool excludeOutside = false;
  bool antialias = false;
  double extrapolation = 0.0;
};

/// Resize of the node's input 0 along `axes` by run-time scales (input
/// `scalesAt`) or sizes (input `sizesAt`; the other -1); roi (input 1) is
/// read with tf_crop_and_resize. Each resized axis is a data-dependent size.
mlir::LogicalResult resizeAtRunTime(NodeContext &ctx, const ResizeAttrs &a,
                                    llvm::ArrayRef<int64_t> axes, int64_t scalesAt,
                                    int64_t sizesAt);

} // namespace kiln::onnx_import

#endif // KILN_FRONTENDS_ONNX_RESIZE_H
