//===- Nvrtc.h - CUDA C++ -> CUBIN/PTX with NVRTC, no GPU needed -*- C++ -*-===//
//
// The CUDA target compiles its kernel sources at compile time with NVRTC:
// a CUBIN per real architecture (sm_80, sm_90, ...) and PTX for a virtual
// one (compute_80) that newer GPUs JIT. ptxas' resource report (registers,
// spills, shared memory) is parsed from the program log.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CUDA_NVRTC_H
#define KILN_CODEGEN_CUDA_NVRTC_H

#include <string>
#include <vector>

namespace kiln::cuda {

/// ptxas' report for one kernel.
struct KernelResources {
  std::string name;
  int registers = 0;
  int spillStores = 0, spillLoads = 0; // bytes
  int stackBytes = 0, sharedBytes = 0;
};

struct CompileResult {
  bool ok = false;
  std::string log;                      // NVRTC's program log (errors, ptxas info)
  std::vector<char> binary;             // CUBIN (sm_XY) or PTX text (compute_XY)
  std::vector<KernelResources> kernels; // for CUBIN
};

/// Compiles `source` (named `name` in diagnostics) for `arch`: "sm_80"
/// gives a CUBIN, "compute_80" PTX. Include directories: the toolkit's
/// include folder (cuda_fp16.h, cuda_bf16.h) and `includeDirs`.
CompileResult compile(const std::string &source, const std::string &name,
                      const std::string &arch,
                      const std::vector<std::string> &includeDirs = {});

/// As compile(), through the kernel cache: results are kept by a hash of
/// the source, the architecture and NVRTC's version in $KILN_CACHE_DIR
/// (default $XDG_CACHE_HOME/kiln or ~/.cache/kiln), under cuda/. Only
/// successful compilations are cached. `hit` tells whether it was one.
CompileResult compileCached(const std::string &source, const std::string &name,
                            const std::string &arch, bool *hit = nullptr);

/// compileCached() for every architecture, in parallel (one thread each).
std::vector<CompileResult> compileAll(const std::string &source, const std::string &name,
                                      const std::vector<std::string> &archs, int *hits = nullptr);

/// The cache folder ("" when none can be used).
std::string cacheDir();

/// NVRTC's version as "major.minor".
std::string version();

} // namespace kiln::cuda

#endif // KILN_CODEGEN_CUDA_NVRTC_H
