//===- CompileOptions.cpp - parsing and checking the options once ---------===//
#include "driver/CompileOptions.h"
#include "driver/ActivationRanges.h"
#include "driver/Artifact.h"
#include "codegen/program/Program.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <optional>

namespace kiln::driver {
namespace {

/// "1048576", "1024K", "1.5M", "2G" -> bytes (powers of 1024); -1 if malformed.
int64_t parseBytes(llvm::StringRef text) {
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

/// What --disable-pass accepts: the graph passes the pipeline may skip (by
/// their registered names, passes/Passes.td) and the lowering's switches
/// (CodegenOptions.h).
constexpr const char *kDisablePasses[] = {"kiln-fold-batchnorm",
                                           "kiln-recognize-patterns",
                                           "kiln-integer-contractions",
                                           "kiln-select-layout",
                                           "kiln-fuse",
                                           codegen::kLiveRowsSwitch,
                                           codegen::kPlanMemorySwitch,
                                           "kiln-rematerialize",
                                           codegen::kWinogradSwitch};

} // namespace

bool CompileOptions::wantSharedObject() const { return llvm::StringRef(output).ends_with(".so"); }
bool CompileOptions::wantObject() const { return llvm::StringRef(output).ends_with(".o"); }
bool CompileOptions::disabled(const std::string &pass) const {
  return llvm::is_contained(disabledPasses, pass);
}

const char *targetName(Target t) {
  switch (t) {
  case Target::Cpu: return "cpu";
  case Target::Cuda: return "cuda";
  case Target::CudaEmu: return "cuda-emu";
  }
  return "cpu";
}

const char *emitName(Emit e) {
  switch (e) {
  case Emit::Artifact: return "";
  case Emit::MlirImport: return "mlir-import";
  case Emit::Mlir: return "mlir";
  case Emit::Kernels: return "kernels";
  case Emit::MemoryPlan: return "memory-plan";
  case Emit::Llvm: return "llvm";
  case Emit::CudaSrc: return "cuda-src";
  }
  return "";
}

const char *precisionName(Precision p) {
  switch (p) {
  case Precision::Fp32: return "fp32";
  case Precision::Bf16: return "bf16";
  case Precision::Fp16: return "fp16";
  case Precision::Auto: return "auto";
  case Precision::Int8: return "int8";
  }
  return "fp32";
}

const char *layoutName(Layout l) {
  switch (l) {
  case Layout::Auto: return "auto";
  case Layout::Nchw: return "nchw";
  case Layout::Nhwc: return "nhwc";
  }
  return "auto";
}

const char *ioLayoutName(IoLayout l) { return l == IoLayout::Nhwc ? "nhwc" : "nchw"; }

bool parseCompileFlags(const CompileFlags &f, CompileOptions &o, std::string &error) {
  using llvm::StringSwitch;
  auto target = StringSwitch<std::optional<Target>>(f.target)
                    .Case("cpu", Target::Cpu)
                    .Case("cuda", Target::Cuda)
                    .Case("cuda-emu", Target::CudaEmu)
                    .Default(std::nullopt);
  if (!target) {
    error = "unknown --target=" + f.target + " (cpu, cuda, cuda-emu)";
    return false;
  }
  o.target = *target;
  auto emit = StringSwitch<std::optional<Emit>>(f.emit)
                  .Case("", Emit::Artifact)
                  .Case("mlir-import", Emit::MlirImport)
                  .Case("mlir", Emit::Mlir)
                  .Case("kernels", Emit::Kernels)
                  .Case("memory-plan", Emit::MemoryPlan)
                  .Case("llvm", Emit::Llvm)
                  .Case("cuda-src", Emit::CudaSrc)
                  .Default(std::nullopt);
  if (!emit) {
    error = "unknown --emit=" + f.emit + " (mlir-import, mlir, kernels, memory-plan, llvm, cuda-src)";
    return false;
  }
  o.emit = *emit;
  auto precision = StringSwitch<std::optional<Precision>>(f.precision)
                       .Case("fp32", Precision::Fp32)
                       .Case("bf16", Precision::Bf16)
                       .Case("fp16", Precision::Fp16)
                       .Case("auto", Precision::Auto)
                       .Case("int8", Precision::Int8)
                       .Default(std::nullopt);
  if (!precision) {
    error = "unknown --precision=" + f.precision + " (fp32, bf16, fp16, auto, int8)";
    return false;
  }
  o.precision = *precision;
  auto layout = StringSwitch<std::optional<Layout>>(f.layout)
                    .Case("auto", Layout::Auto)
                    .Case("nchw", Layout::Nchw)
                    .Case("nhwc", Layout::Nhwc)
                    .Default(std::nullopt);
  if (!layout) {
    error = "unknown --layout=" + f.layout + " (auto, nchw, nhwc)";
    return false;
  }
  o.layout = *layout;
  if (f.ioLayout != "nchw" && f.ioLayout != "nhwc") {
    error = "unknown --io-layout=" + f.ioLayout + " (nchw, nhwc)";
    return false;
  }
  o.ioLayout = f.ioLayout == "nhwc" ? IoLayout::Nhwc : IoLayout::Nchw;
  if (f.kBlock != "auto" && f.kBlock != "128" && f.kBlock != "l2") {
    error = "unknown --k-block=" + f.kBlock + " (auto, l2, 128)";
    return false;
  }
  o.kBlock = f.kBlock == "auto"  ? 0
             : f.kBlock == "128" ? codegen::kKBlock128
                                 : codegen::kKBlockL2;
  // --weights=none|int4|int8[:BLOCK]
  {
    llvm::StringRef spec(f.weights), kind = spec.split(':').first, block = spec.split(':').second;
    bool blockOk = !spec.contains(':') ||
                   (!block.getAsInteger(10, o.weightBlock) && o.weightBlock >= 32 &&
                    o.weightBlock % 32 == 0 && o.weightBlock <= 4096);
    o.weightBits = kind == "int4" ? 4 : kind == "int8" ? 8 : 0;
    if ((kind != "none" && !o.weightBits) || (kind == "none" && spec.contains(':')) || !blockOk) {
      error = "unknown --weights=" + f.weights +
              " (none, int4 or int8, optionally :BLOCK -- k per scale, a multiple of 32 up to "
              "4096; default 32)";
      return false;
    }
  }
  o.maxMemoryText = f.maxMemory;
  if (!f.maxMemory.empty() && (o.maxMemory = parseBytes(f.maxMemory)) < 0) {
    error = "--max-memory expects a byte count (suffix K, M or G allowed), got '" + f.maxMemory +
            "'";
    return false;
  }
  return true;
}

bool checkCompileOptions(const CompileOptions &o, std::string &error) {
  auto no = [&](const std::string &msg) {
    error = msg;
    return false;
  };
  if (o.input.empty())
    return no("no model given (kiln-compile MODEL -o OUT; --help lists the options)");
  if (o.maxConstantElements < 1)
    return no("--max-constant-elements must be positive");
  if (o.emit == Emit::CudaSrc && !o.cudaTarget())
    return no("--emit=cuda-src needs --target=cuda or --target=cuda-emu");
  if (o.emit == Emit::Artifact && !o.wantSharedObject() && !o.wantObject())
    return no("the output must end in .so or .o (or pass --emit=...)");
  if (pipeline::isReservedModelName(o.name))
    return no("--name=" + o.name + ": names 'kiln' and 'kiln_*' are the runtime's (its "
              "symbols kiln_model, kiln_model_desc, ...); choose another prefix");
  for (const std::string &name : o.disabledPasses)
    if (!llvm::is_contained(kDisablePasses, llvm::StringRef(name)))
      return no("--disable-pass: unknown graph pass '" + name + "' (" +
                llvm::join(std::begin(kDisablePasses), std::end(kDisablePasses), ", ") + ")");
  if (o.cudaTarget() && o.layout == Layout::Nhwc)
    return no("--layout=nhwc: the CUDA targets compute convolutions in NCHW only (implicit "
              "GEMMs); use --layout=auto or nchw, and --io-layout=nhwc for NHWC inputs and "
              "outputs");
  if (o.precision == Precision::Int8 && o.cudaTarget())
    return no(std::string("--precision=int8 runs on the CPU's 8-bit kernels; the CUDA targets "
                          "have none (--target=") +
              targetName(o.target) + "): use fp16 or bf16 there");
  if (o.precision == Precision::Int8 && !o.keepFp32.empty())
    return no("--keep-fp32 applies to --precision=bf16, fp16 and auto; --precision=int8 "
              "quantizes every gemm and matmul with constant weights");
  if (o.calibrateMethod != "minmax") {
    std::string error;
    if (!calibrate::parseRangeMethod(o.calibrateMethod, error))
      return no(error);
    if (o.precision != Precision::Int8)
      return no("--calibrate-method chooses --precision=int8's activation ranges");
  }
  if (o.weightBits && o.precision == Precision::Int8)
    return no("--weights quantizes weights only; --precision=int8 quantizes weights and "
              "activations: choose one");
  if (!o.keepFp32.empty() && o.precision == Precision::Fp32)
    return no("--keep-fp32 needs --precision=bf16, fp16 or auto");
  if (!o.calibrate.empty() && o.precision == Precision::Fp32 && !o.autotune)
    return no("--calibrate needs --precision=bf16, fp16, auto or int8 (fp32 is the reference), or "
              "--autotune");
  if (o.autotune && o.cudaTarget())
    return no(std::string("--autotune measures CPU kernels on this machine; it does not apply "
                          "to --target=") +
              targetName(o.target));
  if (o.autotuneThreads < 0)
    return no("--autotune-threads must be at least 1 (or 0: one per core)");
  if (!(o.tolerance > 0))
    return no("--tolerance must be positive");
  return true;
}

CompileOptions trialOptions(const CompileOptions &o, Precision precision,
                            const std::set<int64_t> &keep, const std::string &output) {
  CompileOptions t = o;
  t.output = output;
  t.name.clear();
  t.report.clear();
  t.emit = Emit::Artifact;
  // (The graph passes of -O1 and up are the same; LLVM's -O1 compiles in
  // half the time of -O3, with the same arithmetic.)
  t.optLevel = std::min(1u, o.optLevel);
  t.target = o.target == Target::Cpu ? Target::Cpu : Target::CudaEmu;
  t.cudaArchs.clear();
  t.cudaNoSpills = false;
  t.precision = precision;
  if (precision == Precision::Fp32) // (the reference keeps everything)
    t.keepFp32.clear();
  t.keepFp32Index.assign(keep.begin(), keep.end());
  t.calibrate.clear();
  t.calibrateMethod = "minmax";
  t.autotune = false;
  t.printAfter.clear();
  return t;
}

} // namespace kiln::driver
