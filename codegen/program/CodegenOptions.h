//===- CodegenOptions.h - the choices kernel lowering is given --*- C++ -*-===//
//
// What the driver tells the lowering besides the module: the target's
// shape (CPU or GPU), the lowering's own switches (--disable-pass names
// them beside the graph passes, though they are steps of the lowering, not
// passes over the graph), the Winograd and k-block choices, and
// --autotune's per-op choices.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_PROGRAM_CODEGENOPTIONS_H
#define KILN_CODEGEN_PROGRAM_CODEGENOPTIONS_H

#include <cstdint>
#include <map>

namespace kiln::codegen {

/// The k blocks of the f32 products on packed weights (CodegenOptions::kBlock,
/// OpTuning::kBlock, Launch::kBlock; --k-block): 128 deep, a panel's block
/// in L1; or as deep as the core's L2 holds (KILN_UK_DEEP_K, kiln/runtime.h:
/// the whole K up to 2048 on 1 MiB of L2), the default.
constexpr int kKBlock128 = 128, kKBlockL2 = 2;
/// "128" or "l2" (--k-block's spelling; "auto" for 0).
inline const char *kBlockName(int kBlock) {
  return kBlock == kKBlock128 ? "128" : kBlock == kKBlockL2 ? "l2" : "auto";
}

/// --autotune's choices for one op (or, CodegenOptions::tuneAll, for every op):
/// 0 / -1 keep the default.
struct OpTuning {
  int kBlock = 0;    // kKBlock128 or kKBlockL2: the f32 packed-B products' k blocks
  int winograd = -1; // 1: Winograd where it can (also below the default's
                     // pixel count); 0: the direct products
  bool operator==(const OpTuning &o) const { return kBlock == o.kBlock && winograd == o.winograd; }
};

/// The names --disable-pass gives the lowering's switches.
constexpr const char *kLiveRowsSwitch = "kiln-live-rows";
constexpr const char *kPlanMemorySwitch = "kiln-plan-memory";
constexpr const char *kWinogradSwitch = "kiln-winograd";

/// Set by the driver before lowerToKernels; Program::options keeps them.
struct CodegenOptions {
  /// Lower for the CUDA target: op families with GPU-shaped builders
  /// (elementwise, matrix products, softmax, layer norm) use them; the rest
  /// keep the CPU loop nests, run one workgroup per GPU thread.
  bool gpu = false;
  /// CPU kernels whose padding nothing reads compute only the live extents
  /// (LiveExtents.h; off with --disable-pass=kiln-live-rows).
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
};

} // namespace kiln::codegen

#endif // KILN_CODEGEN_PROGRAM_CODEGENOPTIONS_H
