//===- kiln-compile.cpp - model file -> object file / shared library -------===//
//
//   kiln-compile MODEL.onnx -o OUT.so      shared library (dlopen, kiln-run)
//   kiln-compile MODEL.onnx -o OUT.o       object file + OUT.h
//   kiln-compile MODEL --emit=mlir|mlir-import|kernels|llvm [-o FILE]
//
// MODEL may also be a .mlir file of kiln ops (used by the lit tests).
//
//===----------------------------------------------------------------------===//
#include "Autotune.h"
#include "Calibrate.h"
#include "codegen/program/Program.h"
#include "codegen/program/PlanMemory.h"
#include "codegen/cpu/EmitObject.h"
#include "codegen/cuda/EmitCuda.h"
#include "codegen/cuda/Nvrtc.h"
#include "frontends/onnx/Importer.h"
#include "frontends/torch/TorchImporter.h"
#include "driver/Artifact.h"
#include "driver/Report.h"
#include "dialects/kiln/KilnDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"
#include <cctype>
#include <cstdlib>
#include <map>
#include <set>
#include <thread>

using namespace mlir;
namespace cl = llvm::cl;

/// kiln-compile's own options: --help lists these, not every LLVM flag.
static cl::OptionCategory kilnCategory("kiln-compile options");

static cl::opt<std::string> inputPath(cl::Positional, cl::cat(kilnCategory), cl::desc("<model.onnx|model.pt2|model.mlir>"));
static cl::opt<bool> listTorchOps("list-torch-ops", cl::cat(kilnCategory),
    cl::desc("print the ATen targets the PyTorch frontend converts, one per line, and exit"));
static cl::opt<std::string> outputPath("o", cl::cat(kilnCategory), cl::desc("output: OUT.so, OUT.o (+ OUT.h), or a text file with --emit"),
                                       cl::value_desc("file"), cl::init("-"));
static cl::opt<std::string> emit("emit",
    cl::cat(kilnCategory), cl::desc("print IR instead of writing an artifact: mlir-import (after "
             "import), mlir (after the graph passes), kernels, memory-plan (the arena: "
             "offsets, lifetimes, kernels in place), llvm, cuda-src (with "
             "--target=cuda or cuda-emu)"),
    cl::init(""));
static cl::list<std::string> shapes("shape",
    cl::cat(kilnCategory), cl::desc("static shape for an input: NAME=1x3x224x224 (repeatable)"));
static cl::list<std::string> maxShapes("max-shape",
    cl::cat(kilnCategory), cl::desc("upper bounds for an input's dynamic dimensions (dim_param or unknown): "
             "NAME=64x3x224x224, static dimensions as in the model (repeatable); "
             "unbounded ones default to 64"));
static cl::list<std::string> bindings("bind",
    cl::cat(kilnCategory), cl::desc("freeze an input to the tensor in a .npy or .pb file: NAME=FILE (repeatable); "
             "shape arguments given as inputs (axes, target shapes) become compile-time values"));
static cl::opt<std::string> mcpu("mcpu", cl::cat(kilnCategory), cl::desc("target CPU (native: this host's features)"),
                                 cl::init("native"));
static cl::opt<std::string> target("target",
    cl::cat(kilnCategory), cl::desc("cpu; cuda (CUDA C++ kernels compiled with NVRTC into CUBIN/PTX images embedded "
             "in the artifact, run through the CUDA driver); cuda-emu (the same CUDA C++ "
             "compiled for and run on this CPU through the emulation header, for tests)"),
    cl::init("cpu"));
static cl::list<std::string> cudaArchs("cuda-arch",
    cl::cat(kilnCategory), cl::desc("CUDA architectures to compile for with NVRTC: sm_XY (a CUBIN) or compute_XY "
             "(PTX the driver JIT-compiles on newer GPUs). Default for --target=cuda: "
             "sm_80,sm_86,sm_89,sm_90,compute_80, or $KILN_CUDA_ARCH when set"),
    cl::CommaSeparated);
static cl::opt<bool> cudaNoSpills("cuda-no-spills",
    cl::cat(kilnCategory), cl::desc("fail when ptxas reports register spills in any CUDA kernel (a warning otherwise)"),
    cl::init(false));
static cl::opt<std::string> modelName("name", cl::cat(kilnCategory), cl::desc("C identifier prefix of the model (default: the output's stem)"),
                                      cl::init(""));
static cl::opt<std::string> reportPath("report",
    cl::cat(kilnCategory), cl::desc("write what the compiler did per kernel: FILE.json or FILE.md"),
    cl::value_desc("file"), cl::init(""));
static cl::list<std::string> printAfter("print-ir-after",
    cl::cat(kilnCategory), cl::desc("print the IR (to stderr) after the graph pass with this flag, "
             "e.g. kiln-fuse, kiln-fold-batchnorm, canonicalize; or 'all'"),
    cl::CommaSeparated);
static cl::opt<unsigned> optLevel("O", cl::cat(kilnCategory), cl::desc("optimization level 0-3"), cl::Prefix,
                                  cl::init(3));
static cl::list<std::string> disablePasses("disable-pass",
    cl::cat(kilnCategory), cl::desc("skip these graph passes (kiln-fold-batchnorm, kiln-recognize-patterns, "
             "kiln-select-layout, kiln-fuse, kiln-rematerialize), kiln-live-rows (dynamic shapes: CPU kernels "
             "compute only a run's rows), kiln-plan-memory (arena reuse and kernels in "
             "place: every intermediate its own bytes) or kiln-winograd (3x3 convolutions in "
             "Winograd's F(2x2, 3x3) form on the CPU), e.g. to measure what each one is worth"),
    cl::CommaSeparated);
static cl::opt<std::string> maxMemory("max-memory",
    cl::cat(kilnCategory), cl::desc("activation arena budget in bytes (suffix K, M or G: KiB, MiB, GiB): "
             "kiln-rematerialize recomputes values inside the kernels that read them, cheapest "
             "extra flops per byte saved first, until the memory plan fits; when nothing fits, "
             "an error gives the smallest arena it can reach"),
    cl::value_desc("bytes"), cl::init(""));
static cl::opt<std::string> precisionOpt("precision",
    cl::cat(kilnCategory), cl::desc("compute precision (kiln-lower-precision): fp32; bf16 or fp16 "
             "(convolutions, gemms and matmuls on bf16/fp16 operands with fp32 accumulation, "
             "like autocast; softmax, normalizations, reductions and the outputs in fp32); "
             "auto (bf16 where the outputs stay within --tolerance of the fp32 build on the "
             "calibration inputs, fp32 elsewhere)"),
    cl::init("fp32"));
static cl::opt<double> tolerance("tolerance",
    cl::cat(kilnCategory), cl::desc("--precision=auto: the largest relative error allowed, "
             "max|y - y_fp32| / max|y_fp32| over every output"),
    cl::init(1e-2));
static cl::list<std::string> calibrateInputs("calibrate",
    cl::cat(kilnCategory), cl::desc("an input for --precision=auto's measurements (or to measure "
             "--precision=bf16|fp16 against fp32 in the report): NAME=FILE (.npy or .pb), "
             "repeatable; float inputs not given are drawn at random (normal, seeded)"));
static cl::opt<int> autoTrials("auto-trials",
    cl::cat(kilnCategory), cl::desc("--precision=auto: at most this many trial builds in the "
             "search (contractions still undecided then stay fp32)"),
    cl::init(24));
static cl::list<int64_t> keepFp32Index("keep-fp32-index", cl::Hidden,
    cl::desc("contractions that stay fp32, by position (--precision=auto's trial builds)"),
    cl::CommaSeparated);
static cl::list<std::string> keepFp32("keep-fp32",
    cl::cat(kilnCategory), cl::desc("with --precision: ops that stay fp32, by ONNX op type (Conv, "
             "MatMul, Gemm), kiln op name or ONNX node name"),
    cl::CommaSeparated);
static cl::opt<std::string> layoutOpt("layout",
    cl::cat(kilnCategory), cl::desc("tensor layout of convolutional regions: auto (cost model), nchw, nhwc"),
    cl::init("auto"));
static cl::opt<std::string> kBlockOpt("k-block",
    cl::cat(kilnCategory), cl::desc("k blocks of the f32 matrix-product ukernel on packed weights "
                                    "(AVX-512, AVX2): auto (l2), l2 (the whole K while a 32-column panel "
                                    "of it fits a quarter of the core's L2, else blocks of equal "
                                    "depth) or 128 (a panel's block in L1)"),
    cl::init("auto"));
static cl::opt<bool> winogradF43("winograd-f43",
    cl::cat(kilnCategory), cl::desc("f32 3x3 stride-1 convs of 400+ output pixels an image in "
             "Winograd's F(4x4, 3x3) form on the CPU: 1.78x fewer multiply-adds than F(2x2, 3x3) "
             "(ResNet-50's 56x56 and 28x28 convs about 35% faster), about 6x its rounding error "
             "(up to 2e-6 of the sum of the terms' magnitudes; may exceed 1e-4 relative where the "
             "terms cancel)"));
static cl::opt<bool> autotuneOpt("autotune",
    cl::cat(kilnCategory), cl::desc("measure choices per op on this machine and keep the fastest "
             "(the f32 ukernel's k blocks, Winograd or direct 3x3 convs): one trial build per "
             "combination, timed with kiln-run; results cached by CPU, threads and kernel code "
             "(--autotune-cache)"));
static cl::opt<std::string> autotuneCache("autotune-cache",
    cl::cat(kilnCategory), cl::desc("--autotune's cache file (default $KILN_CACHE_DIR/autotune.tsv, "
             "$XDG_CACHE_HOME/kiln/autotune.tsv or ~/.cache/kiln/autotune.tsv; none: no cache)"),
    cl::value_desc("file"), cl::init(""));
static cl::opt<int> autotuneThreads("autotune-threads",
    cl::cat(kilnCategory), cl::desc("--autotune: the threads to measure with (default: one per "
             "core, as the runtime's default)"),
    cl::init(0));
static cl::opt<std::string> ioLayout("io-layout",
    cl::cat(kilnCategory), cl::desc("layout of the model's rank-4 inputs and outputs: nchw (ONNX's) or nhwc"),
    cl::init("nchw"));

/// The codegen choices of the command line (--disable-pass, --winograd-f43,
/// --k-block), for the model's Program and every trial build.
static void setCodegenChoices(kiln::codegen::Program &p, int kBlock) {
  p.liveRows = !llvm::is_contained(disablePasses, "kiln-live-rows");
  p.planMemory = !llvm::is_contained(disablePasses, "kiln-plan-memory");
  p.winograd = !llvm::is_contained(disablePasses, "kiln-winograd");
  p.winograd43 = winogradF43;
  p.kBlock = kBlock;
}

static int fail(const llvm::Twine &msg) {
  llvm::errs() << "kiln-compile: error: " << msg << "\n";
  return 1;
}

/// "1048576", "1024K", "1.5M", "2G" -> bytes (powers of 1024); -1 if malformed.
static int64_t parseBytes(llvm::StringRef text) {
  text = text.trim();
  double scale = 1;
  if (!text.empty()) {
    char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
    if (unit == 'K' || unit == 'M' || unit == 'G') {
      scale = unit == 'K' ? 1024.0 : unit == 'M' ? 1048576.0 : 1073741824.0;
      text = text.drop_back();
    }
  }
  double v;
  if (text.empty() || text.getAsDouble(v) || !(v >= 0) || v * scale > 9e18)
    return -1;
  return static_cast<int64_t>(v * scale);
}

static bool parseBindings(kiln::onnx_import::ImportOptions &opts) {
  for (const std::string &s : bindings) {
    auto [name, file] = llvm::StringRef(s).split('=');
    if (name.empty() || file.empty()) {
      fail("--bind expects NAME=FILE (.npy or TensorProto .pb), got '" + s + "'");
      return false;
    }
    opts.bindings[name.str()] = file.str();
  }
  return true;
}

static bool parseShapeList(const cl::list<std::string> &list, const char *flag,
                           std::map<std::string, std::vector<int64_t>> &out) {
  for (const std::string &s : list) {
    auto [name, dims] = llvm::StringRef(s).rsplit('=');
    if (name.empty() || dims.empty()) {
      fail(llvm::Twine(flag) + " expects NAME=D0xD1x..., got '" + s + "'");
      return false;
    }
    std::vector<int64_t> v;
    llvm::SmallVector<llvm::StringRef> parts;
    dims.split(parts, 'x');
    for (llvm::StringRef p : parts) {
      int64_t d;
      if (p.getAsInteger(10, d) || d < 0) {
        fail(llvm::Twine(flag) + " " + s + ": '" + p + "' is not a dimension");
        return false;
      }
      v.push_back(d);
    }
    out[name.str()] = v;
  }
  return true;
}

static bool parseShapes(kiln::onnx_import::ImportOptions &opts) {
  return parseShapeList(shapes, "--shape", opts.inputShapes) &&
         parseShapeList(maxShapes, "--max-shape", opts.maxShapes);
}

/// model.o -> model.h
static std::string headerPath(llvm::StringRef obj) {
  llvm::SmallString<256> h(obj);
  llvm::sys::path::replace_extension(h, ".h");
  return h.str().str();
}

static bool writeFile(llvm::StringRef path, llvm::StringRef data) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    fail("cannot write " + path + ": " + ec.message());
    return false;
  }
  os << data;
  return true;
}

/// kiln-compile's flags for a trial build of the same model (CPU code; a
/// CUDA model's kernels through the emulation), with a precision and the
/// contractions kept fp32 by position.
static std::vector<std::string> trialArgs(llvm::StringRef precision,
                                          const std::set<int64_t> &keep) {
  std::vector<std::string> a{inputPath};
  for (const std::string &s : shapes)
    a.push_back("--shape=" + s);
  for (const std::string &s : maxShapes)
    a.push_back("--max-shape=" + s);
  for (const std::string &s : bindings)
    a.push_back("--bind=" + s);
  for (const std::string &s : disablePasses)
    a.push_back("--disable-pass=" + s);
  if (precision != "fp32") // (the reference keeps everything)
    for (const std::string &s : keepFp32)
      a.push_back("--keep-fp32=" + s);
  if (!maxMemory.empty())
    a.push_back("--max-memory=" + maxMemory);
  a.push_back("--mcpu=" + mcpu);
  // (The graph passes of -O1 and up are the same; LLVM's -O1 compiles in
  // half the time of -O3, with the same arithmetic.)
  a.push_back("-O" + std::to_string(std::min(1u, optLevel.getValue())));
  a.push_back("--layout=" + layoutOpt);
  a.push_back("--k-block=" + kBlockOpt);
  if (winogradF43)
    a.push_back("--winograd-f43");
  a.push_back("--io-layout=" + ioLayout);
  a.push_back(std::string("--target=") + (target == "cpu" ? "cpu" : "cuda-emu"));
  a.push_back("--precision=" + precision.str());
  if (!keep.empty()) {
    std::string list;
    for (int64_t i : keep)
      list += (list.empty() ? "" : ",") + std::to_string(i);
    a.push_back("--keep-fp32-index=" + list);
  }
  return a;
}

/// --precision=auto: chooses which contractions compute in bf16 (the rest
/// fp32) so that every output stays within --tolerance of the fp32 build on
/// the calibration inputs; with bf16/fp16 and --calibrate, measures that
/// build. `module` is after the passes before kiln-lower-precision (its
/// contractions are the ones the pass counts). Returns an exit code.
static int calibratePrecision(const char *argv0, ModuleOp module, std::string &precision,
                              std::vector<int64_t> &keepIndex,
                              kiln::codegen::PrecisionSummary &summary) {
  int64_t contractions = 0;
  module.walk([&](func::FuncOp fn) {
    for (Operation &op : fn.getBody().getOps())
      if (kiln::isLowerableContraction(&op, target != "cpu"))
        ++contractions;
  });
  std::string self = llvm::sys::fs::getMainExecutable(argv0, (void *)&calibratePrecision);
  std::string run = (llvm::sys::path::parent_path(self) + "/kiln-run").str();
  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("kiln-calibrate", dir))
    return fail("--precision: cannot create a temporary directory");
  std::string tmp = dir.str().str(), error;
  auto cleanup = llvm::make_scope_exit([&] { llvm::sys::fs::remove_directories(tmp); });
  std::vector<std::string> runArgs;
  if (!kiln::calibrate::prepareInputs(module, calibrateInputs, tmp, runArgs, summary.inputs, error))
    return fail(inputPath + ": " + error);
  // The fp32 reference and the first configuration (everything lowered
  // that may be) build side by side.
  std::string low = precision == "fp16" ? "fp16" : "bf16";
  std::set<int64_t> keep(keepIndex.begin(), keepIndex.end());
  std::vector<kiln::calibrate::Trial> first{{trialArgs("fp32", {}), "fp32", {}},
                                            {trialArgs(low, keep), "trial0", {}}};
  if (!kiln::calibrate::runTrials(self, run, first, runArgs, tmp, error))
    return fail(inputPath + ": a calibration build: " + error);
  const kiln::calibrate::Outputs &reference = first[0].outputs;
  std::map<std::set<int64_t>, kiln::calibrate::Error> measured{
      {keep, kiln::calibrate::compare(first[1].outputs, reference)}};
  summary.mode = precision;
  summary.tolerance = precision == "auto" ? static_cast<double>(tolerance) : 0.0;
  summary.contractions = contractions;
  summary.trials = 2;
  int trial = 1;
  auto measure = [&](const std::set<int64_t> &k) -> std::optional<kiln::calibrate::Error> {
    if (auto it = measured.find(k); it != measured.end())
      return it->second;
    kiln::calibrate::Outputs got;
    ++summary.trials;
    if (!kiln::calibrate::runTrial(self, run, trialArgs(low, k), runArgs, tmp,
                                   "trial" + std::to_string(trial++), got, error))
      return std::nullopt;
    return measured[k] = kiln::calibrate::compare(got, reference);
  };
  kiln::calibrate::Error chosen;
  if (precision == "auto") {
    auto r = kiln::calibrate::search(contractions, tolerance, autoTrials, measure);
    if (r.failed)
      return fail(inputPath + ": a --precision=auto trial build: " + error);
    keep = r.keep;
    chosen = r.chosen;
    precision = static_cast<int64_t>(keep.size()) == contractions ? "fp32" : "bf16";
  } else {
    std::optional<kiln::calibrate::Error> e = measure(keep);
    if (!e)
      return fail(inputPath + ": the " + precision + " calibration build: " + error);
    chosen = *e;
  }
  keepIndex.assign(keep.begin(), keep.end());
  summary.lowered = contractions - static_cast<int64_t>(keep.size());
  summary.relError = chosen.rel;
  summary.maxAbsError = chosen.maxAbs;
  summary.top1Agree = chosen.top1Agree;
  summary.top1Rows = chosen.top1Rows;
  return 0;
}

/// Builds a lowered `program` into a .so at `path` (LLVM, object, link):
/// kiln-compile's own CPU path, for --autotune's trial builds.
static bool buildSharedObject(kiln::codegen::Program &program, const std::string &path,
                              std::string &error) {
  kiln::codegen::CpuOptions cpu;
  cpu.mcpu = mcpu;
  cpu.optLevel = optLevel;
  cpu.exportGenericEntry = true;
  cpu.device = kiln::codegen::CpuOptions::Device::Cpu;
  llvm::LLVMContext llvmCtx;
  auto llvmModule = kiln::codegen::buildLLVMModule(program, llvmCtx, cpu, error);
  if (!llvmModule)
    return false;
  llvm::SmallVector<char, 0> object;
  if (!kiln::codegen::emitObject(*llvmModule, cpu, object, error))
    return false;
  std::string obj = path + ".o";
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(obj, ec, llvm::sys::fs::OF_None);
    if (ec) {
      error = "cannot write " + obj + ": " + ec.message();
      return false;
    }
    os.write(object.data(), object.size());
  }
  bool ok = kiln::pipeline::linkSharedLibrary(obj, path, error);
  llvm::sys::fs::remove(obj);
  return ok;
}

/// --autotune (Autotune.h): `module` is ready for the final lowering;
/// `tuned` gets the ops whose measured choice is not the default. Returns
/// an exit code.
static int autotune(const char *argv0, ModuleOp module, int kBlock,
                    std::map<int64_t, kiln::codegen::OpTuning> &tuned,
                    kiln::codegen::AutotuneSummary &summary) {
  std::string self = llvm::sys::fs::getMainExecutable(argv0, (void *)&autotune);
  kiln::autotune::Options o;
  o.kilnRun = (llvm::sys::path::parent_path(self) + "/kiln-run").str();
  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("kiln-autotune", dir))
    return fail("--autotune: cannot create a temporary directory");
  o.dir = dir.str().str();
  llvm::scope_exit cleanup([&] { llvm::sys::fs::remove_directories(o.dir); });
  std::string error, what;
  if (!kiln::calibrate::prepareInputs(module, calibrateInputs, o.dir, o.runArgs, what, error,
                                      /*zerosForOthers=*/true))
    return fail(inputPath + ": --autotune: " + error);
  o.cachePath = autotuneCache == "none" ? ""
                : autotuneCache.empty() ? kiln::autotune::defaultCachePath()
                                        : autotuneCache.getValue();
  o.cpuKey = kiln::autotune::cpuKey(mcpu);
  o.threads = autotuneThreads > 0 ? autotuneThreads
                                  : std::max(1u, std::thread::hardware_concurrency());
  o.kBlock = kBlock == 0;
  o.winograd = !llvm::is_contained(disablePasses, "kiln-winograd");
  if (!o.kBlock && !o.winograd) {
    llvm::errs() << "kiln-compile: autotune: nothing to choose (--k-block and "
                    "--disable-pass=kiln-winograd fix both choices)\n";
    return 0;
  }
  auto lower = [&](const kiln::codegen::OpTuning &all, kiln::codegen::Program &out,
                   std::string &err) {
    OwningOpRef<ModuleOp> copy = module.clone();
    out.name = "autotune";
    setCodegenChoices(out, kBlock);
    out.tuneAll = all;
    if (failed(kiln::codegen::lowerToKernels(*copy, out))) {
      err = "lowering a trial build failed";
      return false;
    }
    return true;
  };
  if (!kiln::autotune::tune(o, lower, buildSharedObject, tuned, summary, error))
    return fail(inputPath + ": --autotune: " + error);
  int changed = 0, cached = 0;
  for (const auto &op : summary.ops) {
    changed += op.changed;
    cached += op.cached;
  }
  llvm::errs() << "kiln-compile: autotune: " << summary.ops.size() << " ops to choose for ("
               << cached << " from the cache), " << changed << " changed from the default; "
               << summary.variants.size() << " variants";
  if (summary.runs)
    llvm::errs() << " x " << summary.rounds << " rounds of " << summary.runs << " runs on "
                 << summary.threads << " thread" << (summary.threads == 1 ? "" : "s");
  llvm::errs() << ", " << llvm::formatv("{0:f1}", summary.seconds) << " s\n";
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(kilnCategory);
  cl::ParseCommandLineOptions(argc, argv, "Kiln ahead-of-time model compiler\n");
  if (listTorchOps) {
    for (const std::string &t : kiln::torch_import::supportedTargets())
      llvm::outs() << t << "\n";
    return 0;
  }
  if (inputPath.empty())
    return fail("no model given (kiln-compile MODEL -o OUT; --help lists the options)");
  if (target != "cpu" && target != "cuda" && target != "cuda-emu")
    return fail("unknown --target=" + target + " (cpu, cuda, cuda-emu)");
  bool cudaTarget = target != "cpu";
  if (!emit.empty() && emit != "mlir" && emit != "mlir-import" && emit != "kernels" &&
      emit != "memory-plan" && emit != "llvm" && emit != "cuda-src")
    return fail("unknown --emit=" + emit +
                " (mlir-import, mlir, kernels, memory-plan, llvm, cuda-src)");
  if (emit == "cuda-src" && !cudaTarget)
    return fail("--emit=cuda-src needs --target=cuda or --target=cuda-emu");
  llvm::StringRef out = outputPath;
  bool wantSo = out.ends_with(".so"), wantObj = out.ends_with(".o");
  if (emit.empty() && !wantSo && !wantObj)
    return fail("the output must end in .so or .o (or pass --emit=...)");

  DialectRegistry registry;
  registry.insert<kiln::KilnDialect, func::FuncDialect>();
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  // Diagnostics name the node and op; the generic dump of the op adds noise.
  ctx.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &ctx);

  OwningOpRef<ModuleOp> module;
  if (llvm::StringRef(inputPath).ends_with(".mlir")) {
    module = parseSourceFile<ModuleOp>(inputPath, sourceMgr, ParserConfig(&ctx));
    if (!module)
      return 1;
  } else {
    kiln::onnx_import::ImportOptions opts;
    if (!parseShapes(opts) || !parseBindings(opts))
      return 1;
    module = kiln::torch_import::isTorchArchive(inputPath)
                 ? kiln::torch_import::importTorchFile(ctx, inputPath, opts)
                 : kiln::onnx_import::importOnnxFile(ctx, inputPath, opts);
    if (!module)
      return 1;
  }
  auto printTo = [&](auto &&print) {
    std::string err;
    auto file = openOutputFile(outputPath, &err);
    if (!file)
      return fail(err);
    print(file->os());
    file->keep();
    return 0;
  };
  if (emit == "mlir-import")
    return printTo([&](llvm::raw_ostream &os) { module->print(os); });

  // Graph passes; --print-after shows the IR after any of them.
  auto instrument = [&](PassManager &manager) {
    if (printAfter.empty())
      return;
    ctx.disableMultithreading();
    manager.enableIRPrinting(
        [](Pass *, Operation *) { return false; },
        [](Pass *pass, Operation *) {
          return llvm::is_contained(printAfter, "all") ||
                 llvm::is_contained(printAfter, pass->getArgument());
        },
        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false);
  };
  PassManager pm(&ctx);
  instrument(pm);
  // Narrow storage types (float8, int4, ...) into their carriers first: the
  // folders and passes after see only the types kernels compute in.
  pm.addNestedPass<func::FuncOp>(kiln::createWidenNarrowTypesPass());
  pm.addPass(createCanonicalizerPass());
  auto enabled = [&](StringRef pass) {
    return optLevel >= 1 && !llvm::is_contained(disablePasses, pass);
  };
  for (const std::string &name : disablePasses)
    if (name != "kiln-fold-batchnorm" && name != "kiln-recognize-patterns" &&
        name != "kiln-select-layout" && name != "kiln-fuse" && name != "kiln-live-rows" &&
        name != "kiln-plan-memory" && name != "kiln-rematerialize" && name != "kiln-winograd")
      return fail("--disable-pass: unknown graph pass '" + name +
                  "' (kiln-fold-batchnorm, kiln-recognize-patterns, kiln-select-layout, "
                  "kiln-fuse, kiln-live-rows, kiln-plan-memory, kiln-rematerialize, "
                  "kiln-winograd)");
  int64_t budget = -1;
  if (!maxMemory.empty() && (budget = parseBytes(maxMemory)) < 0)
    return fail("--max-memory expects a byte count (suffix K, M or G allowed), got '" +
                maxMemory + "'");
  if (layoutOpt != "auto" && layoutOpt != "nchw" && layoutOpt != "nhwc")
    return fail("unknown --layout=" + layoutOpt + " (auto, nchw, nhwc)");
  if (ioLayout != "nchw" && ioLayout != "nhwc")
    return fail("unknown --io-layout=" + ioLayout + " (nchw, nhwc)");
  if (kBlockOpt != "auto" && kBlockOpt != "128" && kBlockOpt != "l2")
    return fail("unknown --k-block=" + kBlockOpt + " (auto, l2, 128)");
  int kBlock = kBlockOpt == "auto"  ? 0
               : kBlockOpt == "128" ? kiln::codegen::kKBlock128
                                    : kiln::codegen::kKBlockL2;
  if (cudaTarget && layoutOpt == "nhwc")
    return fail("--layout=nhwc: the CUDA targets compute convolutions in NCHW only (implicit "
                "GEMMs); use --layout=auto or nchw, and --io-layout=nhwc for NHWC inputs and "
                "outputs");
  if (enabled("kiln-fold-batchnorm"))
    pm.addNestedPass<func::FuncOp>(kiln::createFoldBatchNormPass());
  if (enabled("kiln-recognize-patterns")) {
    pm.addNestedPass<func::FuncOp>(kiln::createRecognizePatternsPass());
    pm.addPass(createCanonicalizerPass());
  }
  if (precisionOpt != "fp32" && precisionOpt != "bf16" && precisionOpt != "fp16" &&
      precisionOpt != "auto")
    return fail("unknown --precision=" + precisionOpt + " (fp32, bf16, fp16, auto)");
  if (!keepFp32.empty() && precisionOpt == "fp32")
    return fail("--keep-fp32 needs --precision=bf16, fp16 or auto");
  if (!calibrateInputs.empty() && precisionOpt == "fp32" && !autotuneOpt)
    return fail("--calibrate needs --precision=bf16, fp16 or auto (fp32 is the reference), or "
                "--autotune");
  if (autotuneOpt && cudaTarget)
    return fail("--autotune measures CPU kernels on this machine; it does not apply to --target=" +
                target);
  if (autotuneThreads < 0)
    return fail("--autotune-threads must be at least 1 (or 0: one per core)");
  if (!(tolerance > 0))
    return fail("--tolerance must be positive");
  if (failed(pm.run(*module)))
    return 1;

  // --precision=auto, or a precision measured with --calibrate: trial builds
  // of this same model run on the calibration inputs against the fp32 build.
  std::string precision = precisionOpt;
  std::vector<int64_t> keepIndex(keepFp32Index.begin(), keepFp32Index.end());
  kiln::codegen::PrecisionSummary precisionSummary;
  if (precision == "auto" || (!calibrateInputs.empty() && precision != "fp32")) {
    if (int rc = calibratePrecision(argv[0], *module, precision, keepIndex, precisionSummary))
      return rc;
  }

  PassManager pm2(&ctx);
  instrument(pm2);
  if (precision != "fp32") {
    kiln::LowerPrecisionPassOptions o;
    o.precision = precision;
    o.tensorCores = cudaTarget;
    o.keepFp32.assign(keepFp32.begin(), keepFp32.end());
    o.keepIndex.assign(keepIndex.begin(), keepIndex.end());
    PassManager lower(&ctx);
    instrument(lower);
    lower.addNestedPass<func::FuncOp>(kiln::createLowerPrecisionPass(o));
    if (failed(lower.run(*module)))
      return 1;
    // (Counted before the canonicalizer merges products that became equal.)
    if (!precisionSummary.mode.empty()) {
      precisionSummary.lowered = 0;
      module->walk([&](Operation *op) {
        precisionSummary.lowered += op->hasAttr("kiln.precision");
      });
    }
    pm2.addPass(createCanonicalizerPass());
  }
  // f16/bf16 arithmetic in f32 between casts, at every level, after the
  // patterns have seen the model's own ops (the CUDA target keeps f16/bf16
  // contractions for its tensor cores).
  {
    kiln::LegalizeTypesPassOptions typeOptions;
    typeOptions.tensorCores = cudaTarget;
    pm2.addNestedPass<func::FuncOp>(kiln::createLegalizeTypesPass(typeOptions));
    pm2.addPass(createCanonicalizerPass());
  }
  // The interface layout is a contract and holds at every level; the
  // regions' layout is an optimization.
  // The CUDA target's convolutions are NCHW implicit GEMMs: its regions
  // stay NCHW unless the user asks for NHWC.
  bool chooseLayout = enabled("kiln-select-layout") && layoutOpt != "nchw" &&
                      !(cudaTarget && layoutOpt == "auto");
  if (failed(pm2.run(*module)))
    return 1;
  // --max-memory with --layout=auto: NHWC regions have no convolution
  // prologues to recompute and no concats written in place, so where their
  // plan cannot meet the budget every region goes NCHW instead (from a copy
  // of the module before the layout pass).
  OwningOpRef<ModuleOp> beforeLayout;
  if (budget >= 0 && chooseLayout && layoutOpt == "auto")
    beforeLayout = module->clone();
  auto selectLayout = [&](llvm::StringRef regionLayout) -> LogicalResult {
    PassManager pm3(&ctx);
    instrument(pm3);
    if (chooseLayout || ioLayout == "nhwc") {
      kiln::SelectLayoutPassOptions layoutOptions;
      layoutOptions.layout = regionLayout.str();
      layoutOptions.ioLayout = ioLayout;
      layoutOptions.winograd = !llvm::is_contained(disablePasses, "kiln-winograd");
      pm3.addNestedPass<func::FuncOp>(kiln::createSelectLayoutPass(layoutOptions));
      pm3.addPass(createCanonicalizerPass());
    }
    pm3.addPass(createCSEPass());
    return pm3.run(*module);
  };
  if (failed(selectLayout(chooseLayout ? layoutOpt.getValue() : "nchw")))
    return 1;
  if (beforeLayout) {
    bool nhwc = false;
    module->walk([&](Operation *op) {
      auto l = op->getAttrOfType<StringAttr>("layout");
      nhwc |= l && l.getValue() == "nhwc";
    });
    if (!nhwc)
      beforeLayout = nullptr;
  }
  // Fusion, then --max-memory's search. 0: done; 1: failed (diagnosed); 2:
  // the budget cannot be met with NHWC regions and beforeLayout is there to
  // retry with NCHW ones.
  kiln::codegen::Program unfused;
  bool haveUnfused = false;
  kiln::codegen::RematSummary remat;
  int64_t nhwcSmallest = 0; // the NHWC regions' smallest arena, when they did not fit
  auto fuseAndFit = [&]() -> int {
    // The report states what fusion saved: lower an unfused copy as well.
    if (!reportPath.empty() && enabled("kiln-fuse")) {
      OwningOpRef<ModuleOp> copy = module->clone();
      unfused = kiln::codegen::Program();
      unfused.name = "unfused";
      unfused.gpu = cudaTarget;
      haveUnfused = succeeded(kiln::codegen::lowerToKernels(*copy, unfused));
    }
    if (enabled("kiln-fuse")) {
      PassManager fuse(&ctx);
      instrument(fuse);
      fuse.addNestedPass<func::FuncOp>(kiln::createFusePass());
      if (failed(fuse.run(*module)))
        return 1;
    }
    // --max-memory: the fewest recomputations (cheapest first) whose plan
    // fits. Each trial lowers and plans a copy of the module.
    if (budget >= 0) {
      remat.budget = budget;
      auto arenaWith = [&](int64_t limit, int64_t &bytes) -> LogicalResult {
        OwningOpRef<ModuleOp> copy = module->clone();
        if (limit != 0) {
          PassManager pm2(&ctx);
          kiln::RematerializePassOptions o;
          o.limit = limit;
          pm2.addNestedPass<func::FuncOp>(kiln::createRematerializePass(o));
          if (failed(pm2.run(*copy)))
            return failure();
        }
        kiln::codegen::Program trial;
        trial.name = "trial";
        trial.gpu = cudaTarget;
        setCodegenChoices(trial, kBlock);
        if (failed(kiln::codegen::lowerToKernels(*copy, trial)))
          return failure();
        bytes = trial.arenaBytes;
        return success();
      };
      int64_t without;
      if (failed(arenaWith(0, without)))
        return 1;
      remat.arenaWithout = without;
      int64_t available = 0;
      // (The CUDA kernels have no convolution prologue.)
      if (!cudaTarget && enabled("kiln-fuse") && enabled("kiln-rematerialize"))
        module->walk([&](func::FuncOp fn) { available += kiln::countRematerializeCandidates(fn); });
      if (without > budget) {
        int64_t all = without;
        if (available > 0 && failed(arenaWith(-1, all)))
          return 1;
        if (all > budget) {
          int64_t smallest = std::min(all, without);
          if (beforeLayout) {
            nhwcSmallest = smallest;
            return 2;
          }
          std::string how = std::to_string(available) + " value" +
                            (available == 1 ? "" : "s") + " recomputed; " +
                            std::to_string(without) + " bytes without";
          if (nhwcSmallest > 0) { // (this was the NCHW retry)
            how = "NCHW regions: " + std::to_string(smallest) + " bytes, " + how +
                  "; the NHWC regions --layout=auto chose: " + std::to_string(nhwcSmallest) +
                  " bytes";
            smallest = std::min(smallest, nhwcSmallest);
          }
          return fail(llvm::Twine(inputPath) + ": --max-memory=" + maxMemory + " (" +
                      llvm::Twine(budget) + " bytes) cannot be met: the smallest arena "
                      "kiln-rematerialize reaches is " + llvm::Twine(smallest) + " bytes (" +
                      how + ")");
        }
        // The smallest prefix of the candidates (cheapest first) that fits.
        int64_t lo = 1, hi = available;
        while (lo < hi) {
          int64_t mid = (lo + hi) / 2, bytes;
          if (failed(arenaWith(mid, bytes)))
            return 1;
          if (bytes <= budget)
            hi = mid;
          else
            lo = mid + 1;
        }
        PassManager pm2(&ctx);
        instrument(pm2);
        kiln::RematerializePassOptions o;
        o.limit = lo;
        pm2.addNestedPass<func::FuncOp>(kiln::createRematerializePass(o));
        if (failed(pm2.run(*module)))
          return 1;
        remat.applied = lo;
      }
      remat.candidates = available;
    }
    return 0;
  };
  int fit = fuseAndFit();
  if (fit == 2) {
    module = std::move(beforeLayout);
    remat = kiln::codegen::RematSummary();
    remat.nchwForMemory = true;
    if (failed(selectLayout("nchw")))
      return 1;
    fit = fuseAndFit();
  }
  if (fit != 0)
    return fit;
  if (emit == "mlir")
    return printTo([&](llvm::raw_ostream &os) { module->print(os); });

  // --autotune: trial builds of this module, one per combination of the
  // choices, timed here; the final lowering takes each op's fastest.
  std::map<int64_t, kiln::codegen::OpTuning> tuned;
  kiln::codegen::AutotuneSummary autotuneSummary;
  if (autotuneOpt) {
    if (int rc = autotune(argv[0], *module, kBlock, tuned, autotuneSummary))
      return rc;
  }

  kiln::codegen::Program program;
  program.tuned = std::move(tuned);
  program.remat = remat;
  program.precision = precisionSummary;
  program.name = modelName.empty()
                     ? (emit.empty() ? kiln::pipeline::modelNameFromPath(out) : "model")
                     : kiln::pipeline::modelNameFromPath(modelName + ".x");
  program.gpu = cudaTarget;
  setCodegenChoices(program, kBlock);
  if (failed(kiln::codegen::lowerToKernels(*module, program)))
    return 1;
  if (autotuneSummary.on) {
    program.autotune = std::move(autotuneSummary);
    kiln::autotune::nameKernels(program.autotune, program);
  }
  if (failed(verify(*program.kernels)))
    return fail("internal error: the generated kernels do not verify");
  if (budget >= 0 && program.arenaBytes > budget) // (the search's own plan)
    return fail(llvm::Twine(inputPath) + ": internal error: the arena (" +
                llvm::Twine(program.arenaBytes) + " bytes) exceeds --max-memory");
  auto writeReport = [&](const kiln::pipeline::CudaReport *cuda) {
    std::string error;
    if (!reportPath.empty() &&
        !kiln::pipeline::writeReport(reportPath, program, haveUnfused ? &unfused : nullptr,
                                     error, cuda))
      return fail(error) == 0;
    return true;
  };
  if ((!cudaTarget || emit == "kernels") && !writeReport(nullptr))
    return 1;
  if (emit == "kernels")
    return printTo([&](llvm::raw_ostream &os) { program.kernels->print(os); });
  if (emit == "memory-plan")
    return printTo([&](llvm::raw_ostream &os) { kiln::codegen::printMemoryPlan(program, os); });

  std::string cudaSource;
  kiln::codegen::CpuOptions cpu;
  if (cudaTarget) {
    std::string error;
    cudaSource = kiln::cuda::emitCudaSource(program, error);
    if (cudaSource.empty())
      return fail(inputPath + ": " + error);
    std::vector<std::string> archs(cudaArchs.begin(), cudaArchs.end());
    if (archs.empty() && target == "cuda" && emit.empty()) {
      archs = {"sm_80", "sm_86", "sm_89", "sm_90", "compute_80"};
      if (const char *env = std::getenv("KILN_CUDA_ARCH"); env && *env) {
        archs.clear();
        llvm::SmallVector<llvm::StringRef> parts;
        llvm::StringRef(env).split(parts, ',', -1, false);
        for (llvm::StringRef a : parts)
          archs.push_back(a.trim().str());
      }
    }
    std::vector<uint32_t> archNumbers;
    for (const std::string &a : archs) {
      llvm::StringRef digits(a);
      unsigned n = 0;
      if (!(digits.consume_front("sm_") || digits.consume_front("compute_")) ||
          digits.getAsInteger(10, n) || n < 50)
        return fail("--cuda-arch: '" + a + "' is not sm_XY or compute_XY (e.g. sm_80, compute_80)");
      archNumbers.push_back(n);
    }
    // ptxas resources for the report come from a CUBIN: sm_90 (H100) when
    // none was asked for.
    bool reportOnly = false;
    if (!reportPath.empty() && llvm::none_of(archs, [](const std::string &a) {
          return llvm::StringRef(a).starts_with("sm_");
        })) {
      archs.push_back("sm_90");
      archNumbers.push_back(90);
      reportOnly = true;
    }
    auto results = kiln::cuda::compileAll(cudaSource, program.name + ".cu", archs);
    kiln::pipeline::CudaReport report;
    report.target = target;
    for (auto [i, r] : llvm::enumerate(results)) {
      if (!r.ok)
        return fail("NVRTC failed for " + archs[i] + " (the generated CUDA C++ is written "
                    "by --emit=cuda-src):\n" + r.log);
      bool spilled = false;
      for (const kiln::cuda::KernelResources &k : r.kernels)
        if (k.spillStores || k.spillLoads) {
          llvm::errs() << "kiln-compile: " << (cudaNoSpills ? "error" : "warning") << ": "
                       << archs[i] << ": kernel " << k.name << " spills (" << k.spillStores
                       << " bytes stored, " << k.spillLoads << " loaded)\n";
          spilled = true;
        }
      if (spilled && cudaNoSpills)
        return 1;
      if (report.resourcesArch.empty() && !r.kernels.empty()) {
        report.resourcesArch = archs[i];
        for (const kiln::cuda::KernelResources &k : r.kernels)
          report.resources[k.name] = {k.registers, k.spillStores, k.spillLoads, k.stackBytes,
                                      k.sharedBytes};
      }
      if (target == "cuda" && !(reportOnly && i + 1 == results.size()))
        cpu.cudaImages.push_back({archNumbers[i], llvm::StringRef(archs[i]).starts_with("compute_"),
                                  std::string(r.binary.begin(), r.binary.end())});
    }
    if (!writeReport(&report))
      return 1;
    if (emit == "cuda-src")
      return printTo([&](llvm::raw_ostream &os) { os << cudaSource; });
    if (wantObj && target == "cuda-emu")
      return fail("--target=cuda-emu builds a .so (the emulation needs the host C++ "
                  "compiler's object linked in)");
  }

  cpu.mcpu = mcpu;
  cpu.optLevel = optLevel;
  cpu.exportGenericEntry = wantSo;
  using Device = kiln::codegen::CpuOptions::Device;
  cpu.device = target == "cuda" ? Device::Cuda : target == "cuda-emu" ? Device::CudaEmu : Device::Cpu;
  llvm::LLVMContext llvmCtx;
  std::string error;
  auto llvmModule = kiln::codegen::buildLLVMModule(program, llvmCtx, cpu, error);
  if (!llvmModule)
    return fail(error);
  llvm::SmallVector<char, 0> object;
  if (!kiln::codegen::emitObject(*llvmModule, cpu, object, error))
    return fail(error);
  if (emit == "llvm")
    return printTo([&](llvm::raw_ostream &os) { llvmModule->print(os, nullptr); });

  llvm::StringRef bytes(object.data(), object.size());
  if (wantObj) {
    if (!writeFile(out, bytes) || !writeFile(headerPath(out), kiln::pipeline::generateHeader(program)))
      return 1;
    return 0;
  }
  // .so: write a temporary object beside the output, link, remove it.
  std::string tmpObj = out.str() + ".tmp.o";
  if (!writeFile(tmpObj, bytes))
    return 1;
  std::vector<std::string> extra;
  if (target == "cuda-emu") {
    // The kernels: CUDA C++ compiled by the host compiler against the
    // emulation header.
    std::string src = out.str() + ".emu.cpp", obj = out.str() + ".emu.o";
    if (!writeFile(src, kiln::cuda::emitEmulationSource(program, cudaSource)))
      return 1;
    bool built = kiln::pipeline::compileEmulation(src, obj, optLevel, error);
    llvm::sys::fs::remove(src);
    if (!built) {
      llvm::sys::fs::remove(tmpObj);
      return fail(error);
    }
    extra.push_back(obj);
  }
  bool ok = kiln::pipeline::linkSharedLibrary(tmpObj, out, error, extra);
  llvm::sys::fs::remove(tmpObj);
  for (const std::string &o : extra)
    llvm::sys::fs::remove(o);
  if (!ok)
    return fail(error);
  return 0;
}
