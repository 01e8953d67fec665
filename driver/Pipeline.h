//===- Pipeline.h - a model file through every stage to its artifact -*- C++ -*-===//
//
// compileModel runs one compilation as CompileOptions describe it: import
// (ONNX, .pt2 or kiln IR), the graph passes (precision, layout, fusion and
// --max-memory's rematerialization search, with the NCHW retry), kernel
// lowering, and the artifact (object + header, or a shared library; CUDA
// images through NVRTC) or the IR --emit asks for. kiln-compile is its
// command line. --precision=auto's and --autotune's trial builds run the
// later stages again in process, on copies of the module.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DRIVER_PIPELINE_H
#define KILN_DRIVER_PIPELINE_H

#include "driver/CompileOptions.h"

#include <string>

namespace kiln::driver {

/// Compiles as `o` asks; diagnostics go to stderr. `toolPath` is
/// kiln-compile's executable (trial builds run it, and kiln-run beside it).
/// Returns the process exit code: 0 on success.
int compileModel(const CompileOptions &o, const std::string &toolPath);

} // namespace kiln::driver

#endif // KILN_DRIVER_PIPELINE_H
