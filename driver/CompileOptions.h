//===- CompileOptions.h - what one compilation is asked to do ---*- C++ -*-===//
//
// Everything kiln-compile's flags say, parsed and checked once
// (checkCompileOptions) before any work starts: the pipeline (Pipeline.h)
// reads typed fields, never flag strings. A trial build of the same model
// (--precision=auto's calibration) is the same options with a few fields
// changed (trialOptions).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DRIVER_COMPILEOPTIONS_H
#define KILN_DRIVER_COMPILEOPTIONS_H

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace kiln::driver {

enum class Target { Cpu, Cuda, CudaEmu };
/// What is written: an artifact (.so or .o + .h), or IR at one stage.
enum class Emit { Artifact, MlirImport, Mlir, Kernels, MemoryPlan, Llvm, CudaSrc };
enum class Precision { Fp32, Bf16, Fp16, Auto, Int8 };
/// The convolutional regions' layout (--layout); the interface's is IoLayout.
enum class Layout { Auto, Nchw, Nhwc };
enum class IoLayout { Nchw, Nhwc };

struct CompileOptions {
  std::string input;          // model.onnx, model.pt2 or kiln IR (.mlir)
  std::string output = "-";   // .so, .o (+ .h), or the --emit file
  std::string name;           // the C identifier prefix ("" : the output's stem)
  std::string report;         // --report FILE.json|FILE.md
  std::string mcpu = "native";
  Target target = Target::Cpu;
  Emit emit = Emit::Artifact;
  unsigned optLevel = 3;
  Precision precision = Precision::Fp32;
  double tolerance = 1e-2;
  int autoTrials = 24;
  Layout layout = Layout::Auto;
  IoLayout ioLayout = IoLayout::Nchw;
  /// The f32 packed-B ukernel's k blocks: 0 (auto), or codegen's
  /// kKBlock128 / kKBlockL2.
  int kBlock = 0;
  bool winogradF43 = false;
  bool autotune = false;
  std::string autotuneCache; // "" (default path) or "none"
  int autotuneThreads = 0;   // 0: one per core
  bool cudaNoSpills = false;
  /// --max-memory in bytes, or -1 (no budget); maxMemoryText as given.
  int64_t maxMemory = -1;
  std::string maxMemoryText;
  /// --max-constant-elements: the most elements of one tensor the compiler
  /// holds while importing (ImportOptions::maxConstantElements).
  int64_t maxConstantElements = int64_t(1) << 27;
  /// LLVM's SLP vectorizer; compileModel turns it off and builds again when
  /// it breaks a module (no flag).
  bool slpVectorize = true;
  std::vector<std::string> shapes, maxShapes, bindings; // NAME=... as given
  std::vector<std::string> cudaArchs, printAfter, disabledPasses, calibrate, keepFp32;
  /// --calibrate-method (--precision=int8's activation ranges):
  /// ActivationRanges.h's spelling.
  std::string calibrateMethod = "minmax";
  std::vector<int64_t> keepFp32Index; // contractions kept fp32 by position (trial builds)
  /// --weights: weight-only quantization of constant matmul/gemm weights
  /// (kiln-quantize-weights): 0 (off), 4 or 8 bits per code, in blocks of
  /// weightBlock k.
  int weightBits = 0;
  int64_t weightBlock = 32;

  bool cudaTarget() const { return target != Target::Cpu; }
  bool wantSharedObject() const;
  bool wantObject() const;
  bool disabled(const std::string &pass) const;
};

/// The flag spellings of the enums (as the command line takes them).
const char *targetName(Target t);
const char *emitName(Emit e);
const char *precisionName(Precision p);
const char *layoutName(Layout l);
const char *ioLayoutName(IoLayout l);

/// Fills the enums and numbers from the command line's strings; false with
/// `error` naming the flag and its accepted values.
struct CompileFlags {
  std::string target = "cpu", emit, precision = "fp32", layout = "auto", ioLayout = "nchw",
              kBlock = "auto", maxMemory, weights = "none";
};
bool parseCompileFlags(const CompileFlags &flags, CompileOptions &o, std::string &error);

/// The checks across options (before the model is read); false with `error`.
bool checkCompileOptions(const CompileOptions &o, std::string &error);

/// The options of a trial build of the same model into the .so `output`
/// (--precision=auto's calibration): CPU code (a CUDA model's kernels
/// through the emulation), LLVM at -O1, no report, at `precision` with the
/// contractions at positions `keep` kept fp32.
CompileOptions trialOptions(const CompileOptions &o, Precision precision,
                            const std::set<int64_t> &keep, const std::string &output);

} // namespace kiln::driver

#endif // KILN_DRIVER_COMPILEOPTIONS_H
