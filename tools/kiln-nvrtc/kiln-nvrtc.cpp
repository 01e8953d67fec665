//===- kiln-nvrtc.cpp - compile a CUDA C++ file with NVRTC, report ptxas ---===//
//
//   kiln-nvrtc FILE.cu [--arch=sm_80,sm_90,compute_80] [-I DIR] [--no-spills]
//
// Prints, per architecture, the CUBIN or PTX size and each kernel's
// registers, spills, stack and shared memory; on an error, NVRTC's log
// (file:line: error ...) and exit status 1; with --no-spills, a kernel that
// spills is an error too. Kiln's tests use it to prove every emitted kernel
// compiles for real GPUs on a machine without one.
//
//===----------------------------------------------------------------------===//
#include "codegen/cuda/Nvrtc.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;

static cl::opt<std::string> input(cl::Positional, cl::desc("<file.cu>"), cl::Required);
static cl::opt<std::string> archs("arch", cl::desc("comma-separated sm_XY (CUBIN) / compute_XY (PTX)"),
                                  cl::init("sm_80,sm_90"));
static cl::list<std::string> includes("I", cl::desc("include directory"), cl::Prefix);
static cl::opt<bool> noSpills("no-spills", cl::desc("fail when a kernel spills registers"));

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "compile CUDA C++ with NVRTC (no GPU needed)\n");
  auto buf = llvm::MemoryBuffer::getFile(input);
  if (!buf) {
    llvm::errs() << "kiln-nvrtc: error: cannot read " << input << ": "
                 << buf.getError().message() << "\n";
    return 1;
  }
  llvm::SmallVector<llvm::StringRef> list;
  llvm::StringRef(archs).split(list, ',', -1, false);
  std::vector<std::string> dirs(includes.begin(), includes.end());
  int status = 0;
  for (llvm::StringRef arch : list) {
    auto r = kiln::cuda::compile((*buf)->getBuffer().str(), input, arch.str(), dirs);
    if (!r.ok) {
      llvm::errs() << "kiln-nvrtc: error: " << arch << ": NVRTC failed:\n" << r.log << "\n";
      status = 1;
      continue;
    }
    llvm::outs() << arch << ": ok, " << r.binary.size() << " bytes of "
                 << (arch.starts_with("sm_") ? "CUBIN" : "PTX") << "\n";
    for (const auto &k : r.kernels) {
      llvm::outs() << "  " << k.name << ": " << k.registers << " registers, "
                   << k.spillStores << " bytes spill stores, " << k.spillLoads
                   << " bytes spill loads, " << k.stackBytes << " bytes stack, "
                   << k.sharedBytes << " bytes shared\n";
      if (noSpills && (k.spillStores || k.spillLoads)) {
        llvm::errs() << "kiln-nvrtc: error: " << arch << ": kernel " << k.name
                     << " spills registers\n";
        status = 1;
      }
    }
  }
  return status;
}
