//===- QdqPatterns.h - matchers of quantize/dequantize chains ----*- C++ -*-===//
//
// The ONNX importer writes DequantizeLinear as (cast(q) - zero) * scale and
// QuantizeLinear as cast(min(max(round(x / scale) + zero, lo), hi)); the
// passes that compute quantized models on 8-bit integers
// (kiln-integer-contractions) recognize them with these.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_QDQPATTERNS_H
#define KILN_PASSES_QDQPATTERNS_H

#include "dialects/kiln/KilnDialect.h"

#include <optional>

namespace kiln {

/// The one value of a constant scalar (any shape of one element).
std::optional<float> scalarOf(mlir::Value v);

/// A dequantized activation: (cast(q) - zero) * scale, q 8-bit.
struct Dequantized {
  mlir::Value q;
  float zero = 0, scale = 0;
};
std::optional<Dequantized> dequantized(mlir::Value a);

/// A QuantizeLinear: cast(min(max(round(x / scale) + zero, lo), hi)) to an
/// 8-bit type (the addition may be absent; without the division, which a
/// product took into its scales, scale is 1).
struct Quantization {
  mlir::Value x, rounded; // rounded: round(x / scale)
  float scale = 0, zero = 0, lo = 0, hi = 0;
};
std::optional<Quantization> quantizationOf(CastOp cast);

/// Drops the requantizations of dequantized bytes with the same scale and
/// zero point under `root` (QdqSimplifications.cpp).
void dropRequantizations(mlir::Operation *root);

/// The quantizations under `root` that no product took in: round trips kept
/// in f32, saturated activations dropped (QdqSimplifications.cpp).
void simplifyQuantizations(mlir::Operation *root);

} // namespace kiln

#endif // KILN_PASSES_QDQPATTERNS_H
