//===- EmitObject.h - Program -> LLVM IR -> x86-64 object code --*- C++ -*-===//
#ifndef KILN_CODEGEN_CPU_EMITOBJECT_H
#define KILN_CODEGEN_CPU_EMITOBJECT_H

#include "codegen/program/Program.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <memory>
#include <string>

namespace kiln::codegen {

struct CpuOptions {
  std::string mcpu = "native"; // "native": the host's CPU and feature list
  int optLevel = 3;
  /// Also export `kiln_model`, a pointer to the descriptor under a fixed
  /// name, so a loader can dlopen a .so without knowing the model name.
  bool exportGenericEntry = false;
  /// Where the kernels run. CPU: the kernels are compiled here and `run`
  /// launches them on the thread pool. CUDA and CUDA-emu: no host kernels;
  /// the descriptor carries the device schedule (kiln_device_program) and,
  /// for CUDA, `cudaImages`; for CUDA-emu, the block entry points
  /// `<kernel>_block(args, b)` defined by the emulation build.
  enum class Device { Cpu, Cuda, CudaEmu } device = Device::Cpu;
  struct CudaImage {
    uint32_t arch = 80; // sm_80 / compute_80
    bool ptx = false;
    std::string bytes;
  };
  std::vector<CudaImage> cudaImages;
  /// LLVM's SLP vectorizer (off only to step around its bugs: emitObject's
  /// `optimizerBroke`).
  bool slpVectorize = true;
};

/// Lowers the program's kernels to LLVM IR and adds the host schedule, the
/// weights and the `<name>_desc` model descriptor. Returns null after
/// emitting diagnostics.
std::unique_ptr<llvm::Module> buildLLVMModule(Program &program,
                                              llvm::LLVMContext &llvmCtx,
                                              const CpuOptions &options,
                                              std::string &error);

/// Runs LLVM's optimization pipeline for the target (what --emit=llvm
/// prints); false with `error` when the target is unknown or the optimized
/// module does not verify (an LLVM bug: then `optimizerBroke` is set).
bool optimizeModule(llvm::Module &module, const CpuOptions &options, std::string &error,
                    bool *optimizerBroke = nullptr);
/// Optimizes `module` and writes x86-64 object code into `out` (false as
/// optimizeModule, or when the object cannot be written).
bool emitObject(llvm::Module &module, const CpuOptions &options,
                llvm::SmallVectorImpl<char> &out, std::string &error,
                bool *optimizerBroke = nullptr);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_CPU_EMITOBJECT_H
