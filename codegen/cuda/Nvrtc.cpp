//===- Nvrtc.cpp - CUDA C++ -> CUBIN/PTX with NVRTC ------------------------===//
#include "codegen/cuda/Nvrtc.h"

#include <nvrtc.h>

#include <regex>
#include <sstream>

namespace kiln::cuda {

namespace {
/// "ptxas info    : Compiling entry function 'f' for 'sm_80'" starts a
/// kernel; "Used N registers", "N bytes stack frame, N bytes spill stores,
/// N bytes spill loads" and "N bytes smem" describe it.
std::vector<KernelResources> parseResources(const std::string &log) {
  std::vector<KernelResources> out;
  std::istringstream in(log);
  std::string line;
  std::regex entry(R"(Compiling entry function '([^']+)')");
  std::regex regs(R"(Used (\d+) registers)");
  std::regex smem(R"((\d+) bytes smem)");
  std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, entry)) {
      out.push_back({});
      out.back().name = m[1];
      continue;
    }
    if (out.empty())
      continue;
    if (std::regex_search(line, m, frame)) {
      out.back().stackBytes = std::stoi(m[1]);
      out.back().spillStores = std::stoi(m[2]);
      out.back().spillLoads = std::stoi(m[3]);
    }
    if (std::regex_search(line, m, regs))
      out.back().registers = std::stoi(m[1]);
    if (std::regex_search(line, m, smem))
      out.back().sharedBytes = std::stoi(m[1]);
  }
  return out;
}
} // namespace

CompileResult compile(const std::string &source, const std::string &name,
                      const std::string &arch, const std::vector<std::string> &includeDirs) {
  CompileResult r;
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr) !=
      NVRTC_SUCCESS) {
    r.log = "nvrtcCreateProgram failed";
    return r;
  }
  bool real = arch.rfind("sm_", 0) == 0;
  std::vector<std::string> opts = {"--gpu-architecture=" + arch, "--std=c++17",
                                   "-default-device", "-I" KILN_CUDA_INCLUDE_DIR};
  if (real)
    opts.push_back("--ptxas-options=-v");
  for (const std::string &d : includeDirs)
    opts.push_back("-I" + d);
  std::vector<const char *> argv;
  for (const std::string &o : opts)
    argv.push_back(o.c_str());
  nvrtcResult res = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t logSize = 0;
  nvrtcGetProgramLogSize(prog, &logSize);
  r.log.resize(logSize);
  if (logSize)
    nvrtcGetProgramLog(prog, r.log.data());
  while (!r.log.empty() && (r.log.back() == '\0' || r.log.back() == '\n'))
    r.log.pop_back();
  if (res == NVRTC_SUCCESS) {
    size_t size = 0;
    if (real) {
      nvrtcGetCUBINSize(prog, &size);
      r.binary.resize(size);
      nvrtcGetCUBIN(prog, r.binary.data());
      r.kernels = parseResources(r.log);
    } else {
      nvrtcGetPTXSize(prog, &size);
      r.binary.resize(size);
      nvrtcGetPTX(prog, r.binary.data());
    }
    r.ok = true;
  } else if (r.log.empty()) {
    r.log = nvrtcGetErrorString(res);
  }
  nvrtcDestroyProgram(&prog);
  return r;
}

std::string version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

} // namespace kiln::cuda
