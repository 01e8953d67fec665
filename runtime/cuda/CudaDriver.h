//===- CudaDriver.h - the CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// The subset of the CUDA driver API the runtime uses, resolved with dlopen /
// dlsym from libcuda.so.1 on first use: artifacts and the runtime load on
// machines without a GPU (or without a driver) and say so clearly instead
// of failing to link. Types are declared here (opaque handles, the same
// ABI as cuda.h); CudaDriver.cpp checks them against cuda.h when the
// toolkit headers are present at build time.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CUDA_CUDADRIVER_H
#define KILN_RUNTIME_CUDA_CUDADRIVER_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln::rt::cu {

using Result = int; // CUresult; 0 is CUDA_SUCCESS
using Device = int; // CUdevice
using DevicePtr = unsigned long long; // CUdeviceptr
using Context = struct CUctx_st *;
using Module = struct CUmod_st *;
using Function = struct CUfunc_st *;
using Stream = struct CUstream_st *;
using Event = struct CUevent_st *;
using Graph = struct CUgraph_st *;
using GraphExec = struct CUgraphExec_st *;

constexpr int kAttrComputeCapabilityMajor = 75; // CU_DEVICE_ATTRIBUTE_...
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr int kFuncAttrMaxDynamicSharedBytes = 8; // CU_FUNC_ATTRIBUTE_...
constexpr unsigned kStreamNonBlocking = 1;        // CU_STREAM_NON_BLOCKING
constexpr int kCaptureModeThreadLocal = 1;        // CU_STREAM_CAPTURE_MODE_...
constexpr Result kErrorNoDevice = 100;            // CUDA_ERROR_NO_DEVICE

/// Function pointers into libcuda; every member is set once load() succeeds.
struct Api {
  Result (*init)(unsigned);
  Result (*deviceGetCount)(int *);
  Result (*deviceGet)(Device *, int);
  Result (*deviceGetAttribute)(int *, int, Device);
  Result (*deviceGetName)(char *, int, Device);
  Result (*primaryCtxRetain)(Context *, Device);
  Result (*primaryCtxRelease)(Device);
  Result (*ctxSetCurrent)(Context);
  Result (*moduleLoadData)(Module *, const void *);
  Result (*moduleUnload)(Module);
  Result (*moduleGetFunction)(Function *, Module, const char *);
  Result (*funcSetAttribute)(Function, int, int);
  Result (*memAlloc)(DevicePtr *, size_t);
  Result (*memFree)(DevicePtr);
  Result (*memAllocHost)(void **, size_t);
  Result (*memFreeHost)(void *);
  Result (*memcpyHtoD)(DevicePtr, const void *, size_t);
  Result (*memcpyHtoDAsync)(DevicePtr, const void *, size_t, Stream);
  Result (*memcpyDtoHAsync)(void *, DevicePtr, size_t, Stream);
  Result (*streamCreate)(Stream *, unsigned);
  Result (*streamDestroy)(Stream);
  Result (*streamSynchronize)(Stream);
  Result (*launchKernel)(Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, Stream, void **, void **);
  Result (*eventCreate)(Event *, unsigned);
  Result (*eventDestroy)(Event);
  Result (*eventRecord)(Event, Stream);
  Result (*eventElapsedTime)(float *, Event, Event);
  Result (*streamBeginCapture)(Stream, int);
  Result (*streamEndCapture)(Stream, Graph *);
  Result (*graphInstantiate)(GraphExec *, Graph, unsigned long long);
  Result (*graphLaunch)(GraphExec, Stream);
  Result (*graphExecDestroy)(GraphExec);
  Result (*graphDestroy)(Graph);
  Result (*getErrorString)(Result, const char **);
  Result (*getErrorName)(Result, const char **);
};

/// The driver, loaded once per process. Null with `error` set ("no CUDA
/// driver: libcuda.so.1 not found ...") when it cannot be loaded.
const Api *load(std::string &error);

/// "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)" style text.
std::string describe(const Api &api, const char *call, Result r);

} // namespace kiln::rt::cu

#endif // KILN_RUNTIME_CUDA_CUDADRIVER_H
