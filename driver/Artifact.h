//===- Artifact.h - writing model.o + model.h, or model.so ------*- C++ -*-===//
#ifndef KILN_DRIVER_ARTIFACT_H
#define KILN_DRIVER_ARTIFACT_H

#include "codegen/program/Program.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace kiln::pipeline {

/// The C header for a model linked as an object file.
std::string generateHeader(const codegen::Program &program);

/// Links `object` (and `extraObjects`) with the runtime archive into a
/// shared library at `out`.
bool linkSharedLibrary(llvm::StringRef objectPath, llvm::StringRef out,
                       std::string &error, llvm::ArrayRef<std::string> extraObjects = {});

/// Compiles the CUDA emulation build of a model's kernels (host C++ that
/// includes runtime/cuda_emu/kiln_cuda_emu.h) into an object file with the
/// host C++ compiler (c++, or $KILN_CXX).
bool compileEmulation(llvm::StringRef sourcePath, llvm::StringRef objectPath, int optLevel,
                      std::string &error);

/// A C identifier from a file stem ("resnet-18.o" -> "resnet_18"); a stem
/// the runtime reserves ("kiln.so") gets a "model_" prefix.
std::string modelNameFromPath(llvm::StringRef path);

/// Whether a model name is the runtime's: "kiln" or "kiln_..." in any case
/// (the model's symbols, NAME_desc and NAME_weights, would meet
/// kiln_model_desc, kiln_weights, ...).
bool isReservedModelName(llvm::StringRef name);

} // namespace kiln::pipeline

#endif // KILN_DRIVER_ARTIFACT_H
