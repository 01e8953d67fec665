//===- DeviceRun.cpp - device memory, staging, launches, graphs ------------===//
#include "runtime/cuda/DeviceRun.h"
#include "runtime/cpu/ThreadPool.h"
#include "runtime/cuda/CudaDriver.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>

namespace kiln::rt {

/// Device memory, copies and launches on one stream. Addresses are
/// integers (CUdeviceptr on a GPU, host addresses under emulation).
class DeviceBackend {
public:
  virtual ~DeviceBackend() = default;
  std::string name;
  virtual bool makeCurrent(std::string &error) = 0;
  /// Device memory and pinned host memory, freed with the backend.
  virtual bool alloc(size_t bytes, uint64_t &addr, std::string &error) = 0;
  virtual bool allocHost(size_t bytes, void *&ptr, std::string &error) = 0;
  /// Synchronous, outside any capture (the weights, at creation).
  virtual bool uploadNow(uint64_t dst, const void *src, size_t bytes, std::string &error) = 0;
  // Stream-ordered (and captured while capturing).
  virtual bool upload(uint64_t dst, const void *src, size_t bytes, std::string &error) = 0;
  virtual bool download(void *dst, uint64_t src, size_t bytes, std::string &error) = 0;
  virtual bool launch(uint32_t i, std::vector<uint64_t> &values, std::string &error) = 0;
  /// Records timing mark `slot` on the stream (not while capturing).
  virtual bool mark(size_t slot, std::string &error) = 0;
  virtual double elapsedMs(size_t from, size_t to) = 0;
  virtual bool synchronize(std::string &error) = 0;
  virtual bool beginCapture(std::string &error) = 0;
  virtual bool endCapture(std::string &error) = 0;
  virtual bool replay(std::string &error) = 0;
};

namespace {


size_t tensorBytes(const kiln_tensor_desc &t) {
  size_t n = kiln_dtype_size(kiln_dtype_carrier(t.dtype)); // (narrow types: their carrier)
  for (int32_t i = 0; i < t.rank; ++i)
    n *= static_cast<size_t>(t.shape[i]);
  return n;
}

//===----------------------------------------------------------------------===//
// The emulation: host memory; a launch runs its blocks on the thread pool.
//===----------------------------------------------------------------------===//

class EmuBackend final : public DeviceBackend {
public:
  EmuBackend(const kiln_model_desc &m, ThreadPool &pool) : model(m), pool(pool) {
    name = "cuda-emu (the CUDA kernels compiled for this CPU)";
  }
  ~EmuBackend() override {
    for (void *p : allocations)
      std::free(p);
  }

  bool makeCurrent(std::string &) override { return true; }
  bool alloc(size_t bytes, uint64_t &addr, std::string &error) override {
    void *p = std::aligned_alloc(256, (bytes + 256) / 256 * 256); // never 0 bytes
    if (!p) {
      error = "cuda-emu: cannot allocate " + std::to_string(bytes) + " bytes of device memory";
      return false;
    }
    allocations.push_back(p);
    addr = reinterpret_cast<uint64_t>(p);
    return true;
  }
  bool allocHost(size_t bytes, void *&ptr, std::string &error) override {
    uint64_t a = 0;
    if (!alloc(bytes, a, error))
      return false;
    ptr = reinterpret_cast<void *>(a);
    return true;
  }
  bool uploadNow(uint64_t dst, const void *src, size_t bytes, std::string &) override {
    std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
    return true;
  }
  bool upload(uint64_t dst, const void *src, size_t bytes, std::string &) override {
    return submit([=] { std::memcpy(reinterpret_cast<void *>(dst), src, bytes); });
  }
  bool download(void *dst, uint64_t src, size_t bytes, std::string &) override {
    return submit([=] { std::memcpy(dst, reinterpret_cast<const void *>(src), bytes); });
  }
  bool launch(uint32_t i, std::vector<uint64_t> &values, std::string &error) override {
    const kiln_device_launch &l = model.device->launches[i];
    kiln_kernel_fn fn = model.device->emu_blocks ? model.device->emu_blocks[i] : nullptr;
    if (!fn) {
      error = "cuda-emu: the model has no host entry point for kernel " + std::string(l.kernel);
      return false;
    }
    int64_t blocks = int64_t(l.grid[0]) * l.grid[1] * l.grid[2];
    auto *args = reinterpret_cast<void *const *>(values.data()); // addresses as pointers
    return submit([this, fn, args, blocks] { pool.parallelFor(fn, args, blocks); });
  }
  bool mark(size_t slot, std::string &) override {
    if (marks.size() <= slot)
      marks.resize(slot + 1);
    marks[slot] = std::chrono::steady_clock::now();
    return true;
  }
  double elapsedMs(size_t from, size_t to) override {
    return std::chrono::duration<double, std::milli>(marks[to] - marks[from]).count();
  }
  bool synchronize(std::string &) override { return true; } // work ran when submitted
  bool beginCapture(std::string &) override {
    capturing = true;
    graph.clear();
    return true;
  }
  bool endCapture(std::string &) override {
    capturing = false;
    return true;
  }
  bool replay(std::string &) override {
    for (auto &op : graph)
      op();
    return true;
  }

private:
  /// Runs `op` now, or records it while capturing (like stream capture,
  /// which records work instead of running it).
  bool submit(std::function<void()> op) {
    if (capturing)
      graph.push_back(std::move(op));
    else
      op();
    return true;
  }
  const kiln_model_desc &model;
  ThreadPool &pool;
  std::vector<void *> allocations;
  std::vector<std::chrono::steady_clock::time_point> marks;
  bool capturing = false;
  std::vector<std::function<void()>> graph;
};

//===----------------------------------------------------------------------===//
// The CUDA driver.
//===----------------------------------------------------------------------===//

class CudaBackend final : public DeviceBackend {
public:
  ~CudaBackend() override {
    if (!api)
      return;
    api->ctxSetCurrent(ctx);
    if (exec) api->graphExecDestroy(exec);
    if (graph) api->graphDestroy(graph);
    for (cu::Event e : events) api->eventDestroy(e);
    if (module) api->moduleUnload(module);
    for (cu::DevicePtr p : allocations) api->memFree(p);
    for (void *p : hostAllocations) api->memFreeHost(p);
    if (stream) api->streamDestroy(stream);
    if (ctx) api->primaryCtxRelease(device);
  }

  /// Opens device `ordinal`, loads the best image for it and finds every
  /// kernel. `status` tells no-device from other failures.
  bool open(const kiln_model_desc &m, int ordinal, kiln_status &status, std::string &error) {
    status = KILN_ERROR_NO_DEVICE;
    api = cu::load(error);
    if (!api)
      return false;
    int count = 0;
    if (cu::Result r = api->deviceGetCount(&count); r || count == 0) {
      error = r ? "no CUDA device: " + cu::describe(*api, "cuDeviceGetCount", r)
                : "no CUDA device: the driver reports none";
      return false;
    }
    if (ordinal < 0 || ordinal >= count) {
      error = "no CUDA device " + std::to_string(ordinal) + " (this machine has " +
              std::to_string(count) + ")";
      return false;
    }
    status = KILN_ERROR_DEVICE;
    int major = 0, minor = 0;
    char devName[256] = "";
    if (!check(api->deviceGet(&device, ordinal), "cuDeviceGet", error) ||
        !check(api->deviceGetAttribute(&major, cu::kAttrComputeCapabilityMajor, device),
               "cuDeviceGetAttribute", error) ||
        !check(api->deviceGetAttribute(&minor, cu::kAttrComputeCapabilityMinor, device),
               "cuDeviceGetAttribute", error) ||
        !check(api->deviceGetName(devName, sizeof devName, device), "cuDeviceGetName", error))
      return false;
    if (!check(api->primaryCtxRetain(&ctx, device), "cuDevicePrimaryCtxRetain", error) ||
        !check(api->ctxSetCurrent(ctx), "cuCtxSetCurrent", error) ||
        !check(api->streamCreate(&stream, cu::kStreamNonBlocking), "cuStreamCreate", error))
      return false;

    // The image: a CUBIN for this exact GPU, else one of the same major
    // version and a lower minor (binary compatible), else the newest PTX
    // the GPU can JIT.
    const kiln_device_program &prog = *m.device;
    uint32_t cc = static_cast<uint32_t>(major * 10 + minor);
    const kiln_cuda_image *pick = nullptr;
    for (uint32_t i = 0; i < prog.num_images; ++i) {
      const kiln_cuda_image &img = prog.images[i];
      if (!img.is_ptx && img.arch / 10 == cc / 10 && img.arch <= cc &&
          (!pick || img.arch > pick->arch))
        pick = &img;
    }
    for (uint32_t i = 0; !pick && i < prog.num_images; ++i) {
      const kiln_cuda_image &img = prog.images[i];
      if (img.is_ptx && img.arch <= cc)
        pick = &img;
    }
    std::string have;
    for (uint32_t i = 0; i < prog.num_images; ++i)
      have += (i ? ", " : "") + std::string(prog.images[i].is_ptx ? "compute_" : "sm_") +
              std::to_string(prog.images[i].arch);
    if (!pick) {
      error = std::string("model '") + m.name + "' has no kernels for " + devName + " (sm_" +
              std::to_string(cc) + "); it was compiled for " + (have.empty() ? "nothing" : have) +
              ": recompile with --cuda-arch=sm_" + std::to_string(cc);
      return false;
    }
    name = std::string(devName) + " (sm_" + std::to_string(cc) + ", " +
           (pick->is_ptx ? "PTX compute_" : "CUBIN sm_") + std::to_string(pick->arch) + ")";
    // PTX must be NUL-terminated for cuModuleLoadData; the embedded images
    // are (kiln-compile appends one).
    if (!check(api->moduleLoadData(&module, pick->data), "cuModuleLoadData", error))
      return false;
    for (uint32_t i = 0; i < prog.num_launches; ++i) {
      const kiln_device_launch &l = prog.launches[i];
      cu::Function f = nullptr;
      if (!check(api->moduleGetFunction(&f, module, l.kernel), "cuModuleGetFunction", error)) {
        error += std::string(" for kernel ") + l.kernel;
        return false;
      }
      if (l.shared_bytes > 48 * 1024 &&
          !check(api->funcSetAttribute(f, cu::kFuncAttrMaxDynamicSharedBytes,
                                       static_cast<int>(l.shared_bytes)),
                 "cuFuncSetAttribute", error))
        return false;
      functions.push_back(f);
    }
    launches = prog.launches;
    return true;
  }

  bool makeCurrent(std::string &error) override {
    return check(api->ctxSetCurrent(ctx), "cuCtxSetCurrent", error);
  }
  bool alloc(size_t bytes, uint64_t &addr, std::string &error) override {
    cu::DevicePtr p = 0;
    if (!check(api->memAlloc(&p, bytes ? bytes : 1), "cuMemAlloc", error)) {
      error += " allocating " + std::to_string(bytes) + " bytes";
      return false;
    }
    allocations.push_back(p);
    addr = p;
    return true;
  }
  bool allocHost(size_t bytes, void *&ptr, std::string &error) override {
    if (!check(api->memAllocHost(&ptr, bytes ? bytes : 1), "cuMemAllocHost", error))
      return false;
    hostAllocations.push_back(ptr);
    return true;
  }
  bool uploadNow(uint64_t dst, const void *src, size_t bytes, std::string &error) override {
    return check(api->memcpyHtoD(dst, src, bytes), "cuMemcpyHtoD", error);
  }
  bool upload(uint64_t dst, const void *src, size_t bytes, std::string &error) override {
    return check(api->memcpyHtoDAsync(dst, src, bytes, stream), "cuMemcpyHtoDAsync", error);
  }
  bool download(void *dst, uint64_t src, size_t bytes, std::string &error) override {
    return check(api->memcpyDtoHAsync(dst, src, bytes, stream), "cuMemcpyDtoHAsync", error);
  }
  bool launch(uint32_t i, std::vector<uint64_t> &values, std::string &error) override {
    const kiln_device_launch &l = launches[i];
    // cuLaunchKernel reads each parameter through a pointer to it: the
    // buffer addresses (8-byte pointers) and the int64 workgroup count.
    void *params[64];
    std::vector<void *> many;
    void **p = params;
    if (values.size() > 64) {
      many.resize(values.size());
      p = many.data();
    }
    for (size_t k = 0; k < values.size(); ++k)
      p[k] = &values[k];
    if (!check(api->launchKernel(functions[i], l.grid[0], l.grid[1], l.grid[2], l.block[0],
                                 l.block[1], l.block[2], l.shared_bytes, stream, p, nullptr),
               "cuLaunchKernel", error)) {
      error += std::string(" for kernel ") + l.kernel;
      return false;
    }
    return true;
  }
  bool mark(size_t slot, std::string &error) override {
    while (events.size() <= slot) {
      cu::Event e = nullptr;
      if (!check(api->eventCreate(&e, 0), "cuEventCreate", error))
        return false;
      events.push_back(e);
    }
    return check(api->eventRecord(events[slot], stream), "cuEventRecord", error);
  }
  double elapsedMs(size_t from, size_t to) override {
    float ms = 0;
    api->eventElapsedTime(&ms, events[from], events[to]);
    return ms;
  }
  bool synchronize(std::string &error) override {
    return check(api->streamSynchronize(stream), "cuStreamSynchronize", error);
  }
  bool beginCapture(std::string &error) override {
    return check(api->streamBeginCapture(stream, cu::kCaptureModeThreadLocal),
                 "cuStreamBeginCapture", error);
  }
  bool endCapture(std::string &error) override {
    return check(api->streamEndCapture(stream, &graph), "cuStreamEndCapture", error) &&
           check(api->graphInstantiate(&exec, graph, 0), "cuGraphInstantiate", error);
  }
  bool replay(std::string &error) override {
    return check(api->graphLaunch(exec, stream), "cuGraphLaunch", error);
  }

private:
  bool check(cu::Result r, const char *call, std::string &error) {
    if (r == 0)
      return true;
    error = cu::describe(*api, call, r);
    return false;
  }
  const cu::Api *api = nullptr;
  cu::Device device = 0;
  cu::Context ctx = nullptr;
  cu::Stream stream = nullptr;
  cu::Module module = nullptr;
  cu::Graph graph = nullptr;
  cu::GraphExec exec = nullptr;
  const kiln_device_launch *launches = nullptr;
  std::vector<cu::Function> functions;
  std::vector<cu::Event> events;
  std::vector<cu::DevicePtr> allocations;
  std::vector<void *> hostAllocations;
};

} // namespace

//===----------------------------------------------------------------------===//
// DeviceRun
//===----------------------------------------------------------------------===//

std::unique_ptr<DeviceRun> DeviceRun::create(const kiln_model_desc &m, const kiln_options &o,
                                             ThreadPool &pool, kiln_status &status,
                                             std::string &error) {
  std::unique_ptr<DeviceRun> r(new (std::nothrow) DeviceRun);
  status = KILN_ERROR_OUT_OF_MEMORY;
  if (!r) {
    error = "out of memory";
    return nullptr;
  }
  const kiln_device_program *prog = m.device;
  status = KILN_ERROR_INVALID_ARGUMENT;
  if (!prog || prog->num_launches != m.num_kernels) {
    error = std::string("model '") + m.name + "' has no device program";
    return nullptr;
  }
  r->model = &m;
  if (m.device_kind == KILN_DEVICE_CUDA_EMU) {
    r->backend.reset(new (std::nothrow) EmuBackend(m, pool));
  } else {
    auto *cuda = new (std::nothrow) CudaBackend;
    r->backend.reset(cuda);
    if (cuda && !cuda->open(m, o.cuda_device, status, error))
      return nullptr;
  }
  status = KILN_ERROR_OUT_OF_MEMORY;
  if (!r->backend) {
    error = "out of memory";
    return nullptr;
  }
  DeviceBackend &be = *r->backend;
  // Device memory: the arena, the weights (uploaded now), inputs, outputs;
  // pinned host staging for inputs and outputs.
  if (!be.alloc(m.arena_bytes, r->arena, error) || !be.alloc(m.weights_bytes, r->weights, error))
    return nullptr;
  if (m.weights_bytes && !be.uploadNow(r->weights, prog->weights, m.weights_bytes, error)) {
    status = KILN_ERROR_DEVICE;
    return nullptr;
  }
  auto io = [&](const kiln_tensor_desc *ts, uint32_t n, std::vector<uint64_t> &dev,
                std::vector<void *> &host, std::vector<size_t> &bytes) {
    for (uint32_t i = 0; i < n; ++i) {
      bytes.push_back(tensorBytes(ts[i]));
      dev.push_back(0);
      host.push_back(nullptr);
      if (!be.alloc(bytes.back(), dev.back(), error) ||
          !be.allocHost(bytes.back(), host.back(), error))
        return false;
    }
    return true;
  };
  if (!io(m.inputs, m.num_inputs, r->inDev, r->inHost, r->inBytes) ||
      !io(m.outputs, m.num_outputs, r->outDev, r->outHost, r->outBytes))
    return nullptr;
  // One hidden int64 (a size, the fault word) after the caller's tensors.
  auto hidden = [&](std::vector<uint64_t> &dev, std::vector<void *> &host,
                    std::vector<size_t> &bytes) {
    bytes.push_back(8);
    dev.push_back(0);
    host.push_back(nullptr);
    return be.alloc(8, dev.back(), error) && be.allocHost(8, host.back(), error);
  };
  // The hidden outputs: each data-dependent size, read back with the outputs.
  for (uint32_t j = 0; j < m.num_symbol_outputs; ++j)
    if (!hidden(r->outDev, r->outHost, r->outBytes))
      return nullptr;
  // The hidden inputs: each symbol size the kernels read.
  for (uint32_t j = 0; j < m.num_symbol_inputs; ++j)
    if (!hidden(r->inDev, r->inHost, r->inBytes))
      return nullptr;
  // Then the fault word: zero as uploaded, read back after the launches.
  if (m.num_fault_sites &&
      (!hidden(r->inDev, r->inHost, r->inBytes) || !be.allocHost(8, r->faultHost, error)))
    return nullptr;
  // Every launch's parameters, resolved once: the addresses never change
  // for the life of the instance (which is what makes graph replay valid).
  status = KILN_ERROR_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < prog->num_launches; ++i) {
    const kiln_device_launch &l = prog->launches[i];
    std::vector<uint64_t> v;
    for (uint32_t a = 0; a < l.num_args; ++a) {
      if (l.args[a] >= prog->num_buffers) {
        error = std::string("kernel ") + l.kernel + " names buffer " + std::to_string(l.args[a]) +
                " of " + std::to_string(prog->num_buffers);
        return nullptr;
      }
      const kiln_buffer_ref &b = prog->buffers[l.args[a]];
      uint64_t addr = 0;
      bool io = b.kind == KILN_BUFFER_INPUT || b.kind == KILN_BUFFER_OUTPUT;
      const std::vector<uint64_t> &ios = b.kind == KILN_BUFFER_INPUT ? r->inDev : r->outDev;
      if (io && (b.value < 0 || static_cast<size_t>(b.value) >= ios.size())) {
        error = std::string("kernel ") + l.kernel + " names a missing input or output";
        return nullptr;
      }
      switch (b.kind) {
      case KILN_BUFFER_INPUT: addr = r->inDev[b.value]; break;
      case KILN_BUFFER_OUTPUT: addr = r->outDev[b.value]; break;
      case KILN_BUFFER_WEIGHTS: addr = r->weights + b.value; break;
      default: addr = r->arena + b.value; break;
      }
      v.push_back(addr);
    }
    v.push_back(static_cast<uint64_t>(l.workgroups));
    r->values.push_back(std::move(v));
  }
  r->profiling = o.profile != 0;
  // Per-kernel timing needs events between launches: a profiled instance
  // runs the schedule directly.
  r->graphs = o.cuda_graphs != 0 && !r->profiling;
  status = KILN_OK;
  return r;
}

DeviceRun::~DeviceRun() = default;

const std::string &DeviceRun::deviceName() const { return backend->name; }

bool DeviceRun::enqueue(bool timed, std::string &error) {
  DeviceBackend &be = *backend;
  for (size_t i = 0; i < inDev.size(); ++i)
    if (!be.upload(inDev[i], inHost[i], inBytes[i], error))
      return false;
  for (uint32_t i = 0; i < values.size(); ++i) {
    if (timed && !be.mark(2 * i, error))
      return false;
    if (!be.launch(i, values[i], error))
      return false;
    if (timed && !be.mark(2 * i + 1, error))
      return false;
  }
  for (size_t i = 0; i < outDev.size(); ++i)
    if (!be.download(outHost[i], outDev[i], outBytes[i], error))
      return false;
  if (faultHost && !be.download(faultHost, inDev.back(), 8, error))
    return false;
  return true;
}

kiln_status DeviceRun::run(void *const *inputs, void *const *outputs, std::string &error) {
  DeviceBackend &be = *backend;
  if (!be.makeCurrent(error))
    return KILN_ERROR_DEVICE;
  for (size_t i = 0; i < inDev.size(); ++i)
    std::memcpy(inHost[i], inputs[i], inBytes[i]);
  if (graphs) {
    if (!captured) {
      if (!be.beginCapture(error) || !enqueue(false, error) || !be.endCapture(error))
        return KILN_ERROR_DEVICE;
      captured = true;
    }
    if (!be.replay(error))
      return KILN_ERROR_DEVICE;
  } else if (!enqueue(profiling, error)) {
    return KILN_ERROR_DEVICE;
  }
  if (!be.synchronize(error))
    return KILN_ERROR_DEVICE;
  if (profiling) {
    launchMs.assign(values.size(), 0.0);
    for (size_t i = 0; i < values.size(); ++i)
      launchMs[i] = be.elapsedMs(2 * i, 2 * i + 1);
  }
  for (size_t i = 0; i < outDev.size(); ++i)
    std::memcpy(outputs[i], outHost[i], outBytes[i]);
  if (faultHost) // (the caller reads the fault word it passed)
    std::memcpy(inputs[inDev.size() - 1], faultHost, 8);
  return KILN_OK;
}

} // namespace kiln::rt
