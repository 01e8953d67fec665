//===- Autotune.h - --autotune: measured choices per op, cached --*- C++ -*-===//
//
// kiln-compile --autotune builds the model once per combination of the
// choices it tunes (the f32 packed-B ukernel's k blocks, 128 or 192;
// Winograd or direct products for 3x3 convs), runs each build with
// kiln-run --profile on this machine, alternating, and keeps per op the
// choice its kernels ran fastest with (the default unless another was at
// least kMargin faster). Choices are cached per CPU, thread count, model
// weight total and op (a hash of its kernels' code), so that a rebuild of
// the model measures nothing.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DRIVER_AUTOTUNE_H
#define KILN_DRIVER_AUTOTUNE_H

#include "codegen/program/Program.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace kiln::autotune {

/// Another choice replaces an op's default only when its kernels ran at
/// least this much faster (3%: the run-to-run noise of one kernel here).
constexpr double kMargin = 1.03;
/// ... and by at least this many milliseconds (kiln-run's profile has
/// microsecond resolution: a 3 us kernel against a 4 us one is noise).
constexpr double kMinGainMs = 0.005;

struct Options {
  std::string kilnRun;              // the kiln-run binary
  std::vector<std::string> runArgs; // its --input arguments
  std::string dir;                  // scratch for the trial builds
  std::string cachePath;            // empty: no cache
  std::string cpuKey;               // cpuKey()
  int threads = 1;
  int rounds = 3;
  bool kBlock = true, winograd = true; // the choices to tune
};

/// Lowers the model with `all` as every op's choices into `out`.
using LowerFn = std::function<bool(const codegen::OpTuning &all, codegen::Program &out,
                                   std::string &error)>;
/// Builds a lowered program into a .so at `path`.
using BuildFn =
    std::function<bool(codegen::Program &p, const std::string &path, std::string &error)>;

/// Measures (or reads from the cache) the choices of every op whose kernels
/// they change; `chosen` gets the ops whose choice is not the default.
bool tune(const Options &o, const LowerFn &lower, const BuildFn &build,
          std::map<int64_t, codegen::OpTuning> &chosen, codegen::AutotuneSummary &summary,
          std::string &error);

/// Fills the summary's kernel names from the final build's launches.
void nameKernels(codegen::AutotuneSummary &summary, const codegen::Program &p);

/// This machine for the cache: the host CPU's name, a hash of its feature
/// list, and the --mcpu the code targets.
std::string cpuKey(const std::string &mcpu);

/// $KILN_CACHE_DIR/autotune.tsv, else $XDG_CACHE_HOME/kiln/autotune.tsv,
/// else ~/.cache/kiln/autotune.tsv; empty if none can be named.
std::string defaultCachePath();

} // namespace kiln::autotune

#endif
