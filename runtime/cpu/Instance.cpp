//===- Instance.cpp - model instances: arena, input checks, run ------------===//
#include "kiln/runtime.h"
#include "kiln/narrow.h"
#include "runtime/cpu/HugePages.h"
#include "runtime/cpu/ThreadPool.h"
#include "runtime/cuda/DeviceRun.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <system_error>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

struct kiln_instance {
  const kiln_model_desc *model = nullptr;
  void *arena = nullptr;
  kiln::rt::ThreadPool *pool = nullptr;
  std::unique_ptr<kiln::rt::DeviceRun> device; // CUDA and cuda-emu models
  std::string deviceName;
  std::string error;
  const char *errorFallback = nullptr; // when `error` found no memory
  // Symbolic dimensions: their sizes in the current run, and bound-sized
  // staging for the tensors that carry them (allocated on the first run
  // below the bounds).
  std::vector<int64_t> symbolValues;
  std::vector<int64_t> hiddenInputs; // the sizes symbol_inputs name, per run
  int64_t faultWord = 0;             // the hidden input after them (fault sites)
  // Hidden outputs: the sizes of data-dependent (KILN_SYM_COMPUTED) symbols
  // as the run wrote them; and every output's shape in the last good run.
  std::vector<int64_t> symbolOutputs;
  std::vector<std::vector<int64_t>> lastShapes;
  std::vector<void *> stageIn, stageOut;
  // Narrow inputs and outputs (float8, int4, ...) in their carrier type, at
  // the run's sizes (kiln/narrow.h converts them).
  std::vector<std::vector<char>> carrierIn, carrierOut;
  std::atomic<bool> busy{false}; // a call is running (CallGuard)
};

namespace {
thread_local std::string lastError;
/// The message when even lastError found no memory (a static string).
thread_local const char *lastErrorFallback = nullptr;

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
  case KILN_F8E4M3FN: return "f8e4m3fn";
  case KILN_F8E4M3FNUZ: return "f8e4m3fnuz";
  case KILN_F8E5M2: return "f8e5m2";
  case KILN_F8E5M2FNUZ: return "f8e5m2fnuz";
  case KILN_F8E8M0: return "f8e8m0";
  case KILN_F4E2M1: return "f4e2m1";
  case KILN_I4: return "i4";
  case KILN_U4: return "u4";
  case KILN_I2: return "i2";
  case KILN_U2: return "u2";
  default: return "unknown";
  }
}

/// Bytes per element of a tensor as the kernels hold it (narrow types in
/// their carrier).
size_t carrierSize(int32_t dtype) { return kiln_dtype_size(kiln_dtype_carrier(dtype)); }

std::string shapeString(int32_t rank, const int64_t *shape) {
  std::string s = "[";
  for (int32_t i = 0; i < rank; ++i)
    s += (i ? "x" : "") + std::to_string(shape ? shape[i] : -1);
  return s + "]";
}

int64_t elementsOf(const kiln_tensor_desc &d) {
  int64_t n = 1;
  for (int32_t k = 0; k < d.rank; ++k)
    n *= d.shape[k];
  return n;
}

/// The size axis k of `d` has in this run.
int64_t wantDim(const kiln_instance *inst, const kiln_tensor_desc &d, int32_t k) {
  if (d.symbols && d.symbols[k] >= 0)
    return inst->symbolValues[d.symbols[k]];
  return d.shape[k];
}

/// Checks count, dtype and shape; symbolic axes of inputs set the symbols'
/// sizes (`bind`), those of outputs must match them.
kiln_status checkTensors(kiln_instance *inst, const char *what,
                         const kiln_tensor_desc *want, uint32_t count,
                         const kiln_tensor *got, size_t gotCount,
                         void **ptrs, bool bind) {
  const kiln_model_desc *m = inst->model;
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
    if (t.dtype != d.dtype) {
      inst->error = std::string(what) + " '" + d.name + "' has dtype " +
                    dtypeName(t.dtype) + "; the model expects " +
                    dtypeName(d.dtype);
      return KILN_ERROR_DTYPE_MISMATCH;
    }
    bool same = t.rank == d.rank && (t.rank == 0 || t.shape);
    for (int32_t k = 0; same && k < d.rank; ++k) {
      int32_t sym = d.symbols ? d.symbols[k] : -1;
      if (sym >= 0 && bind && inst->symbolValues[sym] < 0) {
        int64_t v = t.shape[k];
        if (v < 0 || v > m->symbol_bounds[sym]) {
          inst->error = std::string(what) + " '" + d.name + "' has shape " +
                        shapeString(t.rank, t.shape) + ": dynamic dimension '" +
                        m->symbol_names[sym] + "' (axis " + std::to_string(k) +
                        ") must be from 0 to " + std::to_string(m->symbol_bounds[sym]) +
                        ", the bound it was compiled for (kiln-compile --max-shape)";
          return KILN_ERROR_SHAPE_MISMATCH;
        }
        inst->symbolValues[sym] = v;
      }
      same = t.shape[k] == wantDim(inst, d, k);
    }
    if (!same) { // (the message is built only here: run() checks every call)
      std::string expect = "[";
      for (int32_t k = 0; k < d.rank; ++k) {
        int32_t sym = d.symbols ? d.symbols[k] : -1;
        bool known = sym < 0 || inst->symbolValues[sym] >= 0;
        expect += (k ? "x" : "") + (known ? std::to_string(wantDim(inst, d, k))
                                          : std::string(m->symbol_names[sym]) + "<=" +
                                                std::to_string(m->symbol_bounds[sym]));
      }
      expect += "]";
      inst->error = std::string(what) + " '" + d.name + "' has shape " +
                    shapeString(t.rank, t.shape) + "; the model expects " + expect;
      return KILN_ERROR_SHAPE_MISMATCH;
    }
    int64_t elems = 1;
    for (int32_t k = 0; k < d.rank; ++k)
      elems *= t.shape[k];
    if (!t.data && elems != 0) {
      inst->error = std::string(what) + " '" + d.name + "' has no data";
      return KILN_ERROR_INVALID_ARGUMENT;
    }
    // An empty tensor may come without data; kernels touch none of it.
    alignas(64) static char emptyTensor[64];
    ptrs[i] = t.data ? t.data : emptyTensor;
  }
  return KILN_OK;
}

/// Copies the leading `act` box between a tensor of shape `act` and one of
/// shape `bound` (each axis at least as long): `toBound` pads into the
/// bound-shaped `dst`, repeating the last element along every padded axis
/// (zeros when an axis is empty); otherwise it crops out of the
/// bound-shaped `src`. `fill`: pad (else the padding is left as it is: no
/// kernel reads it).
void boxCopy(char *dst, const char *src, const int64_t *act, const int64_t *bound,
             int32_t rank, size_t elem, bool toBound, bool fill = true) {
  if (rank == 0) {
    std::memcpy(dst, src, elem);
    return;
  }
  size_t actRow = elem, boundRow = elem;
  for (int32_t k = 1; k < rank; ++k) {
    actRow *= act[k];
    boundRow *= bound[k];
  }
  size_t dstRow = toBound ? boundRow : actRow, srcRow = toBound ? actRow : boundRow;
  if (act[0] == 0) { // an empty run: zeros pad it (no last element to repeat)
    if (toBound && fill)
      std::memset(dst, 0, bound[0] * boundRow);
    return;
  }
  if (rank == 1 || actRow == boundRow)
    std::memcpy(dst, src, act[0] * actRow);
  else
    for (int64_t i = 0; i < act[0]; ++i)
      boxCopy(dst + i * dstRow, src + i * srcRow, act + 1, bound + 1, rank - 1, elem, toBound,
              fill);
  for (int64_t i = act[0]; toBound && fill && i < bound[0]; ++i)
    std::memcpy(dst + i * dstRow, dst + (act[0] - 1) * dstRow, dstRow);
}

/// The size of derived symbol `s` from the earlier ones (kiln_symbol_op).
kiln_status deriveSymbol(kiln_instance *inst, uint32_t s) {
  const kiln_model_desc *m = inst->model;
  const int64_t *d = m->symbol_derived + 3 * s;
  if (d[0] == KILN_SYM_COMPUTED)
    return KILN_OK; // (known after the run: the bound stands until then)
  auto size = [&](int64_t sym) -> int64_t {
    return sym >= 0 && sym < static_cast<int64_t>(s) ? inst->symbolValues[sym] : -1;
  };
  int64_t a = size(d[1]), b = d[2], v = -1;
  bool symB = KILN_SYM_B_IS_SYMBOL(d[0]);
  if (symB)
    b = size(d[2]);
  if (a < 0 || (symB && b < 0))
    return KILN_OK; // (an operand no input carries: the bound stands)
  switch (d[0]) {
  case KILN_SYM_MUL_CONST:
  case KILN_SYM_MUL: v = a * b; break;
  case KILN_SYM_ADD: v = a + b; break;
  case KILN_SYM_ADD_CONST: v = std::max<int64_t>(0, a + b); break;
  case KILN_SYM_MIN_CONST: v = std::min(a, b); break;
  case KILN_SYM_SUB: v = std::max<int64_t>(0, a - b); break;
  case KILN_SYM_CEIL_DIV_CONST: v = b > 0 ? (a + b - 1) / b : -1; break;
  case KILN_SYM_DIV_CONST:
    if (b <= 0 || a % b) {
      inst->error = "dynamic dimension '" + std::string(m->symbol_names[d[1]]) + "' is " +
                    std::to_string(a) + "; the model splits it into parts of " +
                    std::to_string(b) + ", so it must be a multiple of " + std::to_string(b);
      return KILN_ERROR_SHAPE_MISMATCH;
    }
    v = a / b;
    break;
  case KILN_SYM_BROADCAST:
    if (a != b && a != 1 && b != 1) {
      inst->error = "dynamic dimensions '" + std::string(m->symbol_names[d[1]]) + "' (" +
                    std::to_string(a) + ") and '" + std::string(m->symbol_names[d[2]]) +
                    "' (" + std::to_string(b) + ") broadcast on one axis: they must be equal "
                    "or one of them 1";
      return KILN_ERROR_SHAPE_MISMATCH;
    }
    v = a == 1 ? b : a;
    break;
  default: break;
  }
  if (v > m->symbol_bounds[s]) { // (kiln-compile derives bounds that hold)
    inst->error = "dynamic dimension '" + std::string(m->symbol_names[s]) + "' is " +
                  std::to_string(v) + ", past its bound " + std::to_string(m->symbol_bounds[s]);
    return KILN_ERROR_SHAPE_MISMATCH;
  }
  inst->symbolValues[s] = v;
  return KILN_OK;
}

/// The input checks of a run (sets the symbols' sizes).
kiln_status checkInputs(kiln_instance *inst, const kiln_tensor *inputs, size_t n,
                        void **ptrs) {
  const kiln_model_desc *m = inst->model;
  inst->symbolValues.assign(m->num_symbols, -1);
  kiln_status st = checkTensors(inst, "input", m->inputs, m->num_inputs, inputs, n, ptrs, true);
  for (uint32_t s = 0; st == KILN_OK && s < m->num_symbols; ++s) {
    if (m->symbol_derived && m->symbol_derived[3 * s] != KILN_SYM_INPUT) {
      st = deriveSymbol(inst, s);
      if (st != KILN_OK)
        return st;
    }
    if (inst->symbolValues[s] < 0)
      inst->symbolValues[s] = m->symbol_bounds[s]; // (carried by no input)
    int64_t pin = m->symbol_pins ? m->symbol_pins[s] : 0, v = inst->symbolValues[s];
    if (pin && v != 1 && v != pin) {
      inst->error = "dynamic dimension '" + std::string(m->symbol_names[s]) + "' is " +
                    std::to_string(v) + "; the model broadcasts it against size " +
                    std::to_string(pin) + ", so it must be 1 or " + std::to_string(pin);
      return KILN_ERROR_SHAPE_MISMATCH;
    }
  }
  return st;
}
/// After a run: the sizes of data-dependent symbols, as the model wrote
/// them, and the symbols derived from them.
kiln_status readComputedSymbols(kiln_instance *inst) {
  const kiln_model_desc *m = inst->model;
  if (!m->num_symbol_outputs || !m->symbol_derived)
    return KILN_OK;
  std::vector<bool> dependent(m->num_symbols, false);
  for (uint32_t s = 0; s < m->num_symbols; ++s) {
    const int64_t *d = m->symbol_derived + 3 * s;
    if (d[0] == KILN_SYM_COMPUTED) {
      int64_t v = d[1] >= 0 && d[1] < m->num_symbol_outputs ? inst->symbolOutputs[d[1]] : -1;
      if (v < 0 || v > m->symbol_bounds[s]) { // (a TopK's k past its axis, say)
        // (-1: the arguments that set it name no valid shape.)
        inst->error = "data-dependent dimension '" + std::string(m->symbol_names[s]) +
                      "' is " + std::to_string(v) + " in this run, outside [0, " +
                      std::to_string(m->symbol_bounds[s]) + "]: " +
                      (v < 0 ? "the inputs that set it name no valid shape"
                             : "the inputs that set it are out of range, or past a bound "
                               "kiln-compile --max-shape can raise") +
                      "; the outputs are undefined";
        return KILN_ERROR_SHAPE_MISMATCH;
      }
      inst->symbolValues[s] = v;
      dependent[s] = true;
      continue;
    }
    bool symB = KILN_SYM_B_IS_SYMBOL(d[0]);
    auto dep = [&](int64_t x) { return x >= 0 && x < s && dependent[x]; };
    if (d[0] == KILN_SYM_INPUT || !(dep(d[1]) || (symB && dep(d[2]))))
      continue;
    dependent[s] = true;
    inst->symbolValues[s] = -1;
    if (kiln_status st = deriveSymbol(inst, s); st != KILN_OK)
      return st;
  }
  return KILN_OK;
}

/// The state (kiln_model_desc.states) whose input (output) is tensor k, or
/// -1.
int32_t stateOf(const kiln_model_desc *m, uint32_t k, bool output) {
  for (uint32_t s = 0; s < m->num_states; ++s)
    if (static_cast<uint32_t>(m->states[3 * s + (output ? 1 : 0)]) == k)
      return static_cast<int32_t>(s);
  return -1;
}

/// Below the bounds: inputs carrying a symbol are padded into bound-sized
/// staging, and outputs carrying one are computed there. A state's input
/// is read by no kernel; with `statesInPlace` a state's output is the
/// caller's buffer, laid out at the bounds already.
kiln_status stageInputs(kiln_instance *inst, const kiln_tensor *inputs, void **ins,
                        void **outs, bool statesInPlace) {
  const kiln_model_desc *m = inst->model;
  auto stage = [&](std::vector<void *> &bufs, const kiln_tensor_desc *ds, uint32_t n,
                   uint32_t i) -> void * {
    bufs.resize(n, nullptr);
    if (!bufs[i]) {
      size_t bytes = elementsOf(ds[i]) * carrierSize(ds[i].dtype);
      bufs[i] = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    }
    return bufs[i];
  };
  for (uint32_t i = 0; i < m->num_inputs; ++i) {
    const kiln_tensor_desc &d = m->inputs[i];
    if (!d.symbols || (m->input_compact && m->input_compact[i]) || stateOf(m, i, false) >= 0)
      continue; // (read in the caller's layout, or not at all)
    void *buf = stage(inst->stageIn, m->inputs, m->num_inputs, i);
    if (!buf) {
      inst->error = "out of memory staging input '" + std::string(d.name) + "'";
      return KILN_ERROR_OUT_OF_MEMORY;
    }
    boxCopy(static_cast<char *>(buf), static_cast<const char *>(ins[i]), inputs[i].shape,
            d.shape, d.rank, carrierSize(d.dtype), true,
            !m->input_padding || m->input_padding[i]);
    ins[i] = buf;
  }
  for (uint32_t i = 0; i < m->num_outputs; ++i) {
    const kiln_tensor_desc &d = m->outputs[i];
    if (!d.symbols || (m->output_compact && m->output_compact[i]) ||
        (statesInPlace && stateOf(m, i, true) >= 0))
      continue; // (written in the caller's layout)
    void *buf = stage(inst->stageOut, m->outputs, m->num_outputs, i);
    if (!buf) {
      inst->error = "out of memory staging output '" + std::string(d.name) + "'";
      return KILN_ERROR_OUT_OF_MEMORY;
    }
    outs[i] = buf;
  }
  return KILN_OK;
}

/// Whether the kernels hold a dtype in another (a narrow type's carrier).
bool isNarrow(int32_t dtype) { return kiln_dtype_carrier(dtype) != dtype; }

/// Crops the staged outputs into the caller's buffers (narrow outputs: into
/// their carriers).
void cropOutputs(kiln_instance *inst, const kiln_tensor *outputs, bool statesInPlace) {
  const kiln_model_desc *m = inst->model;
  for (uint32_t i = 0; i < m->num_outputs; ++i) {
    const kiln_tensor_desc &d = m->outputs[i];
    void *dst = isNarrow(d.dtype) ? inst->carrierOut[i].data() : outputs[i].data;
    if (!d.symbols || (m->output_compact && m->output_compact[i]) ||
        (statesInPlace && stateOf(m, i, true) >= 0))
      continue;
    // (The run's sizes: a data-dependent axis is known only now, and its
    // real elements go packed at the start of the bound-sized buffer.)
    int64_t real[16];
    std::vector<int64_t> held;
    int64_t *act = real;
    if (d.rank > 16) {
      held.resize(d.rank);
      act = held.data();
    }
    for (int32_t k = 0; k < d.rank; ++k)
      act[k] = wantDim(inst, d, k);
    boxCopy(static_cast<char *>(dst), static_cast<const char *>(inst->stageOut[i]), act,
            d.shape, d.rank, carrierSize(d.dtype), false);
  }
}

int64_t elementsOf(const kiln_tensor &t) {
  int64_t n = 1;
  for (int32_t k = 0; k < t.rank; ++k)
    n *= t.shape[k];
  return n;
}

/// Narrow inputs are unpacked into their carriers, and narrow outputs are
/// computed in carriers (`ptrs` are redirected to them).
void toCarriers(std::vector<std::vector<char>> &carriers, const kiln_tensor_desc *ds,
                uint32_t n, const kiln_tensor *ts, void **ptrs, bool unpack) {
  carriers.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    if (!isNarrow(ds[i].dtype))
      continue;
    int64_t elems = elementsOf(ts[i]);
    carriers[i].resize(std::max<size_t>(elems * carrierSize(ds[i].dtype), 1));
    if (unpack)
      kiln_narrow_to_carrier(ds[i].dtype, ts[i].data, carriers[i].data(), elems);
    ptrs[i] = carriers[i].data();
  }
}

/// Packs the carriers of narrow outputs into the caller's buffers.
void fromCarriers(kiln_instance *inst, const kiln_tensor *outputs) {
  const kiln_model_desc *m = inst->model;
  for (uint32_t i = 0; i < m->num_outputs; ++i)
    if (isNarrow(m->outputs[i].dtype))
      kiln_narrow_from_carrier(m->outputs[i].dtype, inst->carrierOut[i].data(),
                               outputs[i].data, elementsOf(outputs[i]));
}
} // namespace

namespace {

kiln_status createInstance(const kiln_model_desc *model, const kiln_options *options,
                           kiln_instance **out) {
  if (model->abi_version != KILN_ABI_VERSION) {
    lastError = "model '" + std::string(model->name) + "' was built for runtime ABI " +
                std::to_string(model->abi_version) + "; this runtime is ABI " +
                std::to_string(KILN_ABI_VERSION);
    return KILN_ERROR_ABI_MISMATCH;
  }
  int threads = options ? options->num_threads : 0;
  if (threads > KILN_MAX_THREADS) {
    lastError = "num_threads " + std::to_string(threads) + " is more than KILN_MAX_THREADS (" +
                std::to_string(KILN_MAX_THREADS) + ")";
    return KILN_ERROR_INVALID_ARGUMENT;
  }
  if (threads <= 0) {
    threads = static_cast<int>(std::thread::hardware_concurrency());
    if (const char *env = std::getenv("KILN_NUM_THREADS"))
      threads = std::atoi(env);
    threads = std::clamp(threads, 1, KILN_MAX_THREADS);
  }
  // (owned here until it is handed out: an exception below frees it)
  std::unique_ptr<kiln_instance, void (*)(kiln_instance *)> inst(new kiln_instance,
                                                                 kiln_instance_destroy);
  inst->model = model;
  bool onDevice = model->device_kind != KILN_DEVICE_CPU;
  // The kernels stream the weights on every run: on huge pages once per
  // process (HugePages.h).
  if (!onDevice)
    kiln::rt::weightsOnHugePages(model->weights, model->weights_bytes);
  if (model->device_kind == KILN_DEVICE_CUDA)
    threads = 1; // the host only enqueues work
  if (model->arena_bytes && !onDevice) {
    size_t bytes = (model->arena_bytes + 63) / 64 * 64;
    inst->arena = std::aligned_alloc(64, bytes);
    if (!inst->arena) {
      lastError = "cannot allocate the " + std::to_string(bytes) + "-byte arena";
      return KILN_ERROR_OUT_OF_MEMORY;
    }
  }
  inst->pool = new kiln::rt::ThreadPool(threads);
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
      return st;
    }
    inst->deviceName = inst->device->deviceName();
  } else {
    inst->deviceName = "cpu (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");
  }
  *out = inst.release();
  return KILN_OK;
}

/// The error of a run whose kernels stored a fault code (runtime.h's
/// num_fault_sites).
kiln_status reportFault(kiln_instance *inst) {
  const kiln_model_desc *m = inst->model;
  int64_t code = inst->faultWord;
  if (code >= 1 && code <= m->num_fault_sites && m->fault_sites)
    inst->error = std::string("index out of range in ") + m->fault_sites[code - 1] +
                  ": an index lies outside the axis it indexes; the outputs are undefined";
  else
    inst->error = "a kernel reported fault code " + std::to_string(code) + " of a model with " +
                  std::to_string(m->num_fault_sites) + " fault sites";
  return KILN_ERROR_INDEX_OUT_OF_RANGE;
}

kiln_status runInstance(kiln_instance *inst, const kiln_tensor *inputs, size_t numInputs,
                        const kiln_tensor *outputs, size_t numOutputs, bool statesInPlace) {
  const kiln_model_desc *m = inst->model;
  void *in[64], *outp[64];
  // The caller's inputs, then the hidden ones: symbol sizes, the fault word.
  uint32_t faultAt = m->num_inputs + m->num_symbol_inputs;
  uint32_t numIns = faultAt + (m->num_fault_sites ? 1 : 0);
  // The caller's outputs, then the hidden ones: data-dependent sizes.
  uint32_t numOuts = m->num_outputs + m->num_symbol_outputs;
  std::vector<void *> heldIns, heldOuts;
  if (numIns > 64)
    heldIns.resize(numIns);
  if (numOuts > 64)
    heldOuts.resize(numOuts);
  void **ins = numIns <= 64 ? in : heldIns.data();
  void **outs = numOuts <= 64 ? outp : heldOuts.data();
  kiln_status st = checkInputs(inst, inputs, numInputs, ins);
  if (st == KILN_OK)
    st = checkTensors(inst, "output", m->outputs, m->num_outputs, outputs,
                      numOutputs, outs, false);
  if (st == KILN_OK) {
    toCarriers(inst->carrierIn, m->inputs, m->num_inputs, inputs, ins, true);
    toCarriers(inst->carrierOut, m->outputs, m->num_outputs, outputs, outs, false);
  }
  // (Data-dependent sizes are known only after the run: their outputs are
  // always computed in staging and cropped.)
  bool padded = m->num_symbol_outputs > 0;
  for (uint32_t s = 0; s < m->num_symbols; ++s)
    padded |= inst->symbolValues[s] != m->symbol_bounds[s];
  if (st == KILN_OK && padded)
    st = stageInputs(inst, inputs, ins, outs, statesInPlace);
  // A state's past goes into its output's buffer (laid out at the output's
  // bounds), where the kernels append to it; a caller keeping its states
  // there has put it in place.
  for (uint32_t k = 0; st == KILN_OK && !statesInPlace && k < m->num_states; ++k) {
    uint32_t i = static_cast<uint32_t>(m->states[3 * k]);
    uint32_t o = static_cast<uint32_t>(m->states[3 * k + 1]);
    boxCopy(static_cast<char *>(outs[o]), static_cast<const char *>(inputs[i].data),
            inputs[i].shape, m->outputs[o].shape, m->outputs[o].rank,
            carrierSize(m->outputs[o].dtype), true, false);
  }
  if (st == KILN_OK && m->num_symbol_inputs) {
    inst->hiddenInputs.resize(m->num_symbol_inputs);
    for (uint32_t j = 0; j < m->num_symbol_inputs; ++j) {
      inst->hiddenInputs[j] = inst->symbolValues[m->symbol_inputs[j]];
      ins[m->num_inputs + j] = &inst->hiddenInputs[j];
    }
  }
  inst->faultWord = 0;
  if (m->num_fault_sites)
    ins[faultAt] = &inst->faultWord;
  inst->symbolOutputs.assign(m->num_symbol_outputs, -1);
  for (uint32_t j = 0; j < m->num_symbol_outputs; ++j)
    outs[m->num_outputs + j] = &inst->symbolOutputs[j];
  if (st == KILN_OK && inst->device) {
    st = inst->device->run(ins, outs, inst->error);
  } else if (st == KILN_OK) {
    inst->pool->beginRun();
    m->run(inst->arena, ins, outs, inst->pool);
    if (inst->pool->takeScratchFailure()) {
      inst->error = "out of memory: a matrix-product kernel found no scratch memory; the "
                    "outputs are incomplete";
      st = KILN_ERROR_OUT_OF_MEMORY;
    }
  }
  if (st == KILN_OK && inst->faultWord)
    st = reportFault(inst);
  if (st == KILN_OK)
    st = readComputedSymbols(inst);
  if (st == KILN_OK && padded)
    cropOutputs(inst, outputs, statesInPlace);
  if (st == KILN_OK)
    fromCarriers(inst, outputs);
  if (st == KILN_OK) {
    inst->lastShapes.resize(m->num_outputs);
    for (uint32_t i = 0; i < m->num_outputs; ++i) {
      const kiln_tensor_desc &d = m->outputs[i];
      inst->lastShapes[i].resize(d.rank);
      for (int32_t k = 0; k < d.rank; ++k)
        inst->lastShapes[i][k] = wantDim(inst, d, k);
    }
  }
  return st;
}

kiln_status lastOutputShape(kiln_instance *inst, uint32_t index, int64_t *shape) {
  const kiln_model_desc *m = inst->model;
  if (index >= m->num_outputs) {
    inst->error = "output " + std::to_string(index) + " of a model with " +
                  std::to_string(m->num_outputs) + " outputs";
    return KILN_ERROR_INVALID_ARGUMENT;
  }
  if (index >= inst->lastShapes.size()) {
    inst->error = "kiln_instance_last_output_shape: the instance has not run yet";
    return KILN_ERROR_INVALID_ARGUMENT;
  }
  if (!shape && m->outputs[index].rank > 0) {
    inst->error = "kiln_instance_last_output_shape: null shape array";
    return KILN_ERROR_INVALID_ARGUMENT;
  }
  for (size_t k = 0; k < inst->lastShapes[index].size(); ++k)
    shape[k] = inst->lastShapes[index][k];
  return KILN_OK;
}

kiln_status outputShape(kiln_instance *inst, const kiln_tensor *inputs, size_t numInputs,
                        uint32_t index, int64_t *shape) {
  const kiln_model_desc *m = inst->model;
  if (index < m->num_outputs && !shape && m->outputs[index].rank > 0) {
    inst->error = "kiln_instance_output_shape: null shape array";
    return KILN_ERROR_INVALID_ARGUMENT;
  }
  if (index >= m->num_outputs) {
    inst->error = "output " + std::to_string(index) + " of a model with " +
                  std::to_string(m->num_outputs) + " outputs";
    return KILN_ERROR_INVALID_ARGUMENT;
  }
  std::vector<void *> ptrs(m->num_inputs);
  kiln_status st = checkInputs(inst, inputs, numInputs, ptrs.data());
  if (st != KILN_OK)
    return st;
  const kiln_tensor_desc &d = m->outputs[index];
  for (int32_t k = 0; k < d.rank; ++k)
    shape[k] = wantDim(inst, d, k);
  return KILN_OK;
}

/// The status of an exception that reached an entry point (a failed
/// allocation, a thread that could not be started, ...), with a message
/// that needs no memory and, where memory allows, the exception's own text.
kiln_status statusOf(std::exception_ptr e, const char *&brief, std::string &detail) {
  try {
    std::rethrow_exception(e);
  } catch (const std::bad_alloc &) {
    brief = "out of memory";
    return KILN_ERROR_OUT_OF_MEMORY;
  } catch (const std::system_error &x) {
    brief = "the system refused a resource (a thread or memory)";
    detail = x.what();
    return x.code() == std::errc::resource_unavailable_try_again ||
                   x.code() == std::errc::not_enough_memory
               ? KILN_ERROR_OUT_OF_MEMORY
               : KILN_ERROR_INTERNAL;
  } catch (const std::exception &x) {
    brief = "internal error";
    detail = x.what();
  } catch (...) {
    brief = "internal error: an unknown exception";
  }
  return KILN_ERROR_INTERNAL;
}

/// Stores an entry point's message: `brief` alone when even the message
/// finds no memory.
void setMessage(std::string &message, const char *&fallback, const char *prefix,
                const char *brief, const std::string &detail) {
  try {
    message = std::string(prefix) + brief + (detail.empty() ? "" : ": " + detail);
    fallback = nullptr;
  } catch (...) {
    message.clear();
    fallback = brief;
  }
}

/// One call of an instance at a time: a second thread's call meanwhile is
/// refused (KILN_ERROR_BUSY) without touching the instance.
class CallGuard {
public:
  explicit CallGuard(kiln_instance *inst) : inst(inst) {
    owner = !inst->busy.exchange(true, std::memory_order_acquire);
  }
  ~CallGuard() {
    if (owner)
      inst->busy.store(false, std::memory_order_release);
  }
  bool owns() const { return owner; }

private:
  kiln_instance *inst;
  bool owner;
};

/// Runs an instance call under its CallGuard; exceptions become codes with
/// the instance's message.
template <typename Call> kiln_status guardedCall(kiln_instance *inst, Call call) {
  if (!inst)
    return KILN_ERROR_INVALID_ARGUMENT;
  CallGuard guard(inst);
  if (!guard.owns())
    return KILN_ERROR_BUSY;
  const char *brief = nullptr;
  std::string detail;
  kiln_status st;
  try {
    inst->error.clear();
    inst->errorFallback = nullptr;
    return call();
  } catch (...) {
    st = statusOf(std::current_exception(), brief, detail);
  }
  setMessage(inst->error, inst->errorFallback, "", brief, detail);
  return st;
}

} // namespace

extern "C" {

kiln_status kiln_instance_create(const kiln_model_desc *model, const kiln_options *options,
                                 kiln_instance **out) {
  const char *brief = nullptr;
  std::string detail;
  kiln_status st;
  try {
    lastError.clear();
    lastErrorFallback = nullptr;
    if (!model || !out) {
      lastError = "kiln_instance_create: null model or output pointer";
      return KILN_ERROR_INVALID_ARGUMENT;
    }
    *out = nullptr;
    return createInstance(model, options, out);
  } catch (...) {
    st = statusOf(std::current_exception(), brief, detail);
  }
  setMessage(lastError, lastErrorFallback, "kiln_instance_create: ", brief, detail);
  return st;
}

kiln_status kiln_instance_run(kiln_instance *inst, const kiln_tensor *inputs,
                              size_t numInputs, const kiln_tensor *outputs,
                              size_t numOutputs) {
  return guardedCall(inst, [&] {
    return runInstance(inst, inputs, numInputs, outputs, numOutputs, false);
  });
}

kiln_status kiln_instance_run_states(kiln_instance *inst, const kiln_tensor *inputs,
                                     size_t numInputs, const kiln_tensor *outputs,
                                     size_t numOutputs) {
  return guardedCall(inst, [&] {
    return runInstance(inst, inputs, numInputs, outputs, numOutputs, true);
  });
}

kiln_status kiln_instance_output_shape(kiln_instance *inst, const kiln_tensor *inputs,
                                       size_t numInputs, uint32_t index, int64_t *shape) {
  return guardedCall(inst, [&] { return outputShape(inst, inputs, numInputs, index, shape); });
}

kiln_status kiln_instance_last_output_shape(kiln_instance *inst, uint32_t index,
                                            int64_t *shape) {
  return guardedCall(inst, [&] { return lastOutputShape(inst, index, shape); });
}

void kiln_instance_destroy(kiln_instance *inst) {
  if (!inst)
    return;
  // (nothing here allocates; joining the pool's workers cannot fail for
  // threads this instance started)
  for (void *p : inst->stageIn)
    std::free(p);
  for (void *p : inst->stageOut)
    std::free(p);
  inst->device.reset(); // before the pool its emulated launches use
  delete inst->pool;
  std::free(inst->arena);
  delete inst;
}

const char *kiln_instance_error(const kiln_instance *inst) {
  if (!inst)
    return "null instance";
  return inst->errorFallback ? inst->errorFallback : inst->error.c_str();
}

const char *kiln_last_error(void) {
  return lastErrorFallback ? lastErrorFallback : lastError.c_str();
}

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
