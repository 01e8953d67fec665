//===- Program.h - a compiled model before object emission -----*- C++ -*-===//
//
// The output of kernel lowering: a module of kernels over flat buffers (each
// kernel is a grid of workgroups: `kernel(buffers..., wg)`), the buffers
// (inputs, outputs, constants, arena slices) and the launch schedule. The
// CPU backend turns it into an object file. The choices it is lowered with
// are CodegenOptions.h; the summaries it carries for the report,
// Summaries.h.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_PROGRAM_PROGRAM_H
#define KILN_CODEGEN_PROGRAM_PROGRAM_H

#include "codegen/program/CodegenOptions.h"
#include "codegen/program/Summaries.h"

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
  /// Inputs: some kernel reads the padding of its symbolic axes (the runtime
  /// fills it below the bounds); false: only the live extents (LiveExtents.h).
  bool paddingRead = true;
  /// Every kernel reading the input (writing the output) does so in the
  /// caller's own row-major layout at the run's sizes, not at the bounds:
  /// the runtime stages nothing for it (a run below the bounds neither pads
  /// it nor crops it).
  bool compact = false;
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
  /// CPU targets: the kernel computes only the live part of its output
  /// (LiveExtents.h), and its launch shrinks with the run's sizes: it runs
  /// min(workgroups, liveInner * prod over liveTerms of
  /// ceil(num * prod(sizes of syms) / den)) workgroups. Empty: all of them.
  struct LiveTerm {
    std::vector<int> syms;
    int64_t num = 1, den = 1;
  };
  std::vector<LiveTerm> liveTerms;
  int64_t liveInner = 1;
  /// Symbols whose run-time sizes the kernel takes as i64 arguments after
  /// its buffers (in this order; each a hidden size input).
  std::vector<int> sizeSymbols;
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

/// A KV cache kept in place (the CPU): output `output` is input `input`
/// grown along `axis` by the run's new positions, and its kernel writes only
/// those. The past, positions [0, P) of the axis in the output's buffer laid
/// out at the output's bounds, is the runtime's to put there (or the
/// caller's to keep there between runs: kiln_instance_run_states).
struct StatePair {
  int32_t input = -1, output = -1, axis = -1;
};

struct Program {
  std::string name;               // C identifier prefix of the model
  mlir::OwningOpRef<mlir::ModuleOp> kernels;
  std::vector<Buffer> buffers;
  std::vector<Launch> launches;
  std::vector<TensorInfo> inputs, outputs;
  std::vector<StatePair> states;
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
  /// Hidden outputs after `outputs` (the model writes them): the i64 size
  /// of each data-dependent symbol (KILN_SYM_COMPUTED), in the order the
  /// symbols' derivations name them.
  int numSymbolOutputs = 0;
  /// The fault word (runtime.h's kiln_model_desc::num_fault_sites): the
  /// buffer of the hidden int64 input after the symbol sizes that kernels
  /// checking run-time indices write to (-1: no kernel does), and per code
  /// 1, 2, ... the site that stores it ("gather (node 'Gather_3')").
  int faultBuffer = -1;
  std::vector<std::string> faultSites;
  std::vector<char> weights;      // all constants, 64-byte aligned offsets
  int64_t arenaBytes = 0;
  /// The choices it is lowered with (set before lowerToKernels).
  CodegenOptions options;
  /// Set by the lowering: the k block the model's products take unless
  /// tuned (kBlock resolved, kKBlock128 or kKBlockL2), and the bytes of the
  /// model's constants as imported (before packing; part of --autotune's
  /// cache key).
  int defaultKBlock = 0;
  int64_t constantBytes = 0;
  /// For the report (Summaries.h): the memory plan (set by the lowering),
  /// and what the driver's searches tried and chose.
  MemoryStats memory;
  RematSummary remat;
  PrecisionSummary precision;
  WeightsSummary weightQuantization;
  AutotuneSummary autotune;
};

/// Lowers `module` (func.func @main of kiln ops, static shapes) into kernels
/// and a schedule. Emits diagnostics at the op's location on failure.
mlir::LogicalResult lowerToKernels(mlir::ModuleOp module, Program &program);

/// The runtime's dtype code (kiln_dtype) of an element type; 0 if none.
int32_t dtypeCode(mlir::Type t);

/// Floating-point operations `op` performs (a kiln op or a kiln.fusion).
int64_t estimateFlops(mlir::Operation *op);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_PROGRAM_PROGRAM_H
