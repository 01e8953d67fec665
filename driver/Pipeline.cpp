//===- Pipeline.cpp - a model file through every stage to its artifact ----===//
#include "driver/Pipeline.h"
#include "codegen/cpu/EmitObject.h"
#include "codegen/cuda/EmitCuda.h"
#include "codegen/cuda/Nvrtc.h"
#include "codegen/program/PlanMemory.h"
#include "codegen/program/Program.h"
#include "dialects/kiln/KilnDialect.h"
#include "codegen/kernels/Lowering.h"
#include "driver/ActivationRanges.h"
#include "driver/Artifact.h"
#include "driver/Autotune.h"
#include "driver/Calibrate.h"
#include "driver/Report.h"
#include "frontends/onnx/Importer.h"
#include "frontends/torch/TorchImporter.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

using namespace mlir;

namespace kiln::driver {
namespace {

int fail(const llvm::Twine &msg) {
  llvm::errs() << "kiln-compile: error: " << msg << "\n";
  return 1;
}

/// A stage's result: carry on, or stop with this exit code (0: the IR
/// --emit asked for is written).
constexpr int kContinue = -1;
/// writeArtifact's code when LLVM's optimizer broke the module (compileModel
/// builds again without the SLP vectorizer).
constexpr int kOptimizerBroke = -2;

/// The codegen choices of the options (the target, --disable-pass,
/// --winograd-f43, --k-block), for the model's Program and every trial
/// build.
codegen::CodegenOptions codegenOptions(const CompileOptions &o) {
  codegen::CodegenOptions c;
  c.gpu = o.cudaTarget();
  c.liveRows = !o.disabled(codegen::kLiveRowsSwitch);
  c.planMemory = !o.disabled(codegen::kPlanMemorySwitch);
  c.winograd = !o.disabled(codegen::kWinogradSwitch);
  c.winograd43 = o.winogradF43;
  c.kBlock = o.kBlock;
  return c;
}

bool parseBindings(const CompileOptions &o, onnx_import::ImportOptions &opts) {
  for (const std::string &s : o.bindings) {
    auto [name, file] = llvm::StringRef(s).split('=');
    if (name.empty() || file.empty()) {
      fail("--bind expects NAME=FILE (.npy or TensorProto .pb), got '" + s + "'");
      return false;
    }
    opts.bindings[name.str()] = file.str();
  }
  return true;
}

bool parseShapeList(const std::vector<std::string> &list, const char *flag,
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

/// model.o -> model.h
std::string headerPath(llvm::StringRef obj) {
  llvm::SmallString<256> h(obj);
  llvm::sys::path::replace_extension(h, ".h");
  return h.str().str();
}

bool writeFile(llvm::StringRef path, llvm::StringRef data) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_None);
  if (ec) {
    fail("cannot write " + path + ": " + ec.message());
    return false;
  }
  os << data;
  return true;
}

/// Writes what `print` prints to o.output (the --emit file). Returns an
/// exit code.
template <typename Print> int printTo(const CompileOptions &o, Print &&print) {
  std::string err;
  auto file = openOutputFile(o.output, &err);
  if (!file)
    return fail(err);
  print(file->os());
  file->keep();
  return 0;
}

/// The .so: a temporary object beside the output (and, for cuda-emu, the
/// kernels compiled by the host compiler against the emulation header),
/// linked with the runtime archive, then removed.
int linkSharedObject(const CompileOptions &o, const codegen::Program &program,
                     const std::string &cudaSource, llvm::StringRef object) {
  std::string out = o.output, error;
  std::string tmpObj = out + ".tmp.o";
  if (!writeFile(tmpObj, object))
    return 1;
  std::vector<std::string> extra;
  if (o.target == Target::CudaEmu) {
    std::string src = out + ".emu.cpp", obj = out + ".emu.o";
    if (!writeFile(src, cuda::emitEmulationSource(program, cudaSource)))
      return 1;
    bool built = pipeline::compileEmulation(src, obj, o.optLevel, error);
    llvm::sys::fs::remove(src);
    if (!built) {
      llvm::sys::fs::remove(tmpObj);
      return fail(error);
    }
    extra.push_back(obj);
  }
  bool ok = pipeline::linkSharedLibrary(tmpObj, out, error, extra);
  llvm::sys::fs::remove(tmpObj);
  for (const std::string &e : extra)
    llvm::sys::fs::remove(e);
  if (!ok)
    return fail(error);
  return 0;
}

/// The artifact of a lowered `program` as `o` asks: the object and its
/// header, the .so, or (--emit=llvm) the LLVM IR. `cpu` carries the CUDA
/// images (--target=cuda), `cudaSource` the kernels' CUDA C++ (cuda-emu's
/// emulation is compiled from it). The model's build and --autotune's
/// trial builds both end here. Returns an exit code.
int writeArtifact(const CompileOptions &o, codegen::Program &program,
                  codegen::CpuOptions cpu, const std::string &cudaSource) {
  cpu.mcpu = o.mcpu;
  cpu.optLevel = o.optLevel;
  cpu.exportGenericEntry = o.wantSharedObject();
  cpu.slpVectorize = o.slpVectorize;
  using Device = codegen::CpuOptions::Device;
  cpu.device = o.target == Target::Cuda      ? Device::Cuda
               : o.target == Target::CudaEmu ? Device::CudaEmu
                                             : Device::Cpu;
  llvm::LLVMContext llvmCtx;
  std::string error;
  auto llvmModule = codegen::buildLLVMModule(program, llvmCtx, cpu, error);
  if (!llvmModule)
    return fail(error);
  bool optimizerBroke = false;
  if (o.emit == Emit::Llvm) {
    if (!codegen::optimizeModule(*llvmModule, cpu, error, &optimizerBroke))
      return optimizerBroke && o.slpVectorize ? kOptimizerBroke : fail(error);
    return printTo(o, [&](llvm::raw_ostream &os) { llvmModule->print(os, nullptr); });
  }
  llvm::SmallVector<char, 0> object;
  if (!codegen::emitObject(*llvmModule, cpu, object, error, &optimizerBroke))
    return optimizerBroke && o.slpVectorize ? kOptimizerBroke : fail(error);
  llvm::StringRef bytes(object.data(), object.size());
  if (o.wantObject()) {
    if (!writeFile(o.output, bytes) ||
        !writeFile(headerPath(o.output), pipeline::generateHeader(program)))
      return 1;
    return 0;
  }
  return linkSharedObject(o, program, cudaSource, bytes);
}

/// One compilation's state as it goes through the stages.
class Compilation {
public:
  /// The compilation of `o.input`, in a context of its own.
  Compilation(const CompileOptions &o, const std::string &toolPath)
      : o(o), toolPath(toolPath), ownedCtx(std::make_unique<MLIRContext>(registry())),
        ctx(*ownedCtx),
        diagHandler(std::make_unique<SourceMgrDiagnosticHandler>(sourceMgr, &ctx)) {
    ctx.loadAllAvailableDialects();
    // Diagnostics name the node and op; the generic dump of the op adds noise.
    ctx.printOpOnDiagnostic(false);
  }

  /// A trial build (--precision=auto's calibration): `trial`'s options (see
  /// trialOptions) applied to `copy`, the parent's module after its graph
  /// passes, in the parent's context.
  Compilation(const CompileOptions &trial, MLIRContext &parentCtx, OwningOpRef<ModuleOp> copy)
      : o(trial), ctx(parentCtx), module(std::move(copy)) {}

  /// Every stage, from the model file.
  int run() {
    return runStages({&Compilation::importModel, &Compilation::graphPasses,
                      &Compilation::precisionAndTypes, &Compilation::layoutFusionMemory,
                      &Compilation::lower, &Compilation::emitArtifact});
  }

  ~Compilation() {
    if (!calibrationDir.empty())
      llvm::sys::fs::remove_directories(calibrationDir);
  }

  /// A trial build's stages: those after the graph passes.
  int runTrial() {
    return runStages({&Compilation::precisionAndTypes, &Compilation::layoutFusionMemory,
                      &Compilation::lower, &Compilation::emitArtifact});
  }

private:
  static DialectRegistry registry() {
    DialectRegistry r;
    r.insert<kiln::KilnDialect, func::FuncDialect>();
    return r;
  }

  using Stage = int (Compilation::*)();
  int runStages(std::initializer_list<Stage> stages) {
    for (Stage stage : stages)
      if (int rc = (this->*stage)(); rc != kContinue)
        return rc;
    return 0;
  }

  // The stages, in order.
  int importModel();
  int graphPasses();
  int precisionAndTypes();
  int layoutFusionMemory();
  int lower();
  int emitArtifact();

  // Their parts.
  int calibratePrecision();
  int quantizeInt8(calibrate::Outputs &reference);
  int measureInt8(const calibrate::Outputs &reference);
  int makeCalibrationDir();
  std::string calibrationRun() const {
    return (llvm::sys::path::parent_path(toolPath) + "/kiln-run").str();
  }
  int runAutotune(std::map<int64_t, codegen::OpTuning> &tuned,
                  codegen::AutotuneSummary &summary);
  LogicalResult selectLayout(Layout regionLayout);
  int fuseAndFit();
  int compileCuda(codegen::CpuOptions &cpu);
  bool writeReport(const pipeline::CudaReport *cuda);

  bool enabled(llvm::StringRef pass) const {
    return o.optLevel >= 1 && !o.disabled(pass.str());
  }
  /// Passes print the IR after themselves as --print-ir-after asks.
  void instrument(PassManager &manager) {
    if (o.printAfter.empty())
      return;
    ctx.disableMultithreading();
    const std::vector<std::string> &after = o.printAfter;
    manager.enableIRPrinting(
        [](Pass *, Operation *) { return false; },
        [&after](Pass *pass, Operation *) {
          return llvm::is_contained(after, "all") ||
                 llvm::is_contained(after, pass->getArgument());
        },
        /*printModuleScope=*/true, /*printAfterOnlyOnChange=*/false);
  }
  template <typename Print> int printTo(Print &&print) {
    return driver::printTo(o, std::forward<Print>(print));
  }

  const CompileOptions &o;
  std::string toolPath; // kiln-compile's executable (kiln-run is beside it)
  llvm::SourceMgr sourceMgr;
  std::unique_ptr<MLIRContext> ownedCtx; // null in a trial build
  MLIRContext &ctx;
  std::unique_ptr<SourceMgrDiagnosticHandler> diagHandler;
  OwningOpRef<ModuleOp> module;

  // What the stages decide.
  Precision precision = Precision::Fp32; // after --precision=auto: fp32 or bf16
  std::vector<int64_t> keepIndex;
  codegen::PrecisionSummary precisionSummary;
  codegen::WeightsSummary weightsSummary;
  /// --precision=int8's calibration: its folder (removed with the
  /// compilation) and kiln-run's --input arguments.
  std::string calibrationDir;
  std::vector<std::string> calibrationArgs;
  bool chooseLayout = false;
  /// --max-memory with --layout=auto: the module before the layout pass, for
  /// the NCHW retry.
  OwningOpRef<ModuleOp> beforeLayout;
  codegen::Program unfused; // the report's build without fusion
  bool haveUnfused = false;
  codegen::RematSummary remat;
  int64_t nhwcSmallest = 0; // the NHWC regions' smallest arena, when they did not fit
  codegen::Program program;
  std::string cudaSource;
};

int Compilation::importModel() {
  if (llvm::StringRef(o.input).ends_with(".mlir")) {
    module = parseSourceFile<ModuleOp>(o.input, sourceMgr, ParserConfig(&ctx));
    if (!module)
      return 1;
  } else {
    onnx_import::ImportOptions opts;
    opts.maxConstantElements = o.maxConstantElements;
    if (!parseShapeList(o.shapes, "--shape", opts.inputShapes) ||
        !parseShapeList(o.maxShapes, "--max-shape", opts.maxShapes) || !parseBindings(o, opts))
      return 1;
    module = torch_import::isTorchArchive(o.input)
                 ? torch_import::importTorchFile(ctx, o.input, opts)
                 : onnx_import::importOnnxFile(ctx, o.input, opts);
    if (!module)
      return 1;
  }
  if (o.emit == Emit::MlirImport)
    return printTo([&](llvm::raw_ostream &os) { module->print(os); });
  return kContinue;
}

int Compilation::graphPasses() {
  PassManager pm(&ctx);
  instrument(pm);
  // Narrow storage types (float8, int4, ...) into their carriers first: the
  // folders and passes after see only the types kernels compute in.
  pm.addNestedPass<func::FuncOp>(kiln::createWidenNarrowTypesPass());
  pm.addPass(createCanonicalizerPass());
  if (enabled("kiln-fold-batchnorm"))
    pm.addNestedPass<func::FuncOp>(kiln::createFoldBatchNormPass());
  if (enabled("kiln-recognize-patterns")) {
    pm.addNestedPass<func::FuncOp>(kiln::createRecognizePatternsPass());
    pm.addPass(createCanonicalizerPass());
  }
  if (failed(pm.run(*module)))
    return 1;
  // --weights: constant matmul/gemm weights onto block-quantized codes.
  if (o.weightBits) {
    weightsSummary = {o.weightBits, o.weightBlock, 0, 0};
    module->walk([&](Operation *op) {
      weightsSummary.products += isa<kiln::MatMulOp, kiln::GemmOp>(op);
    });
    PassManager weights(&ctx);
    instrument(weights);
    kiln::QuantizeWeightsPassOptions wo;
    wo.bits = o.weightBits;
    wo.blockSize = o.weightBlock;
    weights.addNestedPass<func::FuncOp>(kiln::createQuantizeWeightsPass(wo));
    if (failed(weights.run(*module)))
      return 1;
    module->walk([&](kiln::MatMulNBitsOp) { ++weightsSummary.quantized; });
  }
  // --precision=int8: the products quantized as a QDQ model's (their
  // activations' ranges measured on the calibration inputs).
  calibrate::Outputs reference;
  if (o.precision == Precision::Int8)
    if (int rc = quantizeInt8(reference))
      return rc;
  PassManager integers(&ctx);
  instrument(integers);
  // QDQ matrix products onto the CPU's 8-bit kernels.
  if (!o.cudaTarget() && enabled("kiln-integer-contractions")) {
    integers.addNestedPass<func::FuncOp>(kiln::createIntegerContractionsPass());
    integers.addPass(createCanonicalizerPass());
  }
  // 8-bit products without an 8-bit kernel as exact f32 ones (all of them
  // on the CUDA targets), at every level: the canonicalizer has folded the
  // weights by now.
  kiln::ExpandIntegerProductsPassOptions integerOptions;
  integerOptions.all = o.cudaTarget();
  integers.addNestedPass<func::FuncOp>(kiln::createExpandIntegerProductsPass(integerOptions));
  integers.addPass(createCanonicalizerPass());
  if (failed(integers.run(*module)))
    return 1;
  if (o.precision == Precision::Int8)
    return measureInt8(reference);
  return kContinue;
}

/// --precision=int8: a trial fp32 build that also returns the lhs of every
/// candidate product (kiln::isInt8Candidate) runs on the calibration inputs;
/// each product gets its lhs's range (kiln.int8_range) and
/// kiln-quantize-int8 writes the quantization. `reference` gets the fp32
/// build's outputs. Returns an exit code (0: go on).
int Compilation::quantizeInt8(calibrate::Outputs &reference) {
  SmallVector<Operation *> products;
  module->walk([&](Operation *op) {
    if (kiln::isInt8Candidate(op))
      products.push_back(op);
  });
  precisionSummary.mode = precisionName(Precision::Int8);
  precisionSummary.contractions = static_cast<int64_t>(products.size());
  if (products.empty()) {
    precisionSummary.inputs = "no inputs (nothing to measure)";
    llvm::errs() << o.input << ": warning: --precision=int8: the model has no Gemm, MatMul "
                 << "or Conv with constant weights to quantize; it stays fp32\n";
    return 0;
  }
  std::string error;
  if (int rc = makeCalibrationDir())
    return rc;
  // Each sample's inputs in a folder of its own; the first is the one the
  // int8 build is measured on.
  std::vector<std::vector<std::string>> samples;
  std::vector<std::vector<std::string>> sampleArgs;
  if (!calibrate::splitSamples(o.calibrate, samples, error))
    return fail(o.input + ": " + error);
  for (size_t k = 0; k < samples.size(); ++k) {
    std::string dir = calibrationDir + "/sample" + std::to_string(k), what;
    if (llvm::sys::fs::create_directory(dir))
      return fail("--precision=int8: cannot create " + dir);
    sampleArgs.emplace_back();
    if (!calibrate::prepareInputs(*module, samples[k], dir, sampleArgs.back(), what, error))
      return fail(o.input + ": " + error);
    if (k == 0)
      precisionSummary.inputs = what;
  }
  calibrationArgs = sampleArgs.front();
  if (samples.size() > 1)
    precisionSummary.inputs = std::to_string(samples.size()) + " samples of " +
                              precisionSummary.inputs + " (the error on the first)";
  // The copy returns each product's lhs after the model's own outputs (and
  // before the hidden sizes of data-dependent symbols).
  OwningOpRef<ModuleOp> copy = module->clone();
  SmallVector<Operation *> copied;
  copy->walk([&](Operation *op) {
    if (kiln::isInt8Candidate(op))
      copied.push_back(op);
  });
  const std::string prefix = "__kiln_int8_lhs_";
  for (auto [i, op] : llvm::enumerate(copied)) {
    auto fn = op->getParentOfType<func::FuncOp>();
    auto ret = llvm::cast<func::ReturnOp>(fn.getBody().back().getTerminator());
    unsigned at = 0;
    while (at < fn.getNumResults() && !fn.getResultAttr(at, kiln::attr::kSymbolOutput))
      ++at;
    Value lhs = op->getOperand(0);
    OpBuilder b(op);
    auto attrs = b.getDictionaryAttr(
        {b.getNamedAttr(kiln::attr::kName, b.getStringAttr(prefix + std::to_string(i)))});
    if (failed(fn.insertResult(at, lhs.getType(), attrs)))
      return fail(o.input + ": --precision=int8: cannot return a product's input");
    ret->insertOperands(at, lhs);
  }
  std::string so = calibrationDir + "/fp32_ranges.so";
  if (Compilation(trialOptions(o, Precision::Fp32, {}, so), ctx, std::move(copy)).runTrial() != 0)
    return fail(o.input + ": --precision=int8: the calibration build failed (diagnosed above)");
  precisionSummary.trials = 1;
  // Each product's range over every sample's values, by --calibrate-method.
  std::string methodError;
  auto method = calibrate::parseRangeMethod(o.calibrateMethod, methodError);
  if (!method)
    return fail(methodError);
  precisionSummary.rangeMethod = calibrate::rangeMethodName(*method);
  std::vector<std::vector<float>> seen(products.size());
  for (size_t k = 0; k < sampleArgs.size(); ++k) {
    calibrate::Outputs measured;
    if (!calibrate::runBuild(calibrationRun(), so, sampleArgs[k], calibrationDir,
                             "fp32_ranges" + std::to_string(k), measured, error,
                             /*keepSo=*/k + 1 < sampleArgs.size()))
      return fail(o.input + ": --precision=int8: " + error);
    for (size_t j = 0; j < measured.names.size(); ++j) {
      llvm::StringRef name = measured.names[j];
      if (!name.consume_front(prefix)) {
        if (k == 0) {
          reference.names.push_back(measured.names[j]);
          reference.shapes.push_back(measured.shapes[j]);
          reference.values.push_back(std::move(measured.values[j]));
        }
        continue;
      }
      size_t i;
      if (name.getAsInteger(10, i) || i >= products.size())
        continue;
      seen[i].insert(seen[i].end(), measured.values[j].begin(), measured.values[j].end());
    }
  }
  std::vector<float> lo(products.size()), hi(products.size());
  for (size_t i = 0; i < products.size(); ++i) {
    std::tie(lo[i], hi[i]) = calibrate::activationRange(seen[i], *method);
    std::vector<float>().swap(seen[i]);
    std::vector<std::string> nodes;
    codegen::kernels::collectNodeNames(products[i]->getLoc(), nodes);
    precisionSummary.ranges.push_back(
        {nodes.empty() ? std::string() : nodes.front(), lo[i], hi[i]});
  }
  OpBuilder b(&ctx);
  for (size_t i = 0; i < products.size(); ++i)
    if (lo[i] <= hi[i]) // (no finite value: the product stays f32)
      products[i]->setAttr(kiln::attr::kInt8Range, b.getDenseF32ArrayAttr({lo[i], hi[i]}));
  PassManager pm(&ctx);
  instrument(pm);
  pm.addNestedPass<func::FuncOp>(kiln::createQuantizeInt8Pass());
  pm.addPass(createCanonicalizerPass());
  return failed(pm.run(*module)) ? 1 : 0;
}

/// --precision=int8: the quantized build against the fp32 one on the
/// calibration inputs, for the report.
int Compilation::measureInt8(const calibrate::Outputs &reference) {
  // The products on 8-bit kernels, and the direct (depthwise) convs that
  // compute in f32 on the 8-bit activation, cast(q) - zero.
  auto readsBytes = [](kiln::ConvOp conv) {
    Value x = conv.getInput();
    if (auto sub = x.getDefiningOp<kiln::SubOp>())
      x = sub.getLhs();
    auto cast = x.getDefiningOp<kiln::CastOp>();
    return cast && getElementTypeOrSelf(cast.getInput().getType()).isInteger(8);
  };
  precisionSummary.lowered = 0;
  module->walk([&](Operation *op) {
    auto conv = dyn_cast<kiln::ConvOp>(op);
    if (isa<kiln::MatMulIntegerOp, kiln::ConvIntegerOp>(op) || (conv && readsBytes(conv)))
      ++precisionSummary.lowered;
  });
  if (precisionSummary.contractions == 0)
    return kContinue;
  std::string so = calibrationDir + "/int8.so", error;
  calibrate::Outputs got;
  if (Compilation(trialOptions(o, Precision::Fp32, {}, so), ctx, module->clone()).runTrial() != 0)
    return fail(o.input + ": --precision=int8: the int8 build failed (diagnosed above)");
  if (!calibrate::runBuild(calibrationRun(), so, calibrationArgs, calibrationDir, "int8", got,
                           error))
    return fail(o.input + ": --precision=int8: " + error);
  ++precisionSummary.trials;
  calibrate::Error e = calibrate::compare(got, reference);
  precisionSummary.relError = e.rel;
  precisionSummary.maxAbsError = e.maxAbs;
  precisionSummary.top1Agree = e.top1Agree;
  precisionSummary.top1Rows = e.top1Rows;
  return kContinue;
}

int Compilation::makeCalibrationDir() {
  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("kiln-calibrate", dir))
    return fail("--precision: cannot create a temporary directory");
  calibrationDir = dir.str().str();
  return 0;
}

int Compilation::precisionAndTypes() {
  // --precision=auto, or a precision measured with --calibrate: trial builds
  // of this same model run on the calibration inputs against the fp32 build.
  precision = o.precision;
  keepIndex = o.keepFp32Index;
  if (precision == Precision::Auto ||
      (!o.calibrate.empty() && precision != Precision::Fp32 && precision != Precision::Int8)) {
    if (int rc = calibratePrecision())
      return rc;
  }

  PassManager pm2(&ctx);
  instrument(pm2);
  if (precision != Precision::Fp32 && precision != Precision::Int8) {
    kiln::LowerPrecisionPassOptions lp;
    lp.precision = precisionName(precision);
    lp.tensorCores = o.cudaTarget();
    lp.keepFp32.assign(o.keepFp32.begin(), o.keepFp32.end());
    lp.keepIndex.assign(keepIndex.begin(), keepIndex.end());
    PassManager lowerPass(&ctx);
    instrument(lowerPass);
    lowerPass.addNestedPass<func::FuncOp>(kiln::createLowerPrecisionPass(lp));
    if (failed(lowerPass.run(*module)))
      return 1;
    // (Counted before the canonicalizer merges products that became equal.)
    if (!precisionSummary.mode.empty()) {
      precisionSummary.lowered = 0;
      module->walk([&](Operation *op) {
        precisionSummary.lowered += op->hasAttr(kiln::attr::kPrecision);
      });
    }
    pm2.addPass(createCanonicalizerPass());
  }
  // f16/bf16 arithmetic in f32 between casts, at every level, after the
  // patterns have seen the model's own ops (the CUDA target keeps f16/bf16
  // contractions for its tensor cores).
  kiln::LegalizeTypesPassOptions typeOptions;
  typeOptions.tensorCores = o.cudaTarget();
  pm2.addNestedPass<func::FuncOp>(kiln::createLegalizeTypesPass(typeOptions));
  pm2.addPass(createCanonicalizerPass());
  if (failed(pm2.run(*module)))
    return 1;
  return kContinue;
}

/// --precision=auto: chooses which contractions compute in bf16 (the rest
/// fp32) so that every output stays within --tolerance of the fp32 build on
/// the calibration inputs; with bf16/fp16 and --calibrate, measures that
/// build. The module is after the passes before kiln-lower-precision (its
/// contractions are the ones the pass counts). Returns an exit code.
int Compilation::calibratePrecision() {
  int64_t contractions = 0;
  module->walk([&](func::FuncOp fn) {
    for (Operation &op : fn.getBody().getOps())
      if (kiln::isLowerableContraction(&op, o.cudaTarget()))
        ++contractions;
  });
  std::string run = (llvm::sys::path::parent_path(toolPath) + "/kiln-run").str();
  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("kiln-calibrate", dir))
    return fail("--precision: cannot create a temporary directory");
  std::string tmp = dir.str().str(), error;
  llvm::scope_exit cleanup([&] { llvm::sys::fs::remove_directories(tmp); });
  std::vector<std::string> runArgs;
  if (!calibrate::prepareInputs(*module, o.calibrate, tmp, runArgs, precisionSummary.inputs,
                                error))
    return fail(o.input + ": " + error);
  // A trial: this module from here on at `p` with the contractions in `k`
  // kept fp32, built into a .so in `tmp` and run on the inputs.
  auto trialBuild = [&](Precision p, const std::set<int64_t> &k, const std::string &name,
                        calibrate::Outputs &outputs) {
    std::string so = tmp + "/" + name + ".so";
    CompileOptions trial = trialOptions(o, p, k, so);
    if (Compilation(trial, ctx, module->clone()).runTrial() != 0) {
      error = "the " + name + " build failed (diagnosed above)";
      return false;
    }
    return calibrate::runBuild(run, so, runArgs, tmp, name, outputs, error);
  };
  Precision low = precision == Precision::Fp16 ? Precision::Fp16 : Precision::Bf16;
  std::set<int64_t> keep(keepIndex.begin(), keepIndex.end());
  calibrate::Outputs reference, first;
  if (!trialBuild(Precision::Fp32, {}, "fp32", reference) ||
      !trialBuild(low, keep, "trial0", first))
    return fail(o.input + ": a calibration build: " + error);
  std::map<std::set<int64_t>, calibrate::Error> measured{
      {keep, calibrate::compare(first, reference)}};
  precisionSummary.mode = precisionName(precision);
  precisionSummary.tolerance = precision == Precision::Auto ? o.tolerance : 0.0;
  precisionSummary.contractions = contractions;
  precisionSummary.trials = 2;
  int trial = 1;
  auto measure = [&](const std::set<int64_t> &k) -> std::optional<calibrate::Error> {
    if (auto it = measured.find(k); it != measured.end())
      return it->second;
    calibrate::Outputs got;
    ++precisionSummary.trials;
    if (!trialBuild(low, k, "trial" + std::to_string(trial++), got))
      return std::nullopt;
    return measured[k] = calibrate::compare(got, reference);
  };
  calibrate::Error chosen;
  if (precision == Precision::Auto) {
    auto r = calibrate::search(contractions, o.tolerance, o.autoTrials, measure);
    if (r.failed)
      return fail(o.input + ": a --precision=auto trial build: " + error);
    keep = r.keep;
    chosen = r.chosen;
    precision = static_cast<int64_t>(keep.size()) == contractions ? Precision::Fp32
                                                                  : Precision::Bf16;
  } else {
    std::optional<calibrate::Error> e = measure(keep);
    if (!e)
      return fail(o.input + ": the " + precisionName(precision) + " calibration build: " + error);
    chosen = *e;
  }
  keepIndex.assign(keep.begin(), keep.end());
  precisionSummary.lowered = contractions - static_cast<int64_t>(keep.size());
  precisionSummary.relError = chosen.rel;
  precisionSummary.maxAbsError = chosen.maxAbs;
  precisionSummary.top1Agree = chosen.top1Agree;
  precisionSummary.top1Rows = chosen.top1Rows;
  return 0;
}

LogicalResult Compilation::selectLayout(Layout regionLayout) {
  PassManager pm3(&ctx);
  instrument(pm3);
  if (chooseLayout || o.ioLayout == IoLayout::Nhwc) {
    kiln::SelectLayoutPassOptions layoutOptions;
    layoutOptions.layout = layoutName(regionLayout);
    layoutOptions.ioLayout = ioLayoutName(o.ioLayout);
    layoutOptions.winograd = !o.disabled(codegen::kWinogradSwitch);
    pm3.addNestedPass<func::FuncOp>(kiln::createSelectLayoutPass(layoutOptions));
    pm3.addPass(createCanonicalizerPass());
  }
  pm3.addPass(createCSEPass());
  return pm3.run(*module);
}

int Compilation::layoutFusionMemory() {
  // The interface layout is a contract and holds at every level; the
  // regions' layout is an optimization.
  // The CUDA target's convolutions are NCHW implicit GEMMs: its regions
  // stay NCHW unless the user asks for NHWC.
  chooseLayout = enabled("kiln-select-layout") && o.layout != Layout::Nchw &&
                 !(o.cudaTarget() && o.layout == Layout::Auto);
  // --max-memory with --layout=auto: NHWC regions have no convolution
  // prologues to recompute and no concats written in place, so where their
  // plan cannot meet the budget every region goes NCHW instead (from a copy
  // of the module before the layout pass).
  if (o.maxMemory >= 0 && chooseLayout && o.layout == Layout::Auto)
    beforeLayout = module->clone();
  if (failed(selectLayout(chooseLayout ? o.layout : Layout::Nchw)))
    return 1;
  if (beforeLayout) {
    bool nhwc = false;
    module->walk([&](Operation *op) {
      nhwc |= kiln::attr::isChannelsLast(op);
    });
    if (!nhwc)
      beforeLayout = nullptr;
  }
  int fit = fuseAndFit();
  if (fit == 2) {
    module = std::move(beforeLayout);
    remat = codegen::RematSummary();
    remat.nchwForMemory = true;
    if (failed(selectLayout(Layout::Nchw)))
      return 1;
    fit = fuseAndFit();
  }
  if (fit != 0)
    return fit;
  if (o.emit == Emit::Mlir)
    return printTo([&](llvm::raw_ostream &os) { module->print(os); });
  return kContinue;
}

/// Fusion, then --max-memory's search. 0: done; 1: failed (diagnosed); 2:
/// the budget cannot be met with NHWC regions and beforeLayout is there to
/// retry with NCHW ones.
int Compilation::fuseAndFit() {
  // The report states what fusion saved: lower an unfused copy as well.
  if (!o.report.empty() && enabled("kiln-fuse")) {
    OwningOpRef<ModuleOp> copy = module->clone();
    unfused = codegen::Program();
    unfused.name = "unfused";
    unfused.options = codegenOptions(o);
    haveUnfused = succeeded(codegen::lowerToKernels(*copy, unfused));
  }
  if (enabled("kiln-fuse")) {
    PassManager fuse(&ctx);
    instrument(fuse);
    kiln::FusePassOptions fo;
    fo.byteConvs = !o.cudaTarget(); // (the CPU's depthwise kernel)
    fuse.addNestedPass<func::FuncOp>(kiln::createFusePass(fo));
    if (failed(fuse.run(*module)))
      return 1;
  }
  int64_t budget = o.maxMemory;
  if (budget < 0)
    return 0;
  // --max-memory: the fewest recomputations (cheapest first) whose plan
  // fits. Each trial lowers and plans a copy of the module.
  remat.budget = budget;
  auto arenaWith = [&](int64_t limit, int64_t &bytes) -> LogicalResult {
    OwningOpRef<ModuleOp> copy = module->clone();
    if (limit != 0) {
      PassManager pm(&ctx);
      kiln::RematerializePassOptions ro;
      ro.limit = limit;
      pm.addNestedPass<func::FuncOp>(kiln::createRematerializePass(ro));
      if (failed(pm.run(*copy)))
        return failure();
    }
    codegen::Program trial;
    trial.name = "trial";
    trial.options = codegenOptions(o);
    if (failed(codegen::lowerToKernels(*copy, trial)))
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
  if (!o.cudaTarget() && enabled("kiln-fuse") && enabled("kiln-rematerialize"))
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
      std::string how = std::to_string(available) + " value" + (available == 1 ? "" : "s") +
                        " recomputed; " + std::to_string(without) + " bytes without";
      if (nhwcSmallest > 0) { // (this was the NCHW retry)
        how = "NCHW regions: " + std::to_string(smallest) + " bytes, " + how +
              "; the NHWC regions --layout=auto chose: " + std::to_string(nhwcSmallest) +
              " bytes";
        smallest = std::min(smallest, nhwcSmallest);
      }
      return fail(llvm::Twine(o.input) + ": --max-memory=" + o.maxMemoryText + " (" +
                  llvm::Twine(budget) + " bytes) cannot be met: the smallest arena "
                  "kiln-rematerialize reaches is " + llvm::Twine(smallest) + " bytes (" + how +
                  ")");
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
    PassManager pm(&ctx);
    instrument(pm);
    kiln::RematerializePassOptions ro;
    ro.limit = lo;
    pm.addNestedPass<func::FuncOp>(kiln::createRematerializePass(ro));
    if (failed(pm.run(*module)))
      return 1;
    remat.applied = lo;
  }
  remat.candidates = available;
  return 0;
}

/// --autotune (Autotune.h): the module is ready for the final lowering;
/// `tuned` gets the ops whose measured choice is not the default. Returns
/// an exit code.
int Compilation::runAutotune(std::map<int64_t, codegen::OpTuning> &tuned,
                             codegen::AutotuneSummary &summary) {
  autotune::Options ao;
  ao.kilnRun = (llvm::sys::path::parent_path(toolPath) + "/kiln-run").str();
  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("kiln-autotune", dir))
    return fail("--autotune: cannot create a temporary directory");
  ao.dir = dir.str().str();
  llvm::scope_exit cleanup([&] { llvm::sys::fs::remove_directories(ao.dir); });
  std::string error, what;
  if (!calibrate::prepareInputs(*module, o.calibrate, ao.dir, ao.runArgs, what, error,
                                /*zerosForOthers=*/true))
    return fail(o.input + ": --autotune: " + error);
  ao.cachePath = o.autotuneCache == "none" ? ""
                 : o.autotuneCache.empty() ? autotune::defaultCachePath()
                                           : o.autotuneCache;
  ao.cpuKey = autotune::cpuKey(o.mcpu);
  ao.threads = o.autotuneThreads > 0 ? o.autotuneThreads
                                     : std::max(1u, std::thread::hardware_concurrency());
  ao.kBlock = o.kBlock == 0;
  ao.winograd = !o.disabled(codegen::kWinogradSwitch);
  if (!ao.kBlock && !ao.winograd) {
    llvm::errs() << "kiln-compile: autotune: nothing to choose (--k-block and "
                    "--disable-pass=kiln-winograd fix both choices)\n";
    return 0;
  }
  auto lowerTrial = [&](const codegen::OpTuning &all, codegen::Program &out, std::string &err) {
    OwningOpRef<ModuleOp> copy = module->clone();
    out.name = "autotune";
    out.options = codegenOptions(o);
    out.options.tuneAll = all;
    if (failed(codegen::lowerToKernels(*copy, out))) {
      err = "lowering a trial build failed";
      return false;
    }
    return true;
  };
  auto build = [&](codegen::Program &p, const std::string &path, std::string &err) {
    CompileOptions trial = o;
    trial.output = path;
    trial.emit = Emit::Artifact;
    if (int rc = writeArtifact(trial, p, codegen::CpuOptions(), ""); rc != 0) {
      err = rc == kOptimizerBroke ? "LLVM's optimizer produced invalid IR in a trial build"
                                  : "a trial build failed (diagnosed above)";
      return false;
    }
    return true;
  };
  if (!autotune::tune(ao, lowerTrial, build, tuned, summary, error))
    return fail(o.input + ": --autotune: " + error);
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

bool Compilation::writeReport(const pipeline::CudaReport *cuda) {
  std::string error;
  if (!o.report.empty() &&
      !pipeline::writeReport(o.report, program, haveUnfused ? &unfused : nullptr, error, cuda))
    return fail(error) == 0;
  return true;
}

int Compilation::lower() {
  // --autotune: trial builds of this module, one per combination of the
  // choices, timed here; the final lowering takes each op's fastest.
  std::map<int64_t, codegen::OpTuning> tuned;
  codegen::AutotuneSummary autotuneSummary;
  if (o.autotune) {
    if (int rc = runAutotune(tuned, autotuneSummary))
      return rc;
  }
  program.remat = remat;
  program.precision = precisionSummary;
  program.weightQuantization = weightsSummary;
  program.name = o.name.empty() ? (o.emit == Emit::Artifact
                                       ? pipeline::modelNameFromPath(o.output)
                                       : "model")
                                : pipeline::modelNameFromPath(o.name + ".x");
  program.options = codegenOptions(o);
  program.options.tuned = std::move(tuned);
  if (failed(codegen::lowerToKernels(*module, program)))
    return 1;
  if (autotuneSummary.on) {
    program.autotune = std::move(autotuneSummary);
    autotune::nameKernels(program.autotune, program);
  }
  if (failed(verify(*program.kernels)))
    return fail("internal error: the generated kernels do not verify");
  if (o.maxMemory >= 0 && program.arenaBytes > o.maxMemory) // (the search's own plan)
    return fail(llvm::Twine(o.input) + ": internal error: the arena (" +
                llvm::Twine(program.arenaBytes) + " bytes) exceeds --max-memory");
  if ((!o.cudaTarget() || o.emit == Emit::Kernels) && !writeReport(nullptr))
    return 1;
  if (o.emit == Emit::Kernels)
    return printTo([&](llvm::raw_ostream &os) { program.kernels->print(os); });
  if (o.emit == Emit::MemoryPlan)
    return printTo([&](llvm::raw_ostream &os) { codegen::printMemoryPlan(program, os); });
  return kContinue;
}

/// The CUDA targets: the kernels as CUDA C++, compiled by NVRTC for each
/// architecture (the images go into `cpu` for --target=cuda), ptxas's
/// resources into the report.
int Compilation::compileCuda(codegen::CpuOptions &cpu) {
  std::string error;
  cudaSource = cuda::emitCudaSource(program, error);
  if (cudaSource.empty())
    return fail(o.input + ": " + error);
  std::vector<std::string> archs(o.cudaArchs.begin(), o.cudaArchs.end());
  if (archs.empty() && o.target == Target::Cuda && o.emit == Emit::Artifact) {
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
  if (!o.report.empty() && llvm::none_of(archs, [](const std::string &a) {
        return llvm::StringRef(a).starts_with("sm_");
      })) {
    archs.push_back("sm_90");
    archNumbers.push_back(90);
    reportOnly = true;
  }
  auto results = cuda::compileAll(cudaSource, program.name + ".cu", archs);
  pipeline::CudaReport report;
  report.target = targetName(o.target);
  for (auto [i, r] : llvm::enumerate(results)) {
    if (!r.ok)
      return fail("NVRTC failed for " + archs[i] + " (the generated CUDA C++ is written "
                  "by --emit=cuda-src):\n" + r.log);
    bool spilled = false;
    for (const cuda::KernelResources &k : r.kernels)
      if (k.spillStores || k.spillLoads) {
        llvm::errs() << "kiln-compile: " << (o.cudaNoSpills ? "error" : "warning") << ": "
                     << archs[i] << ": kernel " << k.name << " spills (" << k.spillStores
                     << " bytes stored, " << k.spillLoads << " loaded)\n";
        spilled = true;
      }
    if (spilled && o.cudaNoSpills)
      return 1;
    if (report.resourcesArch.empty() && !r.kernels.empty()) {
      report.resourcesArch = archs[i];
      for (const cuda::KernelResources &k : r.kernels)
        report.resources[k.name] = {k.registers, k.spillStores, k.spillLoads, k.stackBytes,
                                    k.sharedBytes};
    }
    if (o.target == Target::Cuda && !(reportOnly && i + 1 == results.size()))
      cpu.cudaImages.push_back({archNumbers[i], llvm::StringRef(archs[i]).starts_with("compute_"),
                                std::string(r.binary.begin(), r.binary.end())});
  }
  if (!writeReport(&report))
    return 1;
  if (o.emit == Emit::CudaSrc)
    return printTo([&](llvm::raw_ostream &os) { os << cudaSource; });
  if (o.wantObject() && o.target == Target::CudaEmu)
    return fail("--target=cuda-emu builds a .so (the emulation needs the host C++ "
                "compiler's object linked in)");
  return kContinue;
}

int Compilation::emitArtifact() {
  codegen::CpuOptions cpu;
  if (o.cudaTarget())
    if (int rc = compileCuda(cpu); rc != kContinue)
      return rc;
  return writeArtifact(o, program, std::move(cpu), cudaSource);
}

} // namespace

int compileModel(const CompileOptions &o, const std::string &toolPath) {
  int rc = Compilation(o, toolPath).run();
  if (rc != kOptimizerBroke)
    return rc;
  // (the lowering rewrote the Program in place: the build starts again)
  llvm::errs() << "kiln-compile: warning: LLVM's SLP vectorizer produced invalid IR for "
                  "--mcpu="
               << o.mcpu << " (an LLVM bug); building again without it\n";
  CompileOptions again = o;
  again.slpVectorize = false;
  rc = Compilation(again, toolPath).run();
  return rc == kOptimizerBroke ? fail("LLVM's optimizer produced invalid IR") : rc;
}

} // namespace kiln::driver
