//===- KilnAttributes.h - the kiln.* attributes stages hand each other -*- C++ -*-===//
//
// Every `kiln.<name>` attribute an op, function, argument or result carries
// besides an op's own is declared once, in KilnDialect.td's
// discardableAttrs; C++ names them here (kiln::attr::kPrecision, ...), so a
// misspelt name does not compile. The contraction precision and the layout
// have typed accessors. KilnDialect.h includes this after the dialect's
// class: include KilnDialect.h, not this.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECTS_KILN_KILNATTRIBUTES_H
#define KILN_DIALECTS_KILN_KILNATTRIBUTES_H

#include "llvm/ADT/StringRef.h"

namespace mlir {
class Operation;
} // namespace mlir

namespace kiln::attr {

using D = KilnDialect;
inline constexpr llvm::StringLiteral kPrecision = D::PrecisionAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kRecomputed = D::RecomputedAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kName = D::NameAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSymbols = D::SymbolsAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kWireType = D::WireTypeAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSymbolInput = D::SymbolInputAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSymbolNames = D::SymbolNamesAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSymbolBounds = D::SymbolBoundsAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSymbolDerived = D::SymbolDerivedAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSymbolPins = D::SymbolPinsAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kAxisSymbol = D::AxisSymbolAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSymbolIndices = D::SymbolIndicesAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kUserIndices = D::UserIndicesAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kMaskedAxes = D::MaskedAxesAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kPinsSymbol = D::PinsSymbolAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kRepacked = D::RepackedAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kWorkgroups = D::WorkgroupsAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kLiveRows = D::LiveRowsAttrHelper::getNameStr();

/// The precision kiln-lower-precision gave a contraction (kiln.precision:
/// "bf16" or "f16", the element types; none: f32).
enum class Precision { F32, BF16, F16 };
Precision precisionOf(mlir::Operation *op);
void setPrecision(mlir::Operation *op, Precision p);
/// "f32", "bf16", "f16".
llvm::StringRef precisionName(Precision p);

/// The layout of an op with a `layout` attribute (conv, pools, ...):
/// channels first ("nchw", the default) or channels last ("nhwc").
bool isChannelsLast(mlir::Operation *op);

} // namespace kiln::attr

#endif // KILN_DIALECTS_KILN_KILNATTRIBUTES_H
