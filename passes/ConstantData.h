//===- ConstantData.h - reading and making float constants ------*- C++ -*-===//
//
// Passes that rewrite weights read a kiln.constant's values (dense or
// dense_resource) and create new constants backed by resource blobs.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_CONSTANTDATA_H
#define KILN_PASSES_CONSTANTDATA_H

#include "dialects/kiln/KilnDialect.h"

#include <optional>
#include <vector>

namespace kiln {

/// The f32 values of `v` if it is a kiln.constant of f32 elements.
std::optional<std::vector<float>> getF32Constant(mlir::Value v);

/// The values of `v`, widened to float, if it is a kiln.constant of f16,
/// bf16 or f32 elements (the passes that match or fold constants work on the
/// model's own type).
std::optional<std::vector<float>> getFloatConstant(mlir::Value v);

/// The values of `v` widened to float if it is a kiln.constant of floats
/// (as getFloatConstant) or of integers or bools (dense attributes).
std::optional<std::vector<float>> getNumberConstant(mlir::Value v);

/// A kiln.constant of `type` holding `values` in a resource blob named
/// after `name` (uniqued by MLIR when the name is taken).
ConstantOp makeF32Constant(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::RankedTensorType type,
                           llvm::ArrayRef<float> values, llvm::StringRef name);

/// makeF32Constant for a tensor type of f16, bf16 or f32 elements: the
/// values round to nearest even.
ConstantOp makeFloatConstant(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::RankedTensorType type,
                             llvm::ArrayRef<float> values, llvm::StringRef name);

/// A gemm or matmul whose weights are an f32 constant matrix: its f32 lhs
/// (rank 2 or more), the weights ([K, N], or [N, K] when transB) and a
/// gemm's bias. A gemm with transA, alpha other than 1 or a bias with beta
/// other than 1 is not one.
struct ConstantWeightProduct {
  mlir::Value lhs, weights, bias;
  bool transB = false;
};
std::optional<ConstantWeightProduct> constantWeightProduct(mlir::Operation *op);

} // namespace kiln

#endif // KILN_PASSES_CONSTANTDATA_H
