//===- TorchImporter.h - torch.export .pt2 archive -> kiln dialect -*- C++ -*-===//
//
// Reads what torch.export.save writes (graph JSON in torch's serialization
// schema, raw weights; no pickle) and imports it through the ONNX importer:
// each ATen op becomes one ONNX node or a few (Aten*.cpp), so symbolic
// sizes, --bind, --shape and every diagnostic work as for ONNX models.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_TORCH_TORCHIMPORTER_H
#define KILN_FRONTENDS_TORCH_TORCHIMPORTER_H

#include "frontends/onnx/Importer.h"

#include <string>
#include <vector>

namespace kiln::torch_import {

/// Whether `path` names a torch.export archive (a .pt2 file).
bool isTorchArchive(llvm::StringRef path);

/// The ATen targets (and Python operators on sizes) the frontend converts,
/// sorted: "aten.add.Tensor", ... (kiln-compile --list-torch-ops).
std::vector<std::string> supportedTargets();

/// Imports the ExportedProgram saved at `path`. Returns null after emitting
/// diagnostics (every unsupported ATen op at once, with torch's source line).
mlir::OwningOpRef<mlir::ModuleOp> importTorchFile(mlir::MLIRContext &ctx, llvm::StringRef path,
                                                  const onnx_import::ImportOptions &options);

} // namespace kiln::torch_import

#endif // KILN_FRONTENDS_TORCH_TORCHIMPORTER_H
