//===- kiln-compile.cpp - model file -> object file / shared library -------===//
//
//   kiln-compile MODEL.onnx -o OUT.so      shared library (dlopen, kiln-run)
//   kiln-compile MODEL.onnx -o OUT.o       object file + OUT.h
//   kiln-compile MODEL --emit=mlir|mlir-import|kernels|llvm [-o FILE]
//
// MODEL may also be a .mlir file of kiln ops (used by the lit tests). The
// flags become kiln::driver::CompileOptions; driver/Pipeline.h compiles.
//
//===----------------------------------------------------------------------===//
#include "driver/CompileOptions.h"
#include "driver/Pipeline.h"
#include "frontends/torch/TorchImporter.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

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
static cl::opt<int64_t> maxConstantElements("max-constant-elements",
    cl::cat(kilnCategory), cl::desc("the most elements of one tensor the compiler holds in memory "
             "while importing: an initializer, a constant evaluated at import, an index table "
             "(a Pad's or Resize's map); a model that needs more is refused before anything is "
             "allocated"),
    cl::value_desc("count"), cl::init(int64_t(1) << 27));
static cl::opt<std::string> precisionOpt("precision",
    cl::cat(kilnCategory), cl::desc("compute precision (kiln-lower-precision): fp32; bf16 or fp16 "
             "(convolutions, gemms and matmuls on bf16/fp16 operands with fp32 accumulation, "
             "like autocast; softmax, normalizations, reductions and the outputs in fp32); "
             "auto (bf16 where the outputs stay within --tolerance of the fp32 build on the "
             "calibration inputs, fp32 elsewhere); int8 (CPU: post-training quantization of "
             "every gemm, matmul and conv with constant weights -- uint8 activations over "
             "their range on the calibration inputs, one quantization per activation that "
             "all its readers read, int8 weights per output column -- onto the 8-bit "
             "kernels; depthwise convs on the 8-bit activations)"),
    cl::init("fp32"));
static cl::opt<double> tolerance("tolerance",
    cl::cat(kilnCategory), cl::desc("--precision=auto: the largest relative error allowed, "
             "max|y - y_fp32| / max|y_fp32| over every output"),
    cl::init(1e-2));
static cl::list<std::string> calibrateInputs("calibrate",
    cl::cat(kilnCategory), cl::desc("an input for --precision=auto's measurements and "
             "--precision=int8's activation ranges (or to measure --precision=bf16|fp16 against "
             "fp32 in the report): NAME=FILE (.npy or .pb), "
             "repeatable; float inputs not given are drawn at random (normal, seeded)"));
static cl::opt<std::string> calibrateMethod("calibrate-method",
    cl::cat(kilnCategory), cl::desc("--precision=int8: how each activation's range comes from "
             "its calibration values: minmax (default), percentile (the 0.001st and 99.999th "
             "percentiles), percentile:P (the (100-P)th and Pth), or entropy (the threshold "
             "of least KL divergence, as TensorRT's calibrator)"),
    cl::init("minmax"));
static cl::opt<std::string> weightsOpt("weights",
    cl::cat(kilnCategory), cl::desc("weight-only quantization (kiln-quantize-weights): none "
             "(default); int4 or int8 (each gemm and matmul with constant f32 weights on 4- or "
             "8-bit codes, a scale and zero point per output column and block of k; the "
             "activations stay f32); int4:BLOCK or int8:BLOCK sets the block (a multiple of 32, "
             "default 32)"),
    cl::init("none"));
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

template <typename T> static std::vector<T> listOf(const cl::list<T> &l) {
  return std::vector<T>(l.begin(), l.end());
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
  kiln::driver::CompileOptions o;
  o.input = inputPath;
  o.output = outputPath;
  o.name = modelName;
  o.report = reportPath;
  o.mcpu = mcpu;
  o.optLevel = optLevel;
  o.tolerance = tolerance;
  o.autoTrials = autoTrials;
  o.winogradF43 = winogradF43;
  o.autotune = autotuneOpt;
  o.autotuneCache = autotuneCache;
  o.autotuneThreads = autotuneThreads;
  o.cudaNoSpills = cudaNoSpills;
  o.shapes = listOf(shapes);
  o.maxShapes = listOf(maxShapes);
  o.bindings = listOf(bindings);
  o.cudaArchs = listOf(cudaArchs);
  o.printAfter = listOf(printAfter);
  o.disabledPasses = listOf(disablePasses);
  o.calibrate = listOf(calibrateInputs);
  o.calibrateMethod = calibrateMethod;
  o.keepFp32 = listOf(keepFp32);
  o.keepFp32Index = listOf(keepFp32Index);
  kiln::driver::CompileFlags flags;
  flags.target = target;
  flags.emit = emit;
  flags.precision = precisionOpt;
  flags.weights = weightsOpt;
  flags.layout = layoutOpt;
  flags.ioLayout = ioLayout;
  flags.kBlock = kBlockOpt;
  flags.maxMemory = maxMemory;
  o.maxConstantElements = maxConstantElements;
  std::string error;
  if (!kiln::driver::parseCompileFlags(flags, o, error) ||
      !kiln::driver::checkCompileOptions(o, error)) {
    llvm::errs() << "kiln-compile: error: " << error << "\n";
    return 1;
  }
  std::string self = llvm::sys::fs::getMainExecutable(argv[0], (void *)&listOf<int64_t>);
  return kiln::driver::compileModel(o, self);
}
