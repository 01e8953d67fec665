//===- EmitCuda.h - kernels as CUDA C++ ---------------------------*- C++ -*-===//
//
// The CUDA code generator (issue 4, docs/cuda.md): every kernel of a
// lowered Program (scf/arith/math/memref/vector over flat buffers) printed
// as an `extern "C" __global__` CUDA C++ function. GPU-shaped kernels
// (CodegenOptions::gpu; Launch::gpuShaped) spell their thread and block indices,
// barriers, shuffles and shared memory through the kiln_gpu_* helpers of the
// prelude; the others run one workgroup per thread (correct for every op:
// workgroups are independent by construction). Compiled by NVRTC for real
// GPUs and by the host compiler against the emulation header
// (--target=cuda-emu).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CUDA_EMITCUDA_H
#define KILN_CODEGEN_CUDA_EMITCUDA_H

#include "codegen/program/Program.h"

#include <string>

namespace kiln::cuda {

/// Threads per block of the workgroup-per-thread kernels.
constexpr int kThreadsPerBlock = 64;

/// CUDA C++ for every kernel of `p` (self-contained: a prelude with the
/// device matrix-product helpers, then one __global__ function per launch,
/// each preceded by a comment naming its ops and ONNX nodes). Sets each
/// launch's grid, block and shared memory. Empty and `error` set when a
/// kernel uses an operation the printer does not know.
std::string emitCudaSource(codegen::Program &p, std::string &error);

/// Host C++ for --target=cuda-emu: includes the emulation header and the
/// source above, and defines each launch's block entry point
/// `void <kernel>_block(void *const *args, int64_t b)` running block `b` of
/// the launch's grid (the runtime calls it from its thread pool, the way
/// the CUDA driver runs a real launch's blocks).
std::string emitEmulationSource(const codegen::Program &p, const std::string &cudaSource);

} // namespace kiln::cuda

#endif // KILN_CODEGEN_CUDA_EMITCUDA_H
