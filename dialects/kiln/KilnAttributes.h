//===- KilnAttributes.h - the kiln.* attributes stages hand each other -*- C++ -*-===//
//
// Every `kiln.<name>` attribute an op, function, argument or result carries
// besides an op's own is declared once, in KilnDialect.td's
// discardableAttrs; C++ names them here (kiln::attr::kPrecision, ...), so a
// misspelt name does not compile. The contraction precision and the layout
// are enum attributes (kiln::Precision, kiln::Layout: #kiln.precision<bf16>,
// #kiln.layout<nhwc>) with typed accessors. KilnDialect.h includes this after the dialect's
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

inline constexpr llvm::StringLiteral kPrecision = KilnDialect::PrecisionAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kRecomputed = KilnDialect::RecomputedAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kName = KilnDialect::NameAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSymbols = KilnDialect::SymbolsAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kWireType = KilnDialect::WireTypeAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSymbolInput =
    KilnDialect::SymbolInputAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSymbolOutput =
    KilnDialect::SymbolOutputAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSymbolNames =
    KilnDialect::SymbolNamesAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSymbolBounds =
    KilnDialect::SymbolBoundsAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSymbolDerived =
    KilnDialect::SymbolDerivedAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSymbolPins = KilnDialect::SymbolPinsAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kAxisSymbol = KilnDialect::AxisSymbolAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSymbolIndices =
    KilnDialect::SymbolIndicesAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kUserIndices =
    KilnDialect::UserIndicesAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kMaskedAxes = KilnDialect::MaskedAxesAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kPinsSymbol = KilnDialect::PinsSymbolAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kRepacked = KilnDialect::RepackedAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kInt8Range = KilnDialect::Int8RangeAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kWorkgroups = KilnDialect::WorkgroupsAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kLiveLaunch = KilnDialect::LiveLaunchAttrHelper::getNameStr();
inline constexpr llvm::StringLiteral kSizeArgs = KilnDialect::SizeArgsAttrHelper::getNameStr();

/// The precision kiln-lower-precision gave a contraction (kiln.precision;
/// none: f32).
Precision precisionOf(mlir::Operation *op);
void setPrecision(mlir::Operation *op, Precision p);
/// "f32", "bf16", "f16".
llvm::StringRef precisionName(Precision p);

/// The `layout` of an op that has one (conv, pools, ...): channels first
/// (nchw, the default) or channels last (nhwc).
inline constexpr llvm::StringLiteral kLayout = "layout";
Layout layoutOf(mlir::Operation *op);
bool isChannelsLast(mlir::Operation *op);
void setLayout(mlir::Operation *op, Layout layout);

} // namespace kiln::attr

#endif // KILN_DIALECTS_KILN_KILNATTRIBUTES_H
