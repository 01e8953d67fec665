//===- Instance.cpp - model instances: arena, input checks, run ------------===//
#include "kiln/runtime.h"
#include "runtime/cpu/ThreadPool.h"
#include "runtime/cuda/DeviceRun.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <thread>

struct kiln_instance {
  const kiln_model_desc *model = nullptr;
  void *arena = nullptr;
  kiln::rt::ThreadPool *pool = nullptr;
  std::unique_ptr<kiln::rt::DeviceRun> device; // CUDA and cuda-emu models
  std::string deviceName;
  std::string error;
};

namespace {
thread_local std::string lastError;

const char *dtypeName(int32_t d) {
  switch (d) {
  case KILN_F32: return "f32";
  case KILN_F64: return "f64";
  case KILN_I64: return "i64";
  case KILN_I32: return "i32";
  case KILN_I8: return "i8";
  case KILN_U8: return "u8";
  case KILN_F16: return "f16";
  case KILN_BF16: return "bf16";
  case KILN_I16: return "i16";
  case KILN_U16: return "u16";
  case KILN_U32: return "u32";
  case KILN_U64: return "u64";
  case KILN_BOOL: return "bool";
  default: return "unknown";
  }
}

std::string shapeString(int32_t rank, const int64_t *shape) {
  std::string s = "[";
  for (int32_t i = 0; i < rank; ++i)
    s += (i ? "x" : "") + std::to_string(shape ? shape[i] : -1);
  return s + "]";
}

kiln_status checkTensors(kiln_instance *inst, const char *what,
                         const kiln_tensor_desc *want, uint32_t count,
                         const kiln_tensor *got, size_t gotCount,
                         void **ptrs) {
  if (gotCount != count) {
    inst->error = std::string("expected ") + std::to_string(count) + " " +
                  what + "s, got " + std::to_string(gotCount);
    return KILN_ERROR_INVALID_ARGUMENT;
  }
  if (count && !got) {
    inst->error = std::string(what) + " array is null";
    return KILN_ERROR_INVALID_ARGUMENT;
  }
  for (uint32_t i = 0; i < count; ++i) {
    const kiln_tensor &t = got[i];
    const kiln_tensor_desc &d = want[i];
    int64_t elems = 1;
    for (int32_t k = 0; k < d.rank; ++k)
      elems *= d.shape[k];
    if (!t.data && elems != 0) {
      inst->error = std::string(what) + " '" + d.name + "' has no data";
      return KILN_ERROR_INVALID_ARGUMENT;
    }
    if (t.dtype != d.dtype) {
      inst->error = std::string(what) + " '" + d.name + "' has dtype " +
                    dtypeName(t.dtype) + "; the model expects " +
                    dtypeName(d.dtype);
      return KILN_ERROR_DTYPE_MISMATCH;
    }
    bool same = t.rank == d.rank && (t.rank == 0 || t.shape);
    for (int32_t k = 0; same && k < d.rank; ++k)
      same = t.shape[k] == d.shape[k];
    if (!same) {
      inst->error = std::string(what) + " '" + d.name + "' has shape " +
                    shapeString(t.rank, t.shape) + "; the model expects " +
                    shapeString(d.rank, d.shape);
      return KILN_ERROR_SHAPE_MISMATCH;
    }
    // An empty tensor may come without data; kernels touch none of it.
    alignas(64) static char emptyTensor[64];
    ptrs[i] = t.data ? t.data : emptyTensor;
  }
  return KILN_OK;
}
} // namespace

extern "C" {

kiln_status kiln_instance_create(const kiln_model_desc *model,
                                 const kiln_options *options,
                                 kiln_instance **out) {
  if (!model || !out) {
    lastError = "kiln_instance_create: null model or output pointer";
    return KILN_ERROR_INVALID_ARGUMENT;
  }
  *out = nullptr;
  if (model->abi_version != KILN_ABI_VERSION) {
    lastError = "model '" + std::string(model->name) + "' was built for runtime ABI " +
                std::to_string(model->abi_version) + "; this runtime is ABI " +
                std::to_string(KILN_ABI_VERSION);
    return KILN_ERROR_ABI_MISMATCH;
  }
  int threads = options ? options->num_threads : 0;
  if (threads <= 0) {
    threads = static_cast<int>(std::thread::hardware_concurrency());
    if (const char *env = std::getenv("KILN_NUM_THREADS"))
      threads = std::atoi(env);
    if (threads <= 0)
      threads = 1;
  }
  auto *inst = new (std::nothrow) kiln_instance;
  if (!inst) {
    lastError = "out of memory";
    return KILN_ERROR_OUT_OF_MEMORY;
  }
  inst->model = model;
  bool onDevice = model->device_kind != KILN_DEVICE_CPU;
  if (model->device_kind == KILN_DEVICE_CUDA)
    threads = 1; // the host only enqueues work
  if (model->arena_bytes && !onDevice) {
    size_t bytes = (model->arena_bytes + 63) / 64 * 64;
    inst->arena = std::aligned_alloc(64, bytes);
    if (!inst->arena) {
      lastError = "cannot allocate the " + std::to_string(bytes) + "-byte arena";
      delete inst;
      return KILN_ERROR_OUT_OF_MEMORY;
    }
  }
  inst->pool = new (std::nothrow) kiln::rt::ThreadPool(threads);
  if (!inst->pool) {
    lastError = "out of memory";
    std::free(inst->arena);
    delete inst;
    return KILN_ERROR_OUT_OF_MEMORY;
  }
  inst->pool->enableProfile(options && options->profile && !onDevice);
  if (onDevice) {
    kiln_options o{};
    if (options)
      o = *options;
    kiln_status st = KILN_OK;
    std::string error;
    inst->device = kiln::rt::DeviceRun::create(*model, o, *inst->pool, st, error);
    if (!inst->device) {
      lastError = "model '" + std::string(model->name) + "': " + error;
      kiln_instance_destroy(inst);
      return st;
    }
    inst->deviceName = inst->device->deviceName();
  } else {
    inst->deviceName = "cpu (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");
  }
  *out = inst;
  return KILN_OK;
}

kiln_status kiln_instance_run(kiln_instance *inst, const kiln_tensor *inputs,
                              size_t numInputs, const kiln_tensor *outputs,
                              size_t numOutputs) {
  if (!inst)
    return KILN_ERROR_INVALID_ARGUMENT;
  inst->error.clear();
  const kiln_model_desc *m = inst->model;
  void *in[64], *outp[64];
  void **ins = m->num_inputs <= 64 ? in : new (std::nothrow) void *[m->num_inputs];
  void **outs = m->num_outputs <= 64 ? outp : new (std::nothrow) void *[m->num_outputs];
  kiln_status st = KILN_ERROR_OUT_OF_MEMORY;
  if (ins && outs) {
    st = checkTensors(inst, "input", m->inputs, m->num_inputs, inputs, numInputs, ins);
    if (st == KILN_OK)
      st = checkTensors(inst, "output", m->outputs, m->num_outputs, outputs,
                        numOutputs, outs);
    if (st == KILN_OK && inst->device) {
      st = inst->device->run(ins, outs, inst->error);
    } else if (st == KILN_OK) {
      inst->pool->beginRun();
      m->run(inst->arena, ins, outs, inst->pool);
    }
  } else {
    inst->error = "out of memory";
  }
  if (ins != in) delete[] ins;
  if (outs != outp) delete[] outs;
  return st;
}

void kiln_instance_destroy(kiln_instance *inst) {
  if (!inst)
    return;
  inst->device.reset(); // before the pool its emulated launches use
  delete inst->pool;
  std::free(inst->arena);
  delete inst;
}

const char *kiln_instance_error(const kiln_instance *inst) {
  return inst ? inst->error.c_str() : "null instance";
}

const char *kiln_last_error(void) { return lastError.c_str(); }

const kiln_model_desc *kiln_instance_model(const kiln_instance *inst) {
  return inst ? inst->model : nullptr;
}

const char *kiln_instance_device(const kiln_instance *inst) {
  return inst ? inst->deviceName.c_str() : "null instance";
}

kiln_status kiln_instance_profile(const kiln_instance *inst, const double **ms,
                                  size_t *count) {
  if (!inst || !ms || !count)
    return KILN_ERROR_INVALID_ARGUMENT;
  const std::vector<double> &p = inst->device ? inst->device->profile() : inst->pool->profile();
  *ms = p.data();
  *count = p.size();
  return KILN_OK;
}

void kiln_rt_parallel_for(void *pool, kiln_kernel_fn fn, void *const *args,
                          int64_t n) {
  static_cast<kiln::rt::ThreadPool *>(pool)->parallelFor(fn, args, n);
}

} // extern "C"
