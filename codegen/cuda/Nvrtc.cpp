//===- Nvrtc.cpp - CUDA C++ -> CUBIN/PTX with NVRTC ------------------------===//
#include "codegen/cuda/Nvrtc.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <nvrtc.h>

#include <cstdlib>
#include <regex>
#include <sstream>
#include <thread>

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
  std::regex props(R"(Function properties for (\S+))");
  std::smatch m;
  // "Function properties for F" heads the frame line that follows; device
  // functions (not inlined) have their own, which must not overwrite the
  // kernel's.
  std::string propsOf;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, entry)) {
      out.push_back({});
      out.back().name = m[1];
      continue;
    }
    if (std::regex_search(line, m, props)) {
      propsOf = m[1];
      continue;
    }
    if (out.empty())
      continue;
    if (std::regex_search(line, m, frame) && propsOf == out.back().name) {
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

std::string cacheDir() {
  llvm::SmallString<256> dir;
  if (const char *env = std::getenv("KILN_CACHE_DIR"); env && *env)
    dir = env;
  else if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    llvm::sys::path::append(dir, xdg, "kiln");
  else if (const char *home = std::getenv("HOME"); home && *home)
    llvm::sys::path::append(dir, home, ".cache", "kiln");
  else
    return "";
  llvm::sys::path::append(dir, "cuda");
  if (llvm::sys::fs::create_directories(dir))
    return "";
  return dir.str().str();
}

namespace {
bool readAll(const std::string &path, std::string &out) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buf)
    return false;
  out = (*buf)->getBuffer().str();
  return true;
}
/// Writes through a temporary and a rename: concurrent compilers never see
/// half a file.
void writeAtomically(const std::string &path, llvm::StringRef data) {
  llvm::SmallString<256> tmp;
  int fd;
  if (llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%", fd, tmp))
    return;
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << data;
    if (os.has_error()) {
      os.clear_error();
      llvm::sys::fs::remove(tmp);
      return;
    }
  }
  if (llvm::sys::fs::rename(tmp, path))
    llvm::sys::fs::remove(tmp);
}
} // namespace

CompileResult compileCached(const std::string &source, const std::string &name,
                            const std::string &arch, bool *hit) {
  if (hit)
    *hit = false;
  std::string dir = cacheDir();
  if (dir.empty())
    return compile(source, name, arch);
  std::string keyText = "kiln-nvrtc-1\n" + version() + "\n" + arch + "\n" + source;
  uint64_t key = llvm::xxh3_64bits(llvm::StringRef(keyText));
  std::string base;
  llvm::raw_string_ostream(base) << dir << "/" << llvm::format_hex_no_prefix(key, 16) << "-"
                                 << arch;
  std::string bin, log;
  if (readAll(base + ".bin", bin) && readAll(base + ".log", log) && !bin.empty()) {
    CompileResult r;
    r.ok = true;
    r.log = log;
    r.binary.assign(bin.begin(), bin.end());
    if (arch.rfind("sm_", 0) == 0)
      r.kernels = parseResources(log);
    if (hit)
      *hit = true;
    return r;
  }
  CompileResult r = compile(source, name, arch);
  if (r.ok) {
    writeAtomically(base + ".log", r.log);
    writeAtomically(base + ".bin", llvm::StringRef(r.binary.data(), r.binary.size()));
  }
  return r;
}

std::vector<CompileResult> compileAll(const std::string &source, const std::string &name,
                                      const std::vector<std::string> &archs, int *hits) {
  std::vector<CompileResult> out(archs.size());
  std::vector<char> hit(archs.size(), 0);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < archs.size(); ++i)
    threads.emplace_back([&, i] {
      bool h = false;
      out[i] = compileCached(source, name, archs[i], &h);
      hit[i] = h;
    });
  for (std::thread &t : threads)
    t.join();
  if (hits) {
    *hits = 0;
    for (char h : hit)
      *hits += h;
  }
  return out;
}

std::string version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

} // namespace kiln::cuda
