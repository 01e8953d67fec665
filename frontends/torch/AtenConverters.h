//===- AtenConverters.h - helpers shared by the ATen converters -*- C++ -*-===//
//
// The ATen converters are grouped by family, one file each (AtenElementwise,
// AtenNN, AtenReduce, AtenShape, AtenGenerators); AtenOps.cpp gathers their
// tables. This header holds what more than one family uses: argument
// helpers and the few one-node converters several families share.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_TORCH_ATENCONVERTERS_H
#define KILN_FRONTENDS_TORCH_ATENCONVERTERS_H

#include "frontends/torch/AtenContext.h"

#include <initializer_list>

namespace kiln::torch_import {

/// The ONNX element type of the node's `k`-th result.
inline int outType(AtenContext &c, size_t k = 0) { return c.info(c.out(k)).elemType; }

inline int64_t rankOf(AtenContext &c, const std::string &v) {
  return int64_t(c.info(v).sizes.size());
}

/// A possibly negative axis counted from the front.
inline int64_t normAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

/// A tensor or scalar argument as a value of `elemType`.
std::string operand(AtenContext &c, llvm::StringRef argName, int elemType);

/// `op`(lhs, rhs), both in the result's type.
mlir::LogicalResult binary(AtenContext &c, const std::string &op, llvm::StringRef lhs = "self",
                           llvm::StringRef rhs = "other");

/// view/reshape and friends: the target from the output's recorded shape,
/// or from the size argument where sizes are symbolic.
mlir::LogicalResult reshapeTo(AtenContext &c, const std::string &x);

/// The argument unchanged, cast to the result's type.
mlir::LogicalResult identity(AtenContext &c, llvm::StringRef arg = "self");

/// Fills one table: `reg({"aten.a.default", ...}, converter)` maps each
/// name to the converter.
struct AtenRegistrar {
  llvm::StringMap<AtenConverter> &table;
  void operator()(std::initializer_list<const char *> names, const AtenConverter &converter) const {
    for (const char *n : names)
      table[n] = converter;
  }
};

// One table per family.
void registerElementwiseConverters(llvm::StringMap<AtenConverter> &table);
void registerNNConverters(llvm::StringMap<AtenConverter> &table);
void registerReduceConverters(llvm::StringMap<AtenConverter> &table);
void registerShapeConverters(llvm::StringMap<AtenConverter> &table);
void registerGeneratorConverters(llvm::StringMap<AtenConverter> &table);

} // namespace kiln::torch_import

#endif // KILN_FRONTENDS_TORCH_ATENCONVERTERS_H
