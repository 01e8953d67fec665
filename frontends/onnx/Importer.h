//===- Importer.h - ONNX model file -> kiln dialect -------------*- C++ -*-===//
//
// Reads an ONNX ModelProto and builds `func.func @main` of kiln ops. Shape
// arithmetic (Shape/Gather/Unsqueeze/Concat/...) is evaluated at import time,
// so only real tensor work reaches the IR. Errors are emitted as diagnostics
// naming the file, the node and the op.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_ONNX_IMPORTER_H
#define KILN_FRONTENDS_ONNX_IMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <map>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
} // namespace onnx

namespace kiln::onnx_import {

/// The newest default-domain opset Kiln understands (that of the pinned onnx).
constexpr int64_t kMaxOpset = 25;
/// The oldest default-domain opset Kiln accepts (legacy broadcasting and
/// attribute forms of opsets before 7 are handled by the converters).
constexpr int64_t kMinOpset = 1;

struct ImportOptions {
  /// Overrides for graph input shapes, by input name (`--shape NAME=1x3x8x8`).
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Graph inputs frozen to the tensor in a .npy or TensorProto .pb file
  /// (`--bind NAME=FILE`): they become constants, so shape arguments (axes,
  /// target shapes, pads given as inputs) are known at compile time.
  std::map<std::string, std::string> bindings;
  /// Upper bounds of graph inputs' symbolic dimensions, by input name
  /// (`--max-shape NAME=64x3x224x224`: static dimensions repeat the model's).
  std::map<std::string, std::vector<int64_t>> maxShapes;
  /// The most elements of one tensor the import holds in memory (an
  /// initializer, a folded constant, an index table): larger ones are
  /// refused with a diagnostic before anything is allocated.
  int64_t maxConstantElements = int64_t(1) << 27;
};

/// The bound of a symbolic dimension that no --max-shape names.
constexpr int64_t kDefaultSymbolBound = 64;

/// Imports the model at `path`. Returns null after emitting diagnostics.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxFile(mlir::MLIRContext &ctx,
                                                 llvm::StringRef path,
                                                 const ImportOptions &options);

/// Imports a model built in memory (the PyTorch frontend translates a .pt2
/// archive into one); `path` names the file diagnostics point at.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxModel(mlir::MLIRContext &ctx,
                                                  const onnx::ModelProto &model,
                                                  llvm::StringRef path,
                                                  const ImportOptions &options);

} // namespace kiln::onnx_import

#endif // KILN_FRONTENDS_ONNX_IMPORTER_H
