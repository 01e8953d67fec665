//===- Program.h - a compiled model before object emission -----*- C++ -*-===//
//
// The output of kernel lowering: a module of kernels over flat buffers (each
// kernel is a grid of workgroups: `kernel(buffers..., wg)`), the buffers
// (inputs, outputs, constants, arena slices) and the launch schedule. The
// CPU backend turns it into an object file.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_PROGRAM_PROGRAM_H
#define KILN_CODEGEN_PROGRAM_PROGRAM_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <string>
#include <vector>

namespace kiln::codegen {

/// Element type codes shared with runtime/include/kiln/runtime.h.
enum DType : int32_t {
  kF32 = 1, kF64 = 2, kI64 = 3, kI32 = 4, kI8 = 5, kU8 = 6, kF16 = 7, kBF16 = 8,
  kI16 = 9, kU16 = 10, kU32 = 11, kU64 = 12, kBool = 13,
  // Narrow types (inputs and outputs only: kernels hold them in a carrier).
  kF8E4M3FN = 14, kF8E4M3FNUZ = 15, kF8E5M2 = 16, kF8E5M2FNUZ = 17, kU4 = 18, kI4 = 19,
  kF4E2M1 = 20, kF8E8M0 = 21, kU2 = 22, kI2 = 23
};

struct Buffer {
  enum Kind { Input, Output, Constant, Arena };
  Kind kind = Arena;
  int64_t bytes = 0;
  int64_t index = 0;   // Input/Output: position in the signature
  int64_t offset = 0;  // Constant: offset in the weights blob; Arena: in arena
  int firstUse = 0, lastUse = 0; // launch indices (for the memory planner)
  mlir::Type elem;     // element type of the kernels' view (null: f32)
  /// kiln-plan-memory: an arena buffer that lives inside another (a concat's
  /// input its producer writes straight into the concat's output) at
  /// `within` bytes; -1: none. `offset` is absolute after planning.
  int parent = -1;
  int64_t within = 0;
};

struct TensorInfo {
  std::string name;
  int32_t dtype = kF32;
  std::vector<int64_t> shape;   // symbolic axes: the symbol's bound
  std::vector<int32_t> symbols; // per axis: a symbol id, or -1; empty: static
};

struct Launch {
  std::string kernel;             // function name in `kernels`
  std::vector<int> buffers;       // buffer ids, in kernel argument order
  int64_t workgroups = 1;
  std::string what;               // the op(s) it computes, for reports
  std::vector<std::string> nodes; // the ONNX nodes (locations) it computes
  int64_t flops = 0;              // floating-point operations per run
  int64_t bytesRead = 0;          // distinct input buffers, whole
  int64_t bytesWritten = 0;       // the output buffer
  bool contraction = false;       // conv, gemm, matmul or attention inside
  std::string layout = "row-major"; // of its tensors: NCHW for conv/pool kernels
  // CUDA targets: the launch geometry the CUDA code generator chose, and
  // whether the kernel's threads synchronize (barriers, warp operations).
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t sharedBytes = 0;
  bool blockSync = false;
  /// Built for the GPU (its threads share the work of a block: tid/bid,
  /// barriers, shuffles, shared memory) rather than one workgroup per
  /// thread; its geometry above is set by the lowering.
  bool gpuShaped = false;
  /// Multiplies on tensor cores (f16/bf16 operands, f32 accumulation).
  bool tensorCores = false;
  /// The element types of its buffers, for reports ("f32", "f16+f32").
  std::string dtypes = "f32";
  /// CPU targets: the kernel computes only the rows of its output's axis 0
  /// below the run's size n of symbol `liveSymbol` (LiveRows.h): it runs
  /// min(workgroups, liveInner * ceil(n * liveNum / liveDen)) workgroups;
  /// n is read from the run's input `liveInput` (a hidden size input).
  int liveSymbol = -1;
  int liveInput = -1;
  int64_t liveNum = 1, liveDen = 1, liveInner = 1;
  /// Positions in `buffers` of the inputs the kernel reads only at the
  /// element it writes (same element type and size as the output, the last
  /// buffer): kiln-plan-memory may give the output one's memory.
  std::vector<int> inPlace;
  /// Set by kiln-plan-memory: the kernel writes over input `inPlaceOf` (its
  /// output argument is gone; `buffers` lists the input once). -1: not.
  int inPlaceOf = -1;
  /// A concat whose inputs are contiguous ranges of its output (nothing
  /// before the axis): their byte offsets in it, in input order. Empty:
  /// not such a concat.
  std::vector<int64_t> concatSlices;
  /// kiln-rematerialize: the ops the kernel recomputes on its input instead
  /// of reading them stored ("batch_norm+relu"; empty: none), and the flops
  /// that costs beyond computing them once.
  std::string recomputes;
  int64_t extraFlops = 0;
  /// The kernel computes again a value an earlier kernel computed (its
  /// `recomputes` ops are all of it; `extraFlops` its flops).
  bool recomputedCopy = false;
  /// kiln-lower-precision: the precision its contraction computes in
  /// ("bf16", "f16": operands and result rounded to it, f32 accumulation);
  /// empty: fp32.
  std::string precision;
  /// The op it was lowered from: its position among the function's ops.
  int64_t op = -1;
  /// kTune* bits: the choices --autotune may make for its op that change
  /// this kernel, and kTuneWinogradDefault where Winograd is the default.
  unsigned tunable = 0;
  /// The choices it was built with (OpTuning; kBlock resolved: kKBlock128
  /// or kKBlockL2 where kTuneKBlock applies).
  int kBlock = 0;
  bool winograd = false;
};

/// Launch::tunable bits.
enum : unsigned {
  kTuneKBlock = 1,           // calls the f32 packed-B ukernel with K > 192
  kTuneWinograd = 2,         // a 3x3 stride-1 conv Winograd can compute
  kTuneWinogradDefault = 4,  // ... and does unless told otherwise
};

/// --autotune's choices for one op (or, Program::tuneAll, for every op):
/// 0 / -1 keep the default.
struct OpTuning {
  int kBlock = 0;    // kKBlock128 or kKBlockL2: the f32 packed-B products' k blocks
  int winograd = -1; // 1: Winograd where it can (also below the default's
                     // pixel count); 0: the direct products
  bool operator==(const OpTuning &o) const {
    return kBlock == o.kBlock && winograd == o.winograd;
  }
};

/// What --autotune measured and chose (kiln-compile's Autotune.h), for the
/// report.
struct AutotuneSummary {
  bool on = false;
  int threads = 0;
  std::string cache;                  // the cache file; empty: none
  std::string cpu;                    // the CPU key the cache uses
  std::vector<std::string> variants;  // the trial builds: "kb128+wg0", ...
  int rounds = 0, runs = 0;           // of each variant
  double seconds = 0;                 // measuring, building included
  struct Op {
    int64_t op = -1;
    std::vector<std::string> kernels; // in the final build
    std::string what;
    unsigned tunable = 0;
    std::vector<double> ms;           // per variant (empty: from the cache)
    OpTuning chosen;                  // resolved: kBlock 128/L2, winograd 0/1
    bool changed = false;             // differs from the default
    bool cached = false;
  };
  std::vector<Op> ops;
};

/// What kiln-plan-memory found (PlanMemory.h), for reports and lit tests.
struct MemoryStats {
  int64_t livePeak = 0; // most bytes alive during one launch: no plan does better
  int64_t noReuse = 0;  // every intermediate its own bytes
  int64_t naive = 0;    // first fit in schedule order, no kernel in place
  int inPlace = 0;      // kernels writing over an input
  /// Concats with no kernel left: their inputs are written in place.
  std::vector<std::string> elided;
  std::string order;    // the placement order that won
};

/// What --max-memory did (kiln-rematerialize; budget -1: no budget given).
struct RematSummary {
  int64_t budget = -1;
  int64_t arenaWithout = 0; // the plan with nothing recomputed
  int64_t candidates = 0;   // values the pass could recompute
  int64_t applied = 0;      // those it did, cheapest first
  bool nchwForMemory = false; // --layout=auto's NHWC regions could not meet the budget
};

/// --precision=auto (or a precision measured with --calibrate): what the
/// trial builds measured, for the report. Empty mode: nothing measured.
struct PrecisionSummary {
  std::string mode;     // "auto", "bf16" or "fp16"
  double tolerance = 0; // auto: the relative error allowed
  std::string inputs;   // where the calibration inputs came from
  int64_t contractions = 0, lowered = 0;
  int trials = 0;       // trial builds measured (the fp32 reference included)
  double relError = 0, maxAbsError = 0; // the chosen build against fp32
  int64_t top1Agree = 0, top1Rows = 0;
};

struct Program {
  std::string name;               // C identifier prefix of the model
  mlir::OwningOpRef<mlir::ModuleOp> kernels;
  std::vector<Buffer> buffers;
  std::vector<Launch> launches;
  std::vector<TensorInfo> inputs, outputs;
  /// Symbolic (dynamic) dimensions: kernels run at the bounds; the runtime
  /// pads smaller inputs to them and crops the outputs.
  std::vector<std::string> symbolNames;
  std::vector<int64_t> symbolBounds;
  std::vector<int64_t> symbolPins; // 0, or K: a run gives 1 or K
  /// Per symbol, {base, factor}: base's size times factor (a reshape merged
  /// a symbolic axis); {-1, 1} for one the inputs carry. Empty: none.
  std::vector<int64_t> symbolDerived;
  /// Hidden inputs after `inputs` (the runtime fills them): the i64 size of
  /// each listed symbol, for the masks of reductions over symbolic axes.
  std::vector<int32_t> symbolInputs;
  std::vector<char> weights;      // all constants, 64-byte aligned offsets
  int64_t arenaBytes = 0;
  MemoryStats memory;
  RematSummary remat;
  PrecisionSummary precision;
  /// Lower for the CUDA target: op families with GPU-shaped builders
  /// (elementwise, matrix products, softmax, layer norm) use them; the rest
  /// keep the CPU loop nests, run one workgroup per GPU thread.
  bool gpu = false;
  /// CPU kernels whose padded rows nothing reads compute only a run's rows
  /// (LiveRows.h; off with --disable-pass=kiln-live-rows).
  bool liveRows = true;
  /// Arena offsets from lifetimes with kernels in place (PlanMemory.h); off
  /// (--disable-pass=kiln-plan-memory): every intermediate its own bytes.
  bool planMemory = true;
  /// f32 3x3 stride-1 NHWC convolutions in Winograd's F(2x2, 3x3) form
  /// (kiln_uk_winograd_f23); off with --disable-pass=kiln-winograd.
  bool winograd = true;
  /// ... and those of 400+ output pixels an image in the F(4x4, 3x3) form
  /// (kiln_uk_winograd_f43; --winograd-f43): 1.78x fewer multiply-adds,
  /// about 10x the rounding error, so only when asked for.
  bool winograd43 = false;
  /// The f32 ukernel's k blocks on packed weights (--k-block): 0 chooses
  /// (kKBlockL2), or kKBlock128 or kKBlockL2.
  int kBlock = 0;
  /// --autotune: choices for every op (its trial builds), and per op (its
  /// position among the function's ops) over those.
  OpTuning tuneAll;
  std::map<int64_t, OpTuning> tuned;
  /// Set by the lowering: the k block the model's products take unless
  /// tuned (kBlock resolved, kKBlock128 or kKBlockL2), and the bytes of the
  /// model's constants as imported (before packing; part of --autotune's
  /// cache key).
  int defaultKBlock = 0;
  int64_t constantBytes = 0;
  AutotuneSummary autotune;
};

/// The k blocks of the f32 products on packed weights (Program::kBlock,
/// OpTuning::kBlock, Launch::kBlock; --k-block): 128 deep, a panel's block
/// in L1; or as deep as the core's L2 holds (KILN_UK_DEEP_K, kiln/runtime.h:
/// the whole K up to 2048 on 1 MiB of L2), the default.
constexpr int kKBlock128 = 128, kKBlockL2 = 2;
/// "128" or "l2" (--k-block's spelling; "auto" for 0).
inline const char *kBlockName(int kBlock) {
  return kBlock == kKBlock128 ? "128" : kBlock == kKBlockL2 ? "l2" : "auto";
}

/// Lowers `module` (func.func @main of kiln ops, static shapes) into kernels
/// and a schedule. Emits diagnostics at the op's location on failure.
mlir::LogicalResult lowerToKernels(mlir::ModuleOp module, Program &program);

/// The runtime's dtype code (kiln_dtype) of an element type; 0 if none.
int32_t dtypeCode(mlir::Type t);

/// Floating-point operations `op` performs (a kiln op or a kiln.fusion).
int64_t estimateFlops(mlir::Operation *op);


} // namespace kiln::codegen

#endif // KILN_CODEGEN_PROGRAM_PROGRAM_H
