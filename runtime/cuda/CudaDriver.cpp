//===- CudaDriver.cpp - libcuda through dlopen -----------------------------===//
#include "runtime/cuda/CudaDriver.h"

#include <dlfcn.h>
#include <mutex>

#if __has_include(<cuda.h>)
#include <cuda.h>
// The constants and handle types above are cuda.h's.
static_assert(kiln::rt::cu::kAttrComputeCapabilityMajor == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
static_assert(kiln::rt::cu::kAttrComputeCapabilityMinor == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
static_assert(kiln::rt::cu::kFuncAttrMaxDynamicSharedBytes == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
static_assert(kiln::rt::cu::kStreamNonBlocking == CU_STREAM_NON_BLOCKING);
static_assert(kiln::rt::cu::kCaptureModeThreadLocal == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
static_assert(kiln::rt::cu::kErrorNoDevice == CUDA_ERROR_NO_DEVICE);
static_assert(sizeof(kiln::rt::cu::DevicePtr) == sizeof(CUdeviceptr));
static_assert(sizeof(kiln::rt::cu::Result) == sizeof(CUresult));
#endif

namespace kiln::rt::cu {
namespace {

Api api;
std::string loadError;
bool loaded = false;

template <typename F> bool bind(void *lib, F &fn, const char *name, const char *fallback = nullptr) {
  void *sym = dlsym(lib, name);
  if (!sym && fallback)
    sym = dlsym(lib, fallback);
  if (!sym) {
    loadError = std::string("the CUDA driver (libcuda.so.1) lacks ") + name +
                "; update the NVIDIA driver";
    return false;
  }
  fn = reinterpret_cast<F>(sym);
  return true;
}

void loadOnce() {
  const char *path = "libcuda.so.1";
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    loadError = std::string("no CUDA device: the CUDA driver library libcuda.so.1 cannot be "
                            "loaded (") +
                (why ? why : "not found") +
                "); run this model on a machine with an NVIDIA GPU and driver, or compile "
                "it with --target=cpu";
    return;
  }
  // Symbol names as the driver exports them (cuda.h maps the API names to
  // these versions).
  bool ok = bind(lib, api.init, "cuInit") && bind(lib, api.deviceGetCount, "cuDeviceGetCount") &&
            bind(lib, api.deviceGet, "cuDeviceGet") &&
            bind(lib, api.deviceGetAttribute, "cuDeviceGetAttribute") &&
            bind(lib, api.deviceGetName, "cuDeviceGetName") &&
            bind(lib, api.primaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
            bind(lib, api.primaryCtxRelease, "cuDevicePrimaryCtxRelease_v2",
                 "cuDevicePrimaryCtxRelease") &&
            bind(lib, api.ctxSetCurrent, "cuCtxSetCurrent") &&
            bind(lib, api.moduleLoadData, "cuModuleLoadData") &&
            bind(lib, api.moduleUnload, "cuModuleUnload") &&
            bind(lib, api.moduleGetFunction, "cuModuleGetFunction") &&
            bind(lib, api.funcSetAttribute, "cuFuncSetAttribute") &&
            bind(lib, api.memAlloc, "cuMemAlloc_v2") && bind(lib, api.memFree, "cuMemFree_v2") &&
            bind(lib, api.memAllocHost, "cuMemAllocHost_v2") &&
            bind(lib, api.memFreeHost, "cuMemFreeHost") &&
            bind(lib, api.memcpyHtoD, "cuMemcpyHtoD_v2") &&
            bind(lib, api.memcpyHtoDAsync, "cuMemcpyHtoDAsync_v2") &&
            bind(lib, api.memcpyDtoHAsync, "cuMemcpyDtoHAsync_v2") &&
            bind(lib, api.streamCreate, "cuStreamCreate") &&
            bind(lib, api.streamDestroy, "cuStreamDestroy_v2") &&
            bind(lib, api.streamSynchronize, "cuStreamSynchronize") &&
            bind(lib, api.launchKernel, "cuLaunchKernel") &&
            bind(lib, api.eventCreate, "cuEventCreate") &&
            bind(lib, api.eventDestroy, "cuEventDestroy_v2") &&
            bind(lib, api.eventRecord, "cuEventRecord") &&
            bind(lib, api.eventElapsedTime, "cuEventElapsedTime", "cuEventElapsedTime_v2") &&
            bind(lib, api.streamBeginCapture, "cuStreamBeginCapture_v2") &&
            bind(lib, api.streamEndCapture, "cuStreamEndCapture") &&
            bind(lib, api.graphInstantiate, "cuGraphInstantiateWithFlags") &&
            bind(lib, api.graphLaunch, "cuGraphLaunch") &&
            bind(lib, api.graphExecDestroy, "cuGraphExecDestroy") &&
            bind(lib, api.graphDestroy, "cuGraphDestroy") &&
            bind(lib, api.getErrorString, "cuGetErrorString") &&
            bind(lib, api.getErrorName, "cuGetErrorName");
  if (!ok)
    return;
  if (Result r = api.init(0)) {
    loadError = r == kErrorNoDevice ? "no CUDA device: the CUDA driver found no GPU"
                                    : "no CUDA device: " + describe(api, "cuInit", r);
    return;
  }
  loaded = true;
}

} // namespace

const Api *load(std::string &error) {
  static std::once_flag once;
  std::call_once(once, loadOnce);
  if (!loaded) {
    error = loadError;
    return nullptr;
  }
  return &api;
}

std::string describe(const Api &a, const char *call, Result r) {
  const char *name = nullptr, *text = nullptr;
  if (a.getErrorName)
    a.getErrorName(r, &name);
  if (a.getErrorString)
    a.getErrorString(r, &text);
  std::string s = std::string(call) + " failed: " + (name ? name : "CUDA error " + std::to_string(r));
  if (text)
    s += std::string(" (") + text + ")";
  return s;
}

} // namespace kiln::rt::cu
