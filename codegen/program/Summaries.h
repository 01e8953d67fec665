//===- Summaries.h - what the compiler decided, for reports -----*- C++ -*-===//
//
// Each search the driver or codegen runs (the memory plan, --max-memory's
// rematerialization, --precision=auto's calibration, --autotune) records
// what it tried and chose here; the report (driver/Report.cpp) prints them.
// Nothing downstream reads them to decide anything.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_PROGRAM_SUMMARIES_H
#define KILN_CODEGEN_PROGRAM_SUMMARIES_H

#include "codegen/program/CodegenOptions.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

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
  /// int8: --calibrate-method and each quantized activation's range, by
  /// the ONNX node (or location) of the product that reads it.
  std::string rangeMethod;
  struct Range {
    std::string node;
    float lo = 0, hi = 0;
  };
  std::vector<Range> ranges;
};

/// --weights: the matrix products whose constant weights
/// kiln-quantize-weights put on block-quantized codes, for the report.
/// bits 0: off.
struct WeightsSummary {
  int bits = 0;
  int64_t block = 0;
  int64_t quantized = 0, products = 0; // products: gemms and matmuls before the pass
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

} // namespace kiln::codegen

#endif // KILN_CODEGEN_PROGRAM_SUMMARIES_H
