//===- ActivationRanges.h - an activation's int8 range from samples -*- C++ -*-===//
//
// --precision=int8 quantizes each product's activation over a range chosen
// from the values it took on the calibration inputs (--calibrate-method):
//   minmax       the smallest and largest value (onnxruntime's MinMax);
//   percentile   the (100 - P)th and Pth percentiles (P = 99.999 unless
//                given as percentile:P): a few outliers no longer stretch
//                the step of every other value;
//   entropy      the clipping threshold whose 128-level quantization of
//                the magnitudes' histogram (2048 bins) loses the least
//                information (the KL divergence of TensorRT's calibrator).
// The range is widened to hold 0 by the pass that writes the quantization.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DRIVER_ACTIVATIONRANGES_H
#define KILN_DRIVER_ACTIVATIONRANGES_H

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::calibrate {

struct RangeMethod {
  enum Kind { MinMax, Percentile, Entropy } kind = MinMax;
  double percentile = 99.999;
};

/// Parses --calibrate-method's value; nullopt (with `error`) when invalid.
std::optional<RangeMethod> parseRangeMethod(const std::string &text, std::string &error);

/// The method's spelling, as --calibrate-method takes it.
std::string rangeMethodName(const RangeMethod &m);

/// [lo, hi] of the finite values in `values` by method `m` (lo > hi when
/// there is none). Reorders `values`.
std::pair<float, float> activationRange(std::vector<float> &values, const RangeMethod &m);

} // namespace kiln::calibrate

#endif // KILN_DRIVER_ACTIVATIONRANGES_H
