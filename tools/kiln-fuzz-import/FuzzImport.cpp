//===- FuzzImport.cpp - libFuzzer target: model bytes -> diagnostics -------===//
//
// Feeds arbitrary bytes to the ONNX importer as a model file (kiln-fuzz-import)
// or to the PyTorch frontend as a .pt2 archive (kiln-fuzz-torch-import, built
// from this file with KILN_FUZZ_TORCH). A well-formed
// model imports; anything else must end in diagnostics. A crash, an abort, a
// sanitizer report (the target is built with ASan+UBSan), a leak or a run
// past libFuzzer's memory limit is a bug. Built only in the fuzz build
// (`make fuzz`, CMake -DKILN_FUZZ=ON with clang); test/fuzz runs it.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/Importer.h"
#ifdef KILN_FUZZ_TORCH
#include "frontends/torch/TorchImporter.h"
#endif

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

/// ASan's defaults for this target. LLVM's BumpPtrAllocator poisons the unused
/// part of each slab it takes when compiled with ASan (inline, in this
/// build's instrumented code) and unpoisons what it hands out -- but the
/// prebuilt libMLIR allocates from the same allocators (MLIR's storage
/// uniquer) without unpoisoning, so a slab opened by instrumented code makes
/// later objects from libMLIR read as "use-after-poison". Manual poisoning
/// off; every other check stays.
extern "C" const char *__asan_default_options() { return "allow_user_poisoning=0"; }

namespace {

/// One scratch file per process: the importer reads models from paths (so
/// external-data locations resolve against the model's folder).
const std::string &scratchPath() {
  static const std::string path = [] {
    llvm::SmallString<128> p;
    int fd;
#ifdef KILN_FUZZ_TORCH
    const char *suffix = "pt2";
#else
    const char *suffix = "onnx";
#endif
    if (llvm::sys::fs::createTemporaryFile("kiln-fuzz", suffix, fd, p)) {
      std::fprintf(stderr, "kiln-fuzz-import: cannot create a scratch file\n");
      std::exit(1);
    }
    ::close(fd);
    std::atexit([] { llvm::sys::fs::remove(scratchPath()); });
    return std::string(p);
  }();
  return path;
}

bool writeScratch(const uint8_t *data, size_t size) {
  std::error_code ec;
  llvm::raw_fd_ostream os(scratchPath(), ec);
  if (ec)
    return false;
  os.write(reinterpret_cast<const char *>(data), size);
  return !os.has_error();
}

void importOnce(const kiln::onnx_import::ImportOptions &options) {
  mlir::MLIRContext ctx;
  ctx.disableMultithreading();
  bool sawError = false;
  // Diagnostics are the expected outcome for malformed models: render them
  // (the printing path is part of what is fuzzed) and drop the text.
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    std::string text;
    llvm::raw_string_ostream os(text);
    d.print(os);
    for (auto &note : d.getNotes())
      note.print(os);
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      sawError = true;
    return mlir::success();
  });
#ifdef KILN_FUZZ_TORCH
  auto module = kiln::torch_import::importTorchFile(ctx, scratchPath(), options);
#else
  auto module = kiln::onnx_import::importOnnxFile(ctx, scratchPath(), options);
#endif
  // The importer's contract: a module comes back, or it said why not.
  if (!module && !sawError) {
    std::fprintf(stderr, "kiln-fuzz-import: the import failed without an error diagnostic\n");
    std::abort();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!writeScratch(data, size))
    return 0;
  // A cap of 2^22 elements per constant instead of 2^27: a legal model may
  // hold 2^27 (1 GiB as int64, and the importer's copies of it), past the
  // 3 GiB libFuzzer allows an input; the checks run the same at any cap.
  kiln::onnx_import::ImportOptions options;
  options.maxConstantElements = int64_t(1) << 22;
  importOnce(options);
  return 0;
}
