//===- kiln-run.cpp - loads a compiled model (.so), runs, compares, times --===//
//
//   kiln-run model.so --input x=in.npy [--output-dir DIR]
//            [--compare y=ref.npy --rtol R --atol A] [--tolerance y=RTOL,ATOL]
//            [--bench N] [--threads T]
//   kiln-run decoder.so --generate N [--prompt 1,2,3 | --prompt-length L]
//            [--temperature F --top-k K --top-p F --seed S --eos T] [--bench R]
//
// The .so is self-contained (model + runtime); kiln-run finds the model's
// descriptor and the runtime's entry points in it with dlsym.
//
//===----------------------------------------------------------------------===//
#include "Generate.h"
#include "kiln/runtime.h"
#include "support/TensorFile.h"

#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <sys/stat.h>
#include <vector>

using kiln::support::HostArray;

namespace {
struct Api {
  const kiln_model_desc *model = nullptr;
  decltype(&kiln_instance_create) create = nullptr;
  decltype(&kiln_instance_run) run = nullptr;
  decltype(&kiln_instance_destroy) destroy = nullptr;
  decltype(&kiln_instance_error) error = nullptr;
  decltype(&kiln_last_error) lastError = nullptr;
  decltype(&kiln_instance_profile) profile = nullptr;
  decltype(&kiln_instance_device) device = nullptr;
  decltype(&kiln_instance_output_shape) outputShape = nullptr;
  decltype(&kiln_instance_last_output_shape) lastOutputShape = nullptr;
};

int usage() {
  std::fprintf(stderr,
               "usage: kiln-run MODEL.so --input NAME=FILE(.npy|.pb) ... [--output-dir DIR]\n"
               "       [--compare NAME=REF --rtol R --atol A] [--tolerance NAME=RTOL,ATOL]\n"
               "       [--bench N] [--threads T] [--profile]\n"
               "       [--cuda-graphs] [--cuda-device N]\n"
               "       kiln-run DECODER.so --generate N [--prompt 1,2,3 | --prompt-length L]\n"
               "       [--temperature F] [--top-k K] [--top-p F] [--seed S] [--eos TOKEN]\n"
               "       [--bench R] [--threads T]   (a decoder with a KV cache: kiln/generate.h)\n"
               "       kiln-run MODEL.so --info   (what the artifact holds: tensors, device, images)\n");
  return 2;
}

int fail(const std::string &msg) {
  std::fprintf(stderr, "kiln-run: error: %s\n", msg.c_str());
  return 1;
}

bool splitPair(const std::string &s, std::string &k, std::string &v) {
  size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    return false;
  k = s.substr(0, eq);
  v = s.substr(eq + 1);
  return true;
}

std::string shapeStr(const std::vector<int64_t> &s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? "x" : "") + std::to_string(s[i]);
  return r.empty() ? "scalar" : r;
}
} // namespace

int main(int argc, char **argv) {
  if (argc < 2)
    return usage();
  std::string modelPath = argv[1];
  std::vector<std::pair<std::string, std::string>> inputs, compares;
  std::string outDir;
  double rtol = 1e-4, atol = 1e-5;
  // Per output: tolerances that replace --rtol/--atol for its --compare (a
  // model that holds several tests, each with its own).
  std::map<std::string, std::pair<double, double>> tolerances;
  int bench = 0, threads = 0, cudaDevice = 0;
  bool profile = false, cudaGraphs = false, info = false, generating = false;
  kiln::run::GenerateArgs gen;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&](std::string &dst) {
      if (i + 1 >= argc) return false;
      dst = argv[++i];
      return true;
    };
    std::string v, k, f;
    if (a == "--input" || a == "--compare") {
      if (!next(v) || !splitPair(v, k, f))
        return fail(a + " expects NAME=FILE");
      auto &list = a == "--input" ? inputs : compares;
      for (auto &[name, file] : list)
        if (name == k)
          return fail(a + " names '" + k + "' twice ('" + file + "' and '" + f + "')");
      list.push_back({k, f});
    } else if (a == "--profile") {
      profile = true;
    } else if (a == "--cuda-graphs") {
      cudaGraphs = true;
    } else if (a == "--info") {
      info = true;
    } else if (a == "--output-dir") {
      if (!next(outDir)) return usage();
    } else if (a == "--tolerance") {
      char *end;
      size_t comma;
      double r = 0, t = 0;
      bool ok = next(v) && splitPair(v, k, f) && (comma = f.find(',')) != std::string::npos;
      if (ok) {
        r = std::strtod(f.substr(0, comma).c_str(), &end);
        ok = !*end && comma > 0 && r >= 0;
      }
      if (ok) {
        t = std::strtod(f.substr(comma + 1).c_str(), &end);
        ok = !*end && comma + 1 < f.size() && t >= 0;
      }
      if (!ok)
        return fail("--tolerance expects NAME=RTOL,ATOL with non-negative numbers");
      tolerances[k] = {r, t};
    } else if (a == "--rtol" || a == "--atol") {
      if (!next(v)) return usage();
      char *end;
      double d = std::strtod(v.c_str(), &end);
      if (*end || d < 0) return fail(a + " expects a non-negative number");
      (a == "--rtol" ? rtol : atol) = d;
    } else if (a == "--generate" || a == "--prompt-length" || a == "--top-k" || a == "--seed" ||
               a == "--eos") {
      if (!next(v)) return usage();
      char *end;
      errno = 0;
      long long n = std::strtoll(v.c_str(), &end, 10);
      long long lo = a == "--eos" ? -1 : a == "--generate" || a == "--prompt-length" ? 1 : 0;
      long long hi = a == "--seed" || a == "--eos" ? INT64_MAX : INT32_MAX;
      if (v.empty() || *end || n < lo || n > hi || errno == ERANGE)
        return fail(a + " expects an integer from " + std::to_string(lo) + ", got '" + v + "'");
      if (a == "--generate") {
        gen.options.max_new_tokens = static_cast<int32_t>(n);
        generating = true;
      } else if (a == "--prompt-length") {
        gen.promptLength = n;
      } else if (a == "--top-k") {
        gen.options.top_k = static_cast<int32_t>(n);
      } else if (a == "--seed") {
        gen.options.seed = static_cast<uint64_t>(n);
      } else {
        gen.options.eos_token = n;
      }
    } else if (a == "--temperature" || a == "--top-p") {
      if (!next(v)) return usage();
      char *end;
      double d = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(d >= 0) || d > 1e6)
        return fail(a + " expects a non-negative number, got '" + v + "'");
      (a == "--temperature" ? gen.options.temperature : gen.options.top_p) = static_cast<float>(d);
    } else if (a == "--prompt") {
      if (!next(v)) return usage();
      gen.prompt.clear();
      for (size_t p = 0; p <= v.size();) {
        size_t comma = std::min(v.find(',', p), v.size());
        std::string item = v.substr(p, comma - p);
        char *end;
        errno = 0;
        long long t = std::strtoll(item.c_str(), &end, 10);
        if (item.empty() || *end || errno == ERANGE)
          return fail("--prompt expects comma-separated token ids, got '" + v + "'");
        gen.prompt.push_back(t);
        p = comma + 1;
      }
    } else if (a == "--bench" || a == "--threads" || a == "--cuda-device") {
      if (!next(v)) return usage();
      char *end;
      errno = 0;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < 0 || n > INT32_MAX || errno == ERANGE)
        return fail(a + " expects an integer from 0 to 2147483647, got '" + v + "'");
      (a == "--bench" ? bench : a == "--threads" ? threads : cudaDevice) = static_cast<int>(n);
    } else {
      return fail("unknown argument '" + a + "'");
    }
  }

  std::string soPath = modelPath.find('/') == std::string::npos ? "./" + modelPath : modelPath;
  void *lib = dlopen(soPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    return fail("cannot load '" + modelPath + "': " + dlerror());
  Api api;
  const kiln_model_desc *const *modelPtr = reinterpret_cast<const kiln_model_desc *const *>(dlsym(lib, "kiln_model"));
  api.create = reinterpret_cast<decltype(api.create)>(dlsym(lib, "kiln_instance_create"));
  api.run = reinterpret_cast<decltype(api.run)>(dlsym(lib, "kiln_instance_run"));
  api.destroy = reinterpret_cast<decltype(api.destroy)>(dlsym(lib, "kiln_instance_destroy"));
  api.error = reinterpret_cast<decltype(api.error)>(dlsym(lib, "kiln_instance_error"));
  api.lastError = reinterpret_cast<decltype(api.lastError)>(dlsym(lib, "kiln_last_error"));
  api.profile = reinterpret_cast<decltype(api.profile)>(dlsym(lib, "kiln_instance_profile"));
  api.device = reinterpret_cast<decltype(api.device)>(dlsym(lib, "kiln_instance_device"));
  api.outputShape =
      reinterpret_cast<decltype(api.outputShape)>(dlsym(lib, "kiln_instance_output_shape"));
  api.lastOutputShape = reinterpret_cast<decltype(api.lastOutputShape)>(
      dlsym(lib, "kiln_instance_last_output_shape"));
  if (!modelPtr || !api.create || !api.run || !api.destroy || !api.error || !api.lastError ||
      !api.profile || !api.device || !api.outputShape || !api.lastOutputShape)
    return fail("'" + modelPath + "' is not a model compiled by kiln-compile (missing symbols)");
  api.model = *modelPtr;
  const kiln_model_desc *m = api.model;
  if (m->abi_version != KILN_ABI_VERSION)
    return fail("'" + modelPath + "' was built for runtime ABI " + std::to_string(m->abi_version) +
                "; this kiln-run reads ABI " + std::to_string(KILN_ABI_VERSION) + " (recompile it)");
  if (info) {
    static const char *kinds[] = {"cpu", "cuda", "cuda-emu"};
    std::printf("model %s: %s, %u kernels, arena %llu bytes, weights %llu bytes\n", m->name,
                m->device_kind >= 0 && m->device_kind <= 2 ? kinds[m->device_kind] : "unknown",
                m->num_kernels, (unsigned long long)m->arena_bytes,
                (unsigned long long)m->weights_bytes);
    for (uint32_t j = 0; j < m->num_inputs + m->num_outputs; ++j) {
      const kiln_tensor_desc &t = j < m->num_inputs ? m->inputs[j] : m->outputs[j - m->num_inputs];
      std::string shape;
      for (int32_t k = 0; k < t.rank; ++k)
        shape += (k ? "x" : "") + (t.symbols && t.symbols[k] >= 0
                                       ? std::string(m->symbol_names[t.symbols[k]]) + "<=" +
                                             std::to_string(t.shape[k])
                                       : std::to_string(t.shape[k]));
      // Below the bounds a symbolic tensor is staged at them, unless its
      // kernels use the caller's layout (compact).
      bool isIn = j < m->num_inputs;
      const uint8_t *compact = isIn ? m->input_compact : m->output_compact;
      bool staged = t.symbols && !(compact && compact[isIn ? j : j - m->num_inputs]);
      // A KV cache appended in place (kiln_model_desc.states).
      std::string state;
      for (uint32_t k = 0; k < m->num_states; ++k) {
        uint32_t i = static_cast<uint32_t>(m->states[3 * k]);
        uint32_t o = static_cast<uint32_t>(m->states[3 * k + 1]);
        if (isIn && i == j)
          state = std::string(" (the past of '") + m->outputs[o].name + "': not read)";
        if (!isIn && o == j - m->num_inputs)
          state = std::string(" (appended in place to '") + m->inputs[i].name + "' along axis " +
                  std::to_string(m->states[3 * k + 2]) + ")";
      }
      std::printf("  %s %s: %s %s%s\n", isIn ? "input" : "output", t.name,
                  kiln::support::dtypeName(t.dtype), shape.empty() ? "scalar" : shape.c_str(),
                  !state.empty() ? state.c_str()
                  : !t.symbols   ? ""
                  : staged       ? " (staged at the bounds)"
                                 : " (in the caller's layout)");
    }
    if (const kiln_device_program *d = m->device) {
      for (uint32_t j = 0; j < d->num_images; ++j)
        std::printf("  image %s_%u (%s, %llu bytes)\n", d->images[j].is_ptx ? "compute" : "sm",
                    d->images[j].arch, d->images[j].is_ptx ? "PTX" : "CUBIN",
                    (unsigned long long)d->images[j].bytes);
      for (uint32_t j = 0; j < d->num_launches; ++j) {
        const kiln_device_launch &l = d->launches[j];
        std::printf("  launch %s<<<(%u,%u,%u), (%u,%u,%u), %u>>> %u buffers\n", l.kernel,
                    l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2],
                    l.shared_bytes, l.num_args);
      }
    }
    return 0;
  }

  if (generating) {
    if (!inputs.empty() || !compares.empty() || !outDir.empty() || profile)
      return fail("--generate feeds the decoder itself: no --input, --compare, --output-dir or "
                  "--profile");
    kiln_options opts{threads, 0, cudaGraphs ? 1 : 0, cudaDevice};
    kiln_instance *inst = nullptr;
    if (api.create(m, &opts, &inst) != KILN_OK)
      return fail(std::string("cannot create the model instance: ") + api.lastError());
    gen.bench = bench;
    int rc = kiln::run::generate(lib, inst, gen);
    api.destroy(inst);
    return rc;
  }

  // Inputs, by name.
  std::vector<HostArray> in(m->num_inputs);
  std::vector<bool> given(m->num_inputs, false);
  for (auto &[name, file] : inputs) {
    uint32_t idx = m->num_inputs;
    for (uint32_t j = 0; j < m->num_inputs; ++j)
      if (name == m->inputs[j].name) idx = j;
    if (idx == m->num_inputs) {
      std::string names;
      for (uint32_t j = 0; j < m->num_inputs; ++j)
        names += std::string(j ? ", " : "") + m->inputs[j].name;
      return fail("the model has no input '" + name + "' (inputs: " + names + ")");
    }
    std::string err;
    if (!kiln::support::readTensorFile(file, in[idx], err))
      return fail(err);
    // numpy has no bfloat16: a float32 array feeds a bf16 input rounded, a
    // uint16 one (the ONNX test data's spelling) as bit patterns.
    if (m->inputs[idx].dtype == KILN_BF16 && in[idx].dtype == KILN_F32)
      kiln::support::toBf16(in[idx]);
    if (m->inputs[idx].dtype == KILN_BF16 && in[idx].dtype == KILN_U16)
      in[idx].dtype = KILN_BF16;
    // Nor float8/float4/int4/int2: a numeric .npy feeds such an input
    // rounded (nearest even, saturated) or wrapped, packed.
    if (kiln_dtype_carrier(m->inputs[idx].dtype) != m->inputs[idx].dtype &&
        in[idx].dtype != m->inputs[idx].dtype)
      kiln::support::toNarrow(in[idx], m->inputs[idx].dtype);
    given[idx] = true;
  }
  for (uint32_t j = 0; j < m->num_inputs; ++j)
    if (!given[j])
      return fail(std::string("missing --input for '") + m->inputs[j].name + "' (" +
                  kiln::support::dtypeName(m->inputs[j].dtype) + " " +
                  shapeStr(std::vector<int64_t>(m->inputs[j].shape,
                                                m->inputs[j].shape + m->inputs[j].rank)) + ")");

  std::vector<HostArray> out(m->num_outputs);
  std::vector<kiln_tensor> inT(m->num_inputs), outT(m->num_outputs);
  for (uint32_t j = 0; j < m->num_inputs; ++j)
    inT[j] = {in[j].data.data(), in[j].dtype, static_cast<int32_t>(in[j].shape.size()),
              in[j].shape.data()};
  kiln_options opts{threads, profile ? 1 : 0, cudaGraphs ? 1 : 0, cudaDevice};
  kiln_instance *inst = nullptr;
  if (api.create(m, &opts, &inst) != KILN_OK)
    return fail(std::string("cannot create the model instance: ") + api.lastError());
  for (uint32_t j = 0; j < m->num_outputs; ++j) {
    const kiln_tensor_desc &d = m->outputs[j];
    out[j].dtype = d.dtype;
    out[j].shape.assign(d.shape, d.shape + d.rank);
    // Symbolic dimensions take the inputs' sizes.
    if (api.outputShape(inst, inT.data(), inT.size(), j, out[j].shape.data()) != KILN_OK) {
      fail(std::string("run failed: ") + api.error(inst));
      api.destroy(inst);
      return 1;
    }
    out[j].data.assign(out[j].bytes(), 0);
    outT[j] = {out[j].data.data(), d.dtype, d.rank, out[j].shape.data()};
  }
  auto runOnce = [&]() -> bool {
    if (api.run(inst, inT.data(), inT.size(), outT.data(), outT.size()) != KILN_OK) {
      fail(std::string("run failed: ") + api.error(inst));
      return false;
    }
    return true;
  };
  if (!runOnce()) {
    api.destroy(inst);
    return 1;
  }
  // The outputs as the run shaped them: a data-dependent axis was given at
  // its bound and holds its real elements first (`out` stays bound-sized
  // for the timed runs).
  std::vector<HostArray> result(out.begin(), out.end());
  for (uint32_t j = 0; j < m->num_outputs; ++j) {
    if (api.lastOutputShape(inst, j, result[j].shape.data()) != KILN_OK) {
      fail(std::string("run failed: ") + api.error(inst));
      api.destroy(inst);
      return 1;
    }
    result[j].data.resize(result[j].bytes());
  }

  int status = 0;
  if (!outDir.empty()) {
    mkdir(outDir.c_str(), 0755);
    for (uint32_t j = 0; j < m->num_outputs; ++j) {
      std::string err, name = m->outputs[j].name;
      for (char &c : name)
        if (c == '/' || c == '\\') c = '_';
      if (!kiln::support::writeNpy(outDir + "/" + name + ".npy", result[j], err))
        status = fail(err);
    }
  }

  for (auto &[name, file] : compares) {
    uint32_t idx = m->num_outputs;
    for (uint32_t j = 0; j < m->num_outputs; ++j)
      if (name == m->outputs[j].name) idx = j;
    if (idx == m->num_outputs) {
      status = fail("the model has no output '" + name + "'");
      continue;
    }
    HostArray ref;
    std::string err;
    if (!kiln::support::readTensorFile(file, ref, err)) {
      status = fail(err);
      continue;
    }
    if (result[idx].dtype == KILN_BF16 && ref.dtype == KILN_U16)
      ref.dtype = KILN_BF16; // bit patterns, as the ONNX test data stores bf16
    if (ref.shape != result[idx].shape) {
      status = fail("output '" + name + "' has shape " + shapeStr(result[idx].shape) +
                    "; the reference has " + shapeStr(ref.shape));
      continue;
    }
    auto [rt, at] = tolerances.count(name) ? tolerances[name] : std::pair{rtol, atol};
    double maxAbs = 0, maxRel = 0;
    int64_t bad = 0, firstBad = -1;
    for (int64_t e = 0; e < ref.numElements(); ++e) {
      double got = result[idx].at(e), want = ref.at(e);
      double diff = std::fabs(got - want);
      if (std::isnan(got) != std::isnan(want)) diff = INFINITY;
      else if (std::isnan(got) || got == want) diff = 0;
      maxAbs = std::max(maxAbs, diff);
      if (want != 0) maxRel = std::max(maxRel, diff / std::fabs(want));
      if (diff > at + rt * std::fabs(want)) {
        if (firstBad < 0) firstBad = e;
        ++bad;
      }
    }
    std::printf("compare %s: %s  max_abs_err=%.3g max_rel_err=%.3g (rtol=%g atol=%g)",
                name.c_str(), bad ? "MISMATCH" : "ok", maxAbs, maxRel, rt, at);
    if (bad)
      std::printf("  %lld of %lld elements differ; first at %lld: got %.8g, want %.8g",
                  static_cast<long long>(bad), static_cast<long long>(ref.numElements()),
                  static_cast<long long>(firstBad), result[idx].at(firstBad), ref.at(firstBad));
    std::printf("\n");
    if (bad) status = 1;
  }

  if (bench > 0) {
    for (int w = 0; w < 3; ++w)
      runOnce();
    std::vector<double> ms;
    for (int r = 0; r < bench; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      if (!runOnce()) { status = 1; break; }
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    if (!ms.empty()) {
      std::sort(ms.begin(), ms.end());
      std::printf("latency over %d runs: median %.4f ms, min %.4f ms (%s)\n", bench,
                  ms[ms.size() / 2], ms.front(), api.device(inst));
    }
  }
  if (profile) {
    // Per-kernel times: the median over the timed runs (or the one run).
    int runs = std::max(bench, 1);
    std::vector<std::vector<double>> perKernel(m->num_kernels);
    for (int r = 0; r < runs && status == 0; ++r) {
      if (!runOnce()) { status = 1; break; }
      const double *ms;
      size_t n;
      api.profile(inst, &ms, &n);
      for (size_t k = 0; k < n && k < perKernel.size(); ++k)
        perKernel[k].push_back(ms[k]);
    }
    std::vector<std::pair<double, uint32_t>> rows;
    double total = 0;
    for (uint32_t k = 0; k < m->num_kernels; ++k) {
      auto &v = perKernel[k];
      if (v.empty()) continue;
      std::sort(v.begin(), v.end());
      rows.push_back({v[v.size() / 2], k});
      total += v[v.size() / 2];
    }
    std::sort(rows.rbegin(), rows.rend());
    std::printf("profile (median of %d runs, %u kernels, %.4f ms in kernels):\n", runs,
                m->num_kernels, total);
    std::printf("  %10s %6s %8s  %s\n", "ms", "%", "GFLOP/s", "kernel");
    for (auto &[ms, k] : rows) {
      double gflops = m->kernel_flops && ms > 0 ? m->kernel_flops[k] / (ms * 1e6) : 0.0;
      std::printf("  %10.4f %5.1f%% %8.1f  %s\n", ms, total > 0 ? 100 * ms / total : 0.0, gflops,
                  m->kernel_names[k]);
    }
  }
  api.destroy(inst);
  return status;
}
