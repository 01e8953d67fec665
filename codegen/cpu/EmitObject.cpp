//===- EmitObject.cpp - kernels -> LLVM, host schedule, object code --------===//
//
// The kernel module is lowered with upstream MLIR conversions (scf -> cf,
// memref/arith/math/func -> llvm, bare-pointer calling convention), then
// translated to LLVM IR. The host side (weights, per-kernel entry thunks,
// the run function and the model descriptor) is written directly with
// IRBuilder. LLVM's O3 pipeline and the x86 backend produce the object.
//
//===----------------------------------------------------------------------===//
#include "codegen/cpu/EmitObject.h"
#include "kiln/runtime.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/Verifier.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

using namespace mlir;
namespace kiln::codegen {
namespace {

/// Weights of at least a huge page start on one, so that the runtime can
/// back them with transparent huge pages (kiln_model_desc::weights).
constexpr uint64_t kHugePage = uint64_t(2) << 20;

std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const CpuOptions &o,
                                                       std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  std::string cpu = o.mcpu, features;
  if (cpu.empty() || cpu == "native") {
    // The host's feature list, not its name: the name can lag the features.
    cpu = llvm::sys::getHostCPUName().str();
    llvm::SubtargetFeatures f;
    for (auto &[name, on] : llvm::sys::getHostCPUFeatures())
      f.AddFeature(name, on);
    features = f.getString();
  }
  // No vector gathers or scatters: they are slow on Zen 4 (and on Intel
  // cores since the Gather Data Sampling fix), and without this LLVM's loop
  // vectorizer took them over plain vectors when it had unrolled a short
  // channel loop (EfficientNet-B0's squeeze-excite scale over 32 channels:
  // 96 gathers and scatters, 0.33 ms on Zen 4; 0.02 ms as plain vectors).
  if (triple.isX86())
    features += std::string(features.empty() ? "" : ",") + "+prefer-no-gather,+prefer-no-scatter";
  // Full-width vectors where the loop vectorizer chooses (the elementwise
  // and epilogue loops): LLVM's Intel server CPUs prefer 256 bits, against
  // the frequency drop of older cores; on a 2-core Xeon (AVX512-VNNI) the
  // int8 BERT layer's GELU chains and products' epilogues ran in 8 lanes
  // instead of 16 and the layer took 1.24x longer. (Where the CPU has no
  // AVX-512 this changes nothing.)
  if (triple.isX86())
    features += ",-prefer-256-bit";
  {
    std::unique_ptr<llvm::MCSubtargetInfo> sti(
        target->createMCSubtargetInfo(triple, "", ""));
    if (!sti || !sti->isCPUStringValid(cpu)) {
      error = "unknown CPU '" + cpu + "' (--mcpu); try native, x86-64, x86-64-v3, "
              "skylake-avx512, sapphirerapids";
      return nullptr;
    }
  }
  llvm::TargetOptions opts;
  auto level = o.optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
               : o.optLevel == 2 ? llvm::CodeGenOptLevel::Default
               : o.optLevel == 1 ? llvm::CodeGenOptLevel::Less
                                 : llvm::CodeGenOptLevel::None;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, cpu, features, opts, llvm::Reloc::PIC_, std::nullopt, level));
  if (!tm)
    error = "cannot create a target machine for CPU '" + cpu + "'";
  return tm;
}

/// Whether the target (--mcpu, or the host's feature list) has `feature`
/// ("+avx512bf16").
bool targetHas(const CpuOptions &o, llvm::StringRef feature) {
  std::string error;
  auto tm = makeTargetMachine(o, error);
  return tm && tm->getMCSubtargetInfo()->checkFeatures(feature);
}

/// The f32 constant v as a value of type ty (f32 or a vector of f32).
Value f32Like(OpBuilder &b, Location loc, Type ty, double v) {
  auto a = b.getF32FloatAttr(float(v));
  if (auto vt = llvm::dyn_cast<VectorType>(ty))
    return arith::ConstantOp::create(b, loc, ty, DenseElementsAttr::get(vt, a));
  return arith::ConstantOp::create(b, loc, ty, a);
}

/// exp(x) for f32 scalars and vectors in 14 operations (MLIR's polynomial
/// approximation takes about 22): Cody-Waite reduction x = n ln2 + r with
/// |r| <= ln2/2, a degree-6 polynomial fitted for relative error (at most
/// 1.03 ulp over the range, against float64), and 2^n built in the
/// exponent bits. n comes from
/// the "magic number" add: t = x log2(e) + (1.5 * 2^23 + 126) rounds to an
/// integer whose low bits hold n + 126, so t's bits shifted left by 23 are
/// 2^(n-1), and the polynomial carries the other factor of 2. With x clamped
/// to [-87.6, 88.8], n - 1 + 127 stays within [0, 254]: results over
/// FLT_MAX become +inf (exp(+inf) = +inf), those under 2^-125 (x below about
/// -87.0) flush to zero (exp(-inf) = 0). NaN passes through the clamps.
Value expandExpF32(OpBuilder &b, Location loc, Value x) {
  Type ty = x.getType();
  auto vt = llvm::dyn_cast<VectorType>(ty);
  Type i32 = b.getI32Type();
  Type ity = vt ? Type(VectorType::get(vt.getShape(), i32)) : i32;
  auto f = [&](double v) { return f32Like(b, loc, ty, v); };
  auto clamp = [&](Value v, double bound, arith::CmpFPredicate beyond) {
    // select(v beyond bound, bound, v): false for NaN, which stays.
    Value c = f(bound);
    Value out = arith::CmpFOp::create(b, loc, beyond, v, c);
    return arith::SelectOp::create(b, loc, out, c, v).getResult();
  };
  auto fma = [&](Value a, Value m, Value c) {
    return math::FmaOp::create(b, loc, a, m, c).getResult();
  };
  Value xc = clamp(clamp(x, -87.6, arith::CmpFPredicate::OLT), 88.8,
                   arith::CmpFPredicate::OGT);
  Value magic = f(12582912.0 + 126.0);
  Value t = fma(xc, f(1.4426950408889634), magic);
  Value n = arith::SubFOp::create(b, loc, t, magic);
  Value r = fma(n, f(-0.693359375), xc);               // ln 2, high bits:
  r = fma(n, f(2.12194440054690583e-4), r);            // n * hi exact
  // 2 exp(r) ~ 2 (1 + r + 0.49999994 r^2 + ...): relative error 2e-9.
  static const double kCoef[] = {0.0013843559427186847, 0.008374235592782497,
                                 0.041668009012937546, 0.16666430234909058,
                                 0.4999999403953552, 1.0, 1.0};
  Value p = f(2 * kCoef[0]);
  for (double c : llvm::ArrayRef(kCoef).drop_front())
    p = fma(p, r, f(2 * c));
  Value bits = arith::BitcastOp::create(b, loc, ity, t);
  TypedAttr shAttr = b.getI32IntegerAttr(23);
  if (vt)
    shAttr = DenseElementsAttr::get(llvm::cast<VectorType>(ity), shAttr);
  Value sh = arith::ConstantOp::create(b, loc, ity, shAttr);
  Value scale = arith::BitcastOp::create(b, loc, ty, arith::ShLIOp::create(b, loc, bits, sh));
  return arith::MulFOp::create(b, loc, p, scale);
}

/// erf(x) for f32 scalars and vectors as an odd rational function, x P(x^2)
/// / Q(x^2) with P and Q of degree 5, fitted for relative error on [0, 3.925]
/// (beyond which erf rounds to 1): at most 5.5 ulp and 3.3e-7 absolute, as
/// MLIR's approximation (4.8 ulp, 2.9e-7), in 17 operations and a division
/// where that took 46 (erf over 1.2M values 0.54 -> 0.33 ms on Zen 4). x is
/// clamped to [-3.925, 3.925] (erf(+-inf) = +-1), the result to [-1, 1]
/// (rounding takes it to 1.0000002 near 3.7); NaN passes through.
Value expandErfF32(OpBuilder &b, Location loc, Value x) {
  Type ty = x.getType();
  auto f = [&](double v) { return f32Like(b, loc, ty, v); };
  auto clamp = [&](Value v, double bound) {
    // select(v beyond +-bound, +-bound, v): false for NaN, which stays.
    Value lo = f(-bound), hi = f(bound);
    v = arith::SelectOp::create(
        b, loc, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, v, lo), lo, v);
    return arith::SelectOp::create(
               b, loc, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, v, hi), hi, v)
        .getResult();
  };
  auto horner = [&](llvm::ArrayRef<double> c, Value t) {
    Value p = f(c.back());
    for (double v : llvm::reverse(c.drop_back()))
      p = math::FmaOp::create(b, loc, p, t, f(v));
    return p;
  };
  static const double kP[] = {1.1283791065216064,     0.1905660331249237,
                              0.0527661070227623,     0.003771493909880519,
                              0.0002848430594895035,  2.0465456600504695e-06};
  static const double kQ[] = {1.0,                    0.5022174715995789,
                              0.11417169123888016,    0.014981059357523918,
                              0.0011636452982202172,  3.805312007898465e-05};
  Value xc = clamp(x, 3.925);
  Value t = arith::MulFOp::create(b, loc, xc, xc);
  Value num = arith::MulFOp::create(b, loc, xc, horner(kP, t));
  return clamp(arith::DivFOp::create(b, loc, num, horner(kQ, t)), 1.0);
}

/// run(arena, inputs, outputs, pool): entry thunks `void entry(void *const
/// *args, int64_t wg)` per launch, then the launch schedule.
llvm::Function *emitCpuSchedule(Program &p, llvm::Module &m, llvm::GlobalVariable *weights) {
  llvm::LLVMContext &lc = m.getContext();
  llvm::IRBuilder<> b(lc);
  llvm::Type *ptrTy = b.getPtrTy(), *i64 = b.getInt64Ty();
  auto internal = llvm::GlobalValue::InternalLinkage;
  llvm::Module *mod = &m;
  // Entry thunks: void entry(void *const *args, int64_t wg).
  auto *entryTy = llvm::FunctionType::get(b.getVoidTy(), {ptrTy, i64}, false);
  auto *pforTy = llvm::FunctionType::get(b.getVoidTy(), {ptrTy, ptrTy, ptrTy, i64}, false);
  llvm::FunctionCallee pfor = mod->getOrInsertFunction("kiln_rt_parallel_for", pforTy);
  std::vector<llvm::Function *> entries;
  size_t maxArgs = 1;
  for (const Launch &l : p.launches) {
    llvm::Function *k = mod->getFunction(l.kernel);
    auto *e = llvm::Function::Create(entryTy, internal, l.kernel + "_entry", *mod);
    b.SetInsertPoint(llvm::BasicBlock::Create(lc, "entry", e));
    std::vector<llvm::Value *> args;
    for (size_t i = 0; i < l.buffers.size(); ++i)
      args.push_back(b.CreateLoad(ptrTy, b.CreateConstGEP1_64(ptrTy, e->getArg(0), i)));
    // The run's sizes: their hidden inputs' addresses follow the buffers.
    for (size_t i = 0; i < l.sizeSymbols.size(); ++i) {
      llvm::Value *at = b.CreateLoad(
          ptrTy, b.CreateConstGEP1_64(ptrTy, e->getArg(0), l.buffers.size() + i));
      args.push_back(b.CreateLoad(i64, at));
    }
    args.push_back(e->getArg(1));
    b.CreateCall(k, args);
    b.CreateRetVoid();
    entries.push_back(e);
    maxArgs = std::max(maxArgs, l.buffers.size() + l.sizeSymbols.size());
  }

  // run(arena, inputs, outputs, pool): the launch schedule.
  auto *runTy = llvm::FunctionType::get(b.getVoidTy(), {ptrTy, ptrTy, ptrTy, ptrTy}, false);
  auto *run = llvm::Function::Create(runTy, internal, p.name + "_run_impl", *mod);
  b.SetInsertPoint(llvm::BasicBlock::Create(lc, "entry", run));
  llvm::Value *argv = b.CreateAlloca(llvm::ArrayType::get(ptrTy, maxArgs));
  for (auto [li, l] : llvm::enumerate(p.launches)) {
    for (auto [ai, id] : llvm::enumerate(l.buffers)) {
      const Buffer &buf = p.buffers[id];
      llvm::Value *ptr = nullptr;
      switch (buf.kind) {
      case Buffer::Input:
        ptr = b.CreateLoad(ptrTy, b.CreateConstGEP1_64(ptrTy, run->getArg(1), buf.index));
        break;
      case Buffer::Output:
        ptr = b.CreateLoad(ptrTy, b.CreateConstGEP1_64(ptrTy, run->getArg(2), buf.index));
        break;
      case Buffer::Constant:
        ptr = b.CreateConstGEP1_64(b.getInt8Ty(), weights, buf.offset);
        break;
      case Buffer::Arena:
        ptr = b.CreateConstGEP1_64(b.getInt8Ty(), run->getArg(0), buf.offset);
        break;
      }
      b.CreateStore(ptr, b.CreateConstGEP1_64(ptrTy, argv, ai));
    }
    auto sizeInput = [&](int sym) -> llvm::Value * {
      auto at = std::find(p.symbolInputs.begin(), p.symbolInputs.end(), sym);
      int64_t index = static_cast<int64_t>(p.inputs.size() + (at - p.symbolInputs.begin()));
      return b.CreateLoad(ptrTy, b.CreateConstGEP1_64(ptrTy, run->getArg(1), index));
    };
    for (auto [k, sym] : llvm::enumerate(l.sizeSymbols))
      b.CreateStore(sizeInput(sym), b.CreateConstGEP1_64(ptrTy, argv, l.buffers.size() + k));
    llvm::Value *workgroups = b.getInt64(l.workgroups);
    if (!l.liveTerms.empty()) {
      // Only the live part: inner * prod(ceil(num * sizes / den)), at most
      // all of them (the sizes: hidden inputs).
      llvm::Value *count = b.getInt64(l.liveInner);
      for (const Launch::LiveTerm &t : l.liveTerms) {
        llvm::Value *n = b.getInt64(t.num);
        for (int sym : t.syms)
          n = b.CreateMul(n, b.CreateLoad(i64, sizeInput(sym)));
        count = b.CreateMul(
            count, b.CreateUDiv(b.CreateAdd(n, b.getInt64(t.den - 1)), b.getInt64(t.den)));
      }
      workgroups = b.CreateBinaryIntrinsic(llvm::Intrinsic::umin, count, workgroups);
    }
    b.CreateCall(pfor, {run->getArg(3), entries[li], argv, workgroups});
  }
  b.CreateRetVoid();
  return run;
}

/// The kiln_device_program of a CUDA or CUDA-emu model: buffers, launches
/// with their geometry, and the images (CUDA) or block entry points (emu).
llvm::Constant *emitDeviceProgram(Program &p, llvm::Module &m, llvm::GlobalVariable *weights,
                                  const CpuOptions &options) {
  llvm::LLVMContext &lc = m.getContext();
  llvm::IRBuilder<> b(lc);
  llvm::Type *ptrTy = b.getPtrTy(), *i32 = b.getInt32Ty(), *i64 = b.getInt64Ty();
  auto internal = llvm::GlobalValue::InternalLinkage;
  auto global = [&](llvm::Constant *init, const std::string &name) {
    return new llvm::GlobalVariable(m, init->getType(), true, internal, init, name);
  };
  auto *bufTy = llvm::StructType::get(lc, {i32, i32, i64});
  std::vector<llvm::Constant *> bufs;
  for (const Buffer &buf : p.buffers) {
    int32_t kind = buf.kind == Buffer::Input      ? KILN_BUFFER_INPUT
                   : buf.kind == Buffer::Output   ? KILN_BUFFER_OUTPUT
                   : buf.kind == Buffer::Constant ? KILN_BUFFER_WEIGHTS
                                                  : KILN_BUFFER_ARENA;
    int64_t value = buf.kind == Buffer::Input || buf.kind == Buffer::Output ? buf.index
                                                                            : buf.offset;
    bufs.push_back(llvm::ConstantStruct::get(bufTy, {b.getInt32(kind), b.getInt32(0),
                                                     b.getInt64(value)}));
  }
  // The hidden inputs holding the run's sizes, after the buffers: the
  // sized kernels' arguments after their buffers.
  size_t sizesAt = bufs.size();
  for (size_t k = 0; k < p.symbolInputs.size(); ++k)
    bufs.push_back(llvm::ConstantStruct::get(
        bufTy, {b.getInt32(KILN_BUFFER_INPUT), b.getInt32(0),
                b.getInt64(static_cast<int64_t>(p.inputs.size() + k))}));
  auto *bufArrTy = llvm::ArrayType::get(bufTy, bufs.size());
  auto *buffers = global(llvm::ConstantArray::get(bufArrTy, bufs), p.name + "_device_buffers");

  auto *dim3Ty = llvm::ArrayType::get(i32, 3);
  auto dim3 = [&](const uint32_t *d) {
    return llvm::ConstantArray::get(dim3Ty, {b.getInt32(d[0]), b.getInt32(d[1]), b.getInt32(d[2])});
  };
  auto *launchTy = llvm::StructType::get(lc, {ptrTy, dim3Ty, dim3Ty, i32, i32, ptrTy, i64});
  std::vector<llvm::Constant *> launches, blocks;
  auto *entryTy = llvm::FunctionType::get(b.getVoidTy(), {ptrTy, i64}, false);
  for (const Launch &l : p.launches) {
    std::vector<uint32_t> ids(l.buffers.begin(), l.buffers.end());
    for (int sym : l.sizeSymbols) {
      auto at = std::find(p.symbolInputs.begin(), p.symbolInputs.end(), sym);
      ids.push_back(static_cast<uint32_t>(sizesAt + (at - p.symbolInputs.begin())));
    }
    auto *args = global(llvm::ConstantDataArray::get(lc, ids), l.kernel + "_device_args");
    launches.push_back(llvm::ConstantStruct::get(
        launchTy, {b.CreateGlobalString(l.kernel, l.kernel + "_device_name", 0, &m),
                   dim3(l.grid), dim3(l.block), b.getInt32(l.sharedBytes),
                   b.getInt32(ids.size()), args, b.getInt64(l.workgroups)}));
    if (options.device == CpuOptions::Device::CudaEmu)
      blocks.push_back(llvm::Function::Create(entryTy, llvm::GlobalValue::ExternalLinkage,
                                              l.kernel + "_block", m));
  }
  auto *launchArrTy = llvm::ArrayType::get(launchTy, launches.size());
  auto *launchTable =
      global(llvm::ConstantArray::get(launchArrTy, launches), p.name + "_device_launches");
  llvm::Constant *emuBlocks = llvm::ConstantPointerNull::get(b.getPtrTy());
  if (!blocks.empty()) {
    auto *arrTy = llvm::ArrayType::get(ptrTy, blocks.size());
    emuBlocks = global(llvm::ConstantArray::get(arrTy, blocks), p.name + "_emu_blocks");
  }

  auto *imageTy = llvm::StructType::get(lc, {i32, i32, ptrTy, i64});
  std::vector<llvm::Constant *> images;
  for (const CpuOptions::CudaImage &img : options.cudaImages) {
    auto *data = llvm::ConstantDataArray::getRaw(img.bytes, img.bytes.size(), b.getInt8Ty());
    auto *g = global(data, p.name + (img.ptx ? "_ptx_" : "_cubin_sm") + std::to_string(img.arch));
    g->setAlignment(llvm::Align(64));
    images.push_back(llvm::ConstantStruct::get(
        imageTy, {b.getInt32(img.arch), b.getInt32(img.ptx ? 1 : 0), g,
                  b.getInt64(img.bytes.size())}));
  }
  auto *imageArrTy = llvm::ArrayType::get(imageTy, images.size());
  auto *imageTable = global(llvm::ConstantArray::get(imageArrTy, images), p.name + "_cuda_images");

  auto *progTy = llvm::StructType::get(lc, {i32, i32, ptrTy, ptrTy, i32, i32, ptrTy, ptrTy, ptrTy});
  llvm::Constant *weightsC = weights ? static_cast<llvm::Constant *>(weights)
                                     : llvm::ConstantPointerNull::get(b.getPtrTy());
  return global(llvm::ConstantStruct::get(
                    progTy, {b.getInt32(bufs.size()), b.getInt32(launches.size()), buffers,
                             launchTable, b.getInt32(images.size()), b.getInt32(0), imageTable,
                             emuBlocks, weightsC}),
                p.name + "_device_program");
}

} // namespace

std::unique_ptr<llvm::Module> buildLLVMModule(Program &p, llvm::LLVMContext &lc,
                                              const CpuOptions &options,
                                              std::string &error) {
  ModuleOp kernels = *p.kernels;
  bool device = options.device != CpuOptions::Device::Cpu;
  if (device) // compiled elsewhere; keep only the schedule
    for (Operation &op : llvm::make_early_inc_range(kernels.getBody()->getOperations()))
      op.erase();
  MLIRContext *ctx = kernels.getContext();
  ctx->loadDialect<LLVM::LLVMDialect>();
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  ctx->appendDialectRegistry(registry);

  // exp, tanh, erf, log as polynomials (accurate to a few ulp): inline and
  // vectorizable, where libm calls are neither. f32 exp and erf in Kiln's
  // leaner forms (expandExpF32, expandErfF32), the rest MLIR's.
  {
    SmallVector<Operation *> fns;
    kernels.walk([&](Operation *op) {
      if (isa<math::ExpOp, math::ErfOp>(op) &&
          getElementTypeOrSelf(op->getResult(0).getType()).isF32())
        fns.push_back(op);
    });
    for (Operation *op : fns) {
      OpBuilder b(op);
      Value x = op->getOperand(0);
      op->getResult(0).replaceAllUsesWith(isa<math::ExpOp>(op)
                                              ? expandExpF32(b, op->getLoc(), x)
                                              : expandErfF32(b, op->getLoc(), x));
      op->erase();
    }
    RewritePatternSet patterns(ctx);
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      return name == "math.exp" || name == "math.tanh" || name == "math.erf" ||
             name == "math.log";
    });
    // f32 <-> bf16 in integer ops (nearest even): without AVX512-BF16 LLVM
    // would call __truncsfbf2, which older libgcc (Debian 12's) lacks. With
    // it, vectors of f32 round to bf16 as LLVM fptruncs, which become
    // VCVTNEPS2BF16 (one instruction for 16 values; like the bf16 ukernels
    // and AMX it flushes denormals to zero); scalars keep the integer form,
    // which pipelines better one value at a time.
    if (targetHas(options, "+avx512bf16")) {
      SmallVector<arith::TruncFOp> vectorTruncs;
      kernels.walk([&](arith::TruncFOp t) {
        auto vt = llvm::dyn_cast<VectorType>(t.getType());
        if (vt && vt.getElementType().isBF16() &&
            llvm::cast<VectorType>(t.getIn().getType()).getElementType().isF32())
          vectorTruncs.push_back(t);
      });
      for (arith::TruncFOp t : vectorTruncs) {
        OpBuilder b(t);
        t.replaceAllUsesWith(LLVM::FPTruncOp::create(b, t.getLoc(), t.getType(), t.getIn())
                                 .getResult());
        t.erase();
      }
    }
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(kernels, std::move(patterns)))) {
      error = "internal error: math approximation did not converge";
      return nullptr;
    }
  }

  PassManager pm(ctx);
  pm.addPass(createSCFToControlFlowPass());
  // Explicit vectors (channel loops of NHWC kernels) become LLVM vectors.
  pm.addPass(createConvertVectorToLLVMPass());
  // LLVM intrinsics where LLVM has them (exp, sqrt, ...), libm for the rest.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  ConvertFuncToLLVMPassOptions funcOpts;
  funcOpts.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcOpts));
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (failed(pm.run(kernels))) {
    error = "lowering the kernels to the LLVM dialect failed";
    return nullptr;
  }
  auto mod = translateModuleToLLVMIR(kernels, lc, p.name);
  if (!mod) {
    error = "translating the kernels to LLVM IR failed";
    return nullptr;
  }
  for (llvm::Function &f : *mod)
    if (!f.isDeclaration())
      f.setLinkage(llvm::GlobalValue::InternalLinkage);

  llvm::IRBuilder<> b(lc);
  llvm::Type *ptrTy = b.getPtrTy(), *i64 = b.getInt64Ty(), *i32 = b.getInt32Ty();
  auto internal = llvm::GlobalValue::InternalLinkage;

  // Weights: one 64-byte aligned constant blob.
  llvm::GlobalVariable *weights = nullptr;
  if (!p.weights.empty()) {
    auto *data = llvm::ConstantDataArray::getRaw(
        llvm::StringRef(p.weights.data(), p.weights.size()), p.weights.size(),
        b.getInt8Ty());
    weights = new llvm::GlobalVariable(*mod, data->getType(), true, internal,
                                       data, p.name + "_weights");
    weights->setAlignment(llvm::Align(64));
    if (p.weights.size() >= kHugePage) {
      // A section of their own: the linker pads once, before them, rather
      // than aligning all of .rodata and padding inside it as well.
      weights->setAlignment(llvm::Align(kHugePage));
      weights->setSection("kiln_weights");
    }
  }

  llvm::Function *run = nullptr;
  llvm::Constant *deviceProgram = llvm::ConstantPointerNull::get(b.getPtrTy());
  if (!device) {
    for (const Launch &l : p.launches)
      if (!mod->getFunction(l.kernel)) {
        error = "kernel " + l.kernel + " vanished during lowering";
        return nullptr;
      }
    run = emitCpuSchedule(p, *mod, weights);
  }
  else
    deviceProgram = emitDeviceProgram(p, *mod, weights, options);

  // The model descriptor (layout of kiln_model_desc in kiln/runtime.h).
  auto *tensorTy = llvm::StructType::get(lc, {ptrTy, i32, i32, ptrTy, ptrTy});
  auto tensorTable = [&](const std::vector<TensorInfo> &ts, const char *what) {
    std::vector<llvm::Constant *> rows;
    for (auto [i, t] : llvm::enumerate(ts)) {
      std::string base = p.name + "_" + what + std::to_string(i);
      auto *nameC = b.CreateGlobalString(t.name, base + "_name", 0, mod.get());
      std::vector<uint64_t> dims(t.shape.begin(), t.shape.end());
      auto *shapeInit = llvm::ConstantDataArray::get(lc, dims);
      auto *shapeG = new llvm::GlobalVariable(*mod, shapeInit->getType(), true,
                                              internal, shapeInit, base + "_shape");
      llvm::Constant *symsG = llvm::ConstantPointerNull::get(b.getPtrTy());
      if (!t.symbols.empty()) {
        std::vector<uint32_t> syms(t.symbols.begin(), t.symbols.end());
        auto *symsInit = llvm::ConstantDataArray::get(lc, syms);
        symsG = new llvm::GlobalVariable(*mod, symsInit->getType(), true, internal,
                                         symsInit, base + "_symbols");
      }
      rows.push_back(llvm::ConstantStruct::get(
          tensorTy, {nameC, b.getInt32(t.dtype),
                     b.getInt32(static_cast<int32_t>(t.shape.size())), shapeG, symsG}));
    }
    auto *arrTy = llvm::ArrayType::get(tensorTy, rows.size());
    return new llvm::GlobalVariable(*mod, arrTy, true, internal,
                                    llvm::ConstantArray::get(arrTy, rows),
                                    p.name + "_" + what + "s");
  };
  auto *inputs = tensorTable(p.inputs, "input");
  auto *outputs = tensorTable(p.outputs, "output");
  std::vector<llvm::Constant *> names;
  for (const Launch &l : p.launches)
    names.push_back(b.CreateGlobalString(l.kernel, l.kernel + "_name", 0, mod.get()));
  auto *namesTy = llvm::ArrayType::get(ptrTy, names.size());
  auto *kernelNames = new llvm::GlobalVariable(
      *mod, namesTy, true, internal, llvm::ConstantArray::get(namesTy, names),
      p.name + "_kernel_names");
  std::vector<uint64_t> flops;
  for (const Launch &l : p.launches)
    flops.push_back(static_cast<uint64_t>(l.flops));
  auto *flopsInit = llvm::ConstantDataArray::get(lc, flops);
  auto *kernelFlops = new llvm::GlobalVariable(*mod, flopsInit->getType(), true, internal,
                                               flopsInit, p.name + "_kernel_flops");
  // An array of C strings `<name>_<stem>s` (entries `<name>_<stem><i>`);
  // null when there are none.
  auto stringTable = [&](const std::vector<std::string> &strings,
                         const std::string &stem) -> llvm::Constant * {
    if (strings.empty())
      return llvm::ConstantPointerNull::get(b.getPtrTy());
    std::vector<llvm::Constant *> entries;
    for (auto [i, str] : llvm::enumerate(strings))
      entries.push_back(b.CreateGlobalString(str, p.name + "_" + stem + std::to_string(i), 0,
                                             mod.get()));
    auto *ty = llvm::ArrayType::get(ptrTy, entries.size());
    return new llvm::GlobalVariable(*mod, ty, true, internal, llvm::ConstantArray::get(ty, entries),
                                    p.name + "_" + stem + "s");
  };
  llvm::Constant *symbolNames = stringTable(p.symbolNames, "symbol_name");
  llvm::Constant *symbolBounds = llvm::ConstantPointerNull::get(b.getPtrTy());
  llvm::Constant *symbolPins = llvm::ConstantPointerNull::get(b.getPtrTy());
  if (!p.symbolNames.empty()) {
    std::vector<uint64_t> bounds(p.symbolBounds.begin(), p.symbolBounds.end());
    auto *bInit = llvm::ConstantDataArray::get(lc, bounds);
    symbolBounds = new llvm::GlobalVariable(*mod, bInit->getType(), true, internal, bInit,
                                            p.name + "_symbol_bounds");
    std::vector<uint64_t> pins(p.symbolPins.begin(), p.symbolPins.end());
    pins.resize(bounds.size(), 0);
    auto *pInit = llvm::ConstantDataArray::get(lc, pins);
    symbolPins = new llvm::GlobalVariable(*mod, pInit->getType(), true, internal, pInit,
                                          p.name + "_symbol_pins");
  }
  llvm::Constant *symbolDerived = llvm::ConstantPointerNull::get(b.getPtrTy());
  if (!p.symbolDerived.empty()) {
    std::vector<uint64_t> d(p.symbolDerived.begin(), p.symbolDerived.end());
    auto *dInit = llvm::ConstantDataArray::get(lc, d);
    symbolDerived = new llvm::GlobalVariable(*mod, dInit->getType(), true, internal, dInit,
                                             p.name + "_symbol_derived");
  }
  llvm::Constant *symbolInputs = llvm::ConstantPointerNull::get(b.getPtrTy());
  if (!p.symbolInputs.empty()) {
    std::vector<uint32_t> si(p.symbolInputs.begin(), p.symbolInputs.end());
    auto *siInit = llvm::ConstantDataArray::get(lc, si);
    symbolInputs = new llvm::GlobalVariable(*mod, siInit->getType(), true, internal, siInit,
                                            p.name + "_symbol_inputs");
  }
  llvm::Constant *faultSites = stringTable(p.faultSites, "fault_site");
  auto *descTy = llvm::StructType::get(
      lc, {i32, i32, i32, i32, ptrTy, ptrTy, ptrTy, i64, i64, ptrTy, ptrTy, ptrTy, i32, i32,
           ptrTy, i32, i32, ptrTy, ptrTy, ptrTy, i32, i32, ptrTy, ptrTy, ptrTy, ptrTy, i32,
           i32, ptrTy, ptrTy, ptrTy, i32, i32, ptrTy});
  // Per input: whether kernels read the padding of its symbolic axes.
  llvm::Constant *inputPadding = llvm::ConstantPointerNull::get(b.getPtrTy());
  if (llvm::any_of(p.inputs, [](const TensorInfo &t) { return !t.symbols.empty() && !t.paddingRead; })) {
    std::vector<uint8_t> flags;
    for (const TensorInfo &t : p.inputs)
      flags.push_back(t.paddingRead ? 1 : 0);
    auto *init = llvm::ConstantDataArray::get(lc, flags);
    inputPadding = new llvm::GlobalVariable(*mod, init->getType(), true,
                                            llvm::GlobalValue::InternalLinkage, init,
                                            p.name + "_input_padding");
  }
  // Per input and output: whether its kernels use the caller's layout.
  auto compactFlags = [&](const std::vector<TensorInfo> &ts,
                          const char *what) -> llvm::Constant * {
    if (llvm::none_of(ts, [](const TensorInfo &t) { return t.compact; }))
      return llvm::ConstantPointerNull::get(b.getPtrTy());
    std::vector<uint8_t> flags;
    for (const TensorInfo &t : ts)
      flags.push_back(t.compact ? 1 : 0);
    auto *init = llvm::ConstantDataArray::get(lc, flags);
    return new llvm::GlobalVariable(*mod, init->getType(), true,
                                    llvm::GlobalValue::InternalLinkage, init, p.name + what);
  };
  llvm::Constant *inputCompact = compactFlags(p.inputs, "_input_compact");
  llvm::Constant *outputCompact = compactFlags(p.outputs, "_output_compact");
  // KV caches kept in place: {input, output, axis} per pair.
  llvm::Constant *states = llvm::ConstantPointerNull::get(b.getPtrTy());
  if (!p.states.empty()) {
    std::vector<uint32_t> triples;
    for (const StatePair &s : p.states)
      triples.insert(triples.end(), {static_cast<uint32_t>(s.input),
                                     static_cast<uint32_t>(s.output),
                                     static_cast<uint32_t>(s.axis)});
    auto *init = llvm::ConstantDataArray::get(lc, triples);
    states = new llvm::GlobalVariable(*mod, init->getType(), true,
                                      llvm::GlobalValue::InternalLinkage, init, p.name + "_states");
  }
  int32_t deviceKind = options.device == CpuOptions::Device::Cuda      ? KILN_DEVICE_CUDA
                       : options.device == CpuOptions::Device::CudaEmu ? KILN_DEVICE_CUDA_EMU
                                                                       : KILN_DEVICE_CPU;
  llvm::Constant *runC = run ? static_cast<llvm::Constant *>(run)
                             : llvm::ConstantPointerNull::get(b.getPtrTy());
  auto *desc = llvm::ConstantStruct::get(
      descTy, {b.getInt32(KILN_ABI_VERSION), b.getInt32(p.inputs.size()),
               b.getInt32(p.outputs.size()), b.getInt32(p.launches.size()),
               b.CreateGlobalString(p.name, p.name + "_name", 0, mod.get()),
               inputs, outputs, b.getInt64(p.arenaBytes),
               b.getInt64(p.weights.size()), runC, kernelNames, kernelFlops,
               b.getInt32(deviceKind), b.getInt32(0), deviceProgram,
               b.getInt32(p.symbolNames.size()), b.getInt32(0), symbolNames,
               symbolBounds, symbolPins, b.getInt32(p.symbolInputs.size()),
               b.getInt32(p.faultSites.size()), symbolInputs, symbolDerived,
               weights ? static_cast<llvm::Constant *>(weights)
                       : llvm::ConstantPointerNull::get(b.getPtrTy()),
               faultSites, b.getInt32(p.numSymbolOutputs), b.getInt32(0), inputPadding,
               inputCompact, outputCompact, b.getInt32(p.states.size()), b.getInt32(0),
               states});
  auto *descG = new llvm::GlobalVariable(*mod, descTy, true,
                                         llvm::GlobalValue::ExternalLinkage,
                                         desc, p.name + "_desc");
  if (options.exportGenericEntry)
    new llvm::GlobalVariable(*mod, ptrTy, true, llvm::GlobalValue::ExternalLinkage,
                             descG, "kiln_model");
  return mod;
}

/// Sets the module's target and runs LLVM's optimization pipeline on it;
/// false when the result does not verify (LLVM 22's SLP vectorizer breaks
/// dominance in some AVX2 kernels, and the backend then crashes on it).
static bool optimize(llvm::Module &mod, const CpuOptions &options, llvm::TargetMachine *tm,
                     std::string &error) {
  mod.setDataLayout(tm->createDataLayout());
  mod.setTargetTriple(tm->getTargetTriple());

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = options.optLevel >= 2;
  pto.SLPVectorization = options.optLevel >= 2 && options.slpVectorize;
  llvm::PassBuilder pb(tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = options.optLevel >= 3   ? llvm::OptimizationLevel::O3
                                  : options.optLevel == 2 ? llvm::OptimizationLevel::O2
                                  : options.optLevel == 1 ? llvm::OptimizationLevel::O1
                                                          : llvm::OptimizationLevel::O0;
  llvm::ModulePassManager mpm = level == llvm::OptimizationLevel::O0
                                    ? pb.buildO0DefaultPipeline(level)
                                    : pb.buildPerModuleDefaultPipeline(level);
  mpm.run(mod, mam);
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (!llvm::verifyModule(mod, &os))
    return true;
  error = "LLVM's optimizer produced invalid IR for --mcpu=" + options.mcpu + " (an LLVM bug): " +
          problems.substr(0, problems.find('\n'));
  return false;
}

bool optimizeModule(llvm::Module &mod, const CpuOptions &options, std::string &error,
                    bool *optimizerBroke) {
  auto tm = makeTargetMachine(options, error);
  if (!tm)
    return false;
  bool ok = optimize(mod, options, tm.get(), error);
  if (optimizerBroke)
    *optimizerBroke = !ok;
  return ok;
}

bool emitObject(llvm::Module &mod, const CpuOptions &options,
                llvm::SmallVectorImpl<char> &out, std::string &error, bool *optimizerBroke) {
  auto tm = makeTargetMachine(options, error);
  if (!tm)
    return false;
  bool ok = optimize(mod, options, tm.get(), error);
  if (optimizerBroke)
    *optimizerBroke = !ok;
  if (!ok)
    return false;
  llvm::raw_svector_ostream os(out);
  llvm::legacy::PassManager cg;
  if (tm->addPassesToEmitFile(cg, os, nullptr, llvm::CodeGenFileType::ObjectFile)) {
    error = "the target cannot emit object files";
    return false;
  }
  cg.run(mod);
  return true;
}

} // namespace kiln::codegen
