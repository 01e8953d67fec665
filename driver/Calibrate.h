//===- Calibrate.h - --precision=auto: measure builds, choose per region -*- C++ -*-===//
//
// kiln-compile --precision=auto (and --calibrate with a fixed precision)
// measures trial builds: each is the rest of this compilation (Pipeline.cpp,
// in process, on a copy of the module after the graph passes) at a
// precision configuration, into a temporary .so, run by kiln-run on the
// calibration inputs; its outputs are compared with Kiln's fp32 build. The
// search chooses which contractions (conv, gemm, matmul: the regions a
// kernel is anchored on) compute in bf16.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DRIVER_CALIBRATE_H
#define KILN_DRIVER_CALIBRATE_H

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kiln::calibrate {

/// How far a build's outputs are from the fp32 build's, over every output.
struct Error {
  double rel = 0;    // max over outputs of max|y - y32| / max|y32|
  double maxAbs = 0; // max |y - y32|
  /// Rows (all axes but the last) whose argmax over the last axis agrees,
  /// over every output of rank >= 1 with more than one class.
  int64_t top1Agree = 0, top1Rows = 0;
};

/// The calibration inputs: `--calibrate NAME=FILE` for every input, or,
/// where none is given, random normal values (seeded) for float inputs;
/// integer and boolean inputs need a file. Writes .npy files into `dir` and
/// returns kiln-run's `--input NAME=FILE` arguments; `what` says where they
/// came from (for the report).
/// With `zerosForOthers` (--autotune, which only times the runs), integer,
/// boolean and non-f32 float inputs not given are zeros instead of an error.
bool prepareInputs(mlir::ModuleOp module, const std::vector<std::string> &given,
                   const std::string &dir, std::vector<std::string> &runArgs,
                   std::string &what, std::string &error, bool zerosForOthers = false);

/// --precision=int8's calibration samples: `--calibrate NAME=FILE` given
/// once per sample for each input it names (the k-th file of each name is
/// sample k); every name must be given as often. One empty sample when
/// none is given.
bool splitSamples(const std::vector<std::string> &given,
                  std::vector<std::vector<std::string>> &samples, std::string &error);

/// A build's outputs (float64), in output-name order.
struct Outputs {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<double>> values;
};

/// Runs the trial build `so` with kiln-run on the inputs (`runArgs`, from
/// prepareInputs), its outputs and log under `dir` as NAME.*; reads the
/// outputs and removes the .so (unless `keepSo`: more runs follow).
bool runBuild(const std::string &kilnRun, const std::string &so,
              const std::vector<std::string> &runArgs, const std::string &dir,
              const std::string &name, Outputs &outputs, std::string &error,
              bool keepSo = false);

Error compare(const Outputs &got, const Outputs &ref);

/// The search over n contractions (in order): `measure(keep)` builds with
/// every contraction lowered except those in `keep` and returns its error
/// against fp32 (nullopt: the build failed, which ends the search). It
/// lowers as many as keep the error within `tolerance`: all if that is
/// within; otherwise the longest prefix within (binary search), keeps the
/// next contraction fp32 and goes on after it; at most `maxTrials`
/// measurements (what is undecided then stays fp32). Returns the kept
/// indices; `chosen` gets the chosen build's error, `trials` the count.
struct SearchResult {
  std::set<int64_t> keep;
  Error chosen;
  int trials = 0;
  bool failed = false;
};
SearchResult search(int64_t n, double tolerance, int maxTrials,
                    const std::function<std::optional<Error>(const std::set<int64_t> &)> &measure);

} // namespace kiln::calibrate

#endif
