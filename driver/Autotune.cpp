//===- Autotune.cpp - --autotune: measured choices per op, cached ----------===//
#include "driver/Autotune.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/OperationSupport.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <set>

namespace kiln::autotune {

using codegen::AutotuneSummary;
using codegen::OpTuning;
using codegen::Program;

namespace {

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string variantName(const OpTuning &t) {
  std::string s;
  if (t.kBlock)
    s += std::string("kb") + codegen::kBlockName(t.kBlock);
  if (t.winograd >= 0)
    s += std::string(s.empty() ? "" : "+") + "wg" + std::to_string(t.winograd);
  return s;
}

/// "kb=l2 wg=-1" <-> OpTuning (the cache's choice column; kb=auto: not
/// tuned).
std::string choiceText(const OpTuning &t) {
  return std::string("kb=") + codegen::kBlockName(t.kBlock) + " wg=" + std::to_string(t.winograd);
}
bool parseChoice(llvm::StringRef text, OpTuning &t) {
  char name[8] = {};
  int wg = -1;
  if (std::sscanf(text.str().c_str(), "kb=%7s wg=%d", name, &wg) != 2 || wg < -1 || wg > 1)
    return false;
  int kb = -1;
  for (int v : {0, codegen::kKBlock128, codegen::kKBlockL2})
    if (llvm::StringRef(name) == codegen::kBlockName(v))
      kb = v;
  if (kb < 0)
    return false;
  t.kBlock = kb;
  t.winograd = wg;
  return true;
}

/// The cache: one line per op, tab-separated: "v1", the key, the choice,
/// then the milliseconds measured per variant (for people reading it).
std::map<std::string, OpTuning> readCache(const std::string &path) {
  std::map<std::string, OpTuning> entries;
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return entries;
  llvm::SmallVector<llvm::StringRef> lines;
  (*buf)->getBuffer().split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    llvm::SmallVector<llvm::StringRef> f;
    line.split(f, '\t');
    OpTuning t;
    if (f.size() >= 3 && f[0] == "v1" && parseChoice(f[2], t))
      entries[f[1].str()] = t;
  }
  return entries;
}

/// Appends `lines` to the cache: the old file's lines (but those the new
/// ones replace) and the new ones, written beside it and renamed over it.
bool writeCache(const std::string &path, const std::map<std::string, std::string> &lines,
                std::string &error) {
  std::string text;
  if (auto buf = llvm::MemoryBuffer::getFile(path)) {
    llvm::SmallVector<llvm::StringRef> old;
    (*buf)->getBuffer().split(old, '\n', -1, false);
    for (llvm::StringRef line : old) {
      llvm::SmallVector<llvm::StringRef> f;
      line.split(f, '\t');
      if (f.size() >= 2 && lines.count(f[1].str()))
        continue;
      text += line.str() + "\n";
    }
  }
  for (auto &[key, line] : lines)
    text += line + "\n";
  llvm::StringRef parent = llvm::sys::path::parent_path(path);
  if (std::error_code ec =
          parent.empty() ? std::error_code() : llvm::sys::fs::create_directories(parent)) {
    error = "cannot create the directory of " + path + ": " + ec.message();
    return false;
  }
  std::string tmp = path + ".tmp" + std::to_string(llvm::sys::Process::getProcessId());
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(tmp, ec, llvm::sys::fs::OF_Text);
    if (ec) {
      error = "cannot write " + tmp + ": " + ec.message();
      return false;
    }
    os << text;
  }
  if (std::error_code ec = llvm::sys::fs::rename(tmp, path)) {
    llvm::sys::fs::remove(tmp);
    error = "cannot write " + path + ": " + ec.message();
    return false;
  }
  return true;
}

/// One op as the trial builds see it.
struct OpInfo {
  unsigned tunable = 0;
  std::string what;
  std::string key;                          // the cache key
  std::vector<double> ms;                   // per variant: best over the rounds
  OpTuning choice;
};

/// Runs kiln-run on `so` and returns per kernel its median milliseconds
/// (and the model's median latency in `latency`).
bool profile(const Options &o, const std::string &so, int runs,
             std::map<std::string, double> &perKernel, double &latency, std::string &error) {
  std::string log = o.dir + "/profile.txt";
  // kiln-run SO INPUTS --bench N --threads T --profile
  std::vector<std::string> args{o.kilnRun, so};
  args.insert(args.end(), o.runArgs.begin(), o.runArgs.end());
  for (std::string a : {std::string("--bench"), std::to_string(runs), std::string("--threads"),
                        std::to_string(o.threads), std::string("--profile")})
    args.push_back(a);
  std::vector<llvm::StringRef> argv(args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {llvm::StringRef(""), llvm::StringRef(log),
                                                llvm::StringRef(log)};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(o.kilnRun, argv, std::nullopt, redirects, 0, 0, &message);
  auto buf = llvm::MemoryBuffer::getFile(log);
  if (rc != 0 || !buf) {
    error = "kiln-run failed on a trial build" + (message.empty() ? "" : " (" + message + ")");
    if (buf)
      error += ":\n" + (*buf)->getBuffer().rtrim().str();
    return false;
  }
  latency = -1;
  llvm::SmallVector<llvm::StringRef> lines;
  (*buf)->getBuffer().split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    if (line.consume_front("latency over ")) {
      size_t at = line.find("median ");
      if (at != llvm::StringRef::npos)
        line.drop_front(at + 7).split(' ').first.getAsDouble(latency);
      continue;
    }
    llvm::SmallVector<llvm::StringRef> f;
    line.split(f, ' ', -1, false);
    double ms;
    if (f.size() >= 2 && f.back().starts_with("kiln_k") && !f.front().getAsDouble(ms))
      perKernel[f.back().str()] = ms;
  }
  if (latency < 0 || perKernel.empty()) {
    error = "kiln-run printed no profile for a trial build";
    return false;
  }
  return true;
}

/// The kernels' code of each op (function names left out), hashed.
std::map<int64_t, uint64_t> opHashes(const Program &p) {
  std::map<int64_t, std::string> text;
  for (const codegen::Launch &l : p.launches) {
    mlir::ModuleOp kernels = p.kernels.get();
    auto fn = kernels.lookupSymbol<mlir::func::FuncOp>(l.kernel);
    if (!fn)
      continue;
    std::string s;
    llvm::raw_string_ostream os(s);
    fn->print(os, mlir::OpPrintingFlags().printGenericOpForm());
    // (The kernel's name, its position in the model, left out.)
    for (size_t at = s.find(l.kernel); at != std::string::npos; at = s.find(l.kernel, at))
      s.replace(at, l.kernel.size(), "kernel");
    text[l.op] += s;
  }
  std::map<int64_t, uint64_t> h;
  for (auto &[op, s] : text)
    h[op] = llvm::xxh3_64bits(s);
  return h;
}

} // namespace

bool tune(const Options &o, const LowerFn &lower, const BuildFn &build,
          std::map<int64_t, OpTuning> &chosen, AutotuneSummary &summary, std::string &error) {
  auto start = std::chrono::steady_clock::now();
  summary = {};
  summary.on = true;
  summary.threads = o.threads;
  summary.cache = o.cachePath;
  summary.cpu = o.cpuKey;
  summary.rounds = o.rounds;
  unsigned knobs = (o.kBlock ? codegen::kTuneKBlock : 0u) |
                   (o.winograd ? codegen::kTuneWinograd : 0u);
  std::vector<OpTuning> variants;
  for (int kb : o.kBlock ? std::vector<int>{codegen::kKBlock128, codegen::kKBlockL2}
                        : std::vector<int>{0})
    for (int wg : o.winograd ? std::vector<int>{0, 1} : std::vector<int>{-1})
      variants.push_back({kb, wg});
  for (const OpTuning &v : variants)
    summary.variants.push_back(variantName(v));

  // The first variant's build names the ops and hashes their code.
  Program first;
  if (!lower(variants[0], first, error))
    return false;
  int defaultKBlock = first.defaultKBlock;
  std::map<int64_t, uint64_t> hashes = opHashes(first);
  std::map<int64_t, OpInfo> ops;
  for (const codegen::Launch &l : first.launches) {
    if (!(l.tunable & knobs))
      continue;
    OpInfo &info = ops[l.op];
    info.tunable |= l.tunable;
    if (info.what.empty())
      info.what = l.what;
  }
  std::string space = std::string(o.kBlock ? "kb" : "") + (o.winograd ? "wg" : "");
  for (auto &[op, info] : ops)
    info.key = o.cpuKey + "|t" + std::to_string(o.threads) + "|w" +
               std::to_string(first.constantBytes) + "|" + space + "|" + hex(hashes[op]);

  std::map<std::string, OpTuning> cache;
  if (!o.cachePath.empty())
    cache = readCache(o.cachePath);
  bool measure = false;
  for (auto &[op, info] : ops)
    measure |= !cache.count(info.key);

  // The default choice of an op, resolved.
  auto defaultOf = [&](const OpInfo &info) {
    OpTuning t;
    if (info.tunable & knobs & codegen::kTuneKBlock)
      t.kBlock = defaultKBlock;
    if (info.tunable & knobs & codegen::kTuneWinograd)
      t.winograd = info.tunable & codegen::kTuneWinogradDefault ? 1 : 0;
    return t;
  };
  // A variant as far as the op's kernels see it.
  auto project = [&](const OpInfo &info, OpTuning v) {
    if (!(info.tunable & knobs & codegen::kTuneKBlock))
      v.kBlock = 0;
    if (!(info.tunable & knobs & codegen::kTuneWinograd))
      v.winograd = -1;
    return v;
  };

  // The op's choice from its times per variant: per distinct choice (the
  // variants as its kernels see them) the best; the default unless another
  // is kMargin and kMinGainMs faster.
  auto decide = [&](const OpInfo &info, const std::vector<double> &ms) {
    std::map<std::pair<int, int>, double> best;
    for (size_t v = 0; v < variants.size(); ++v) {
      OpTuning c = project(info, variants[v]);
      auto [it, fresh] = best.try_emplace({c.kBlock, c.winograd}, ms[v]);
      if (!fresh)
        it->second = std::min(it->second, ms[v]);
    }
    OpTuning def = defaultOf(info), pick = def;
    double defMs = best[{def.kBlock, def.winograd}], pickMs = defMs;
    for (auto &[c, t] : best)
      if (t * kMargin < defMs && defMs - t >= kMinGainMs && t < pickMs) {
        pick = OpTuning{c.first, c.second};
        pickMs = t;
      }
    return pick;
  };

  std::map<std::string, std::string> newLines;
  if (measure) {
    // Build every variant, then run them in turn, round after round.
    std::vector<std::map<std::string, int64_t>> opOfKernel(variants.size());
    std::vector<std::string> sos;
    for (size_t v = 0; v < variants.size(); ++v) {
      Program other;
      Program &p = v == 0 ? first : other;
      if (v > 0 && !lower(variants[v], p, error))
        return false;
      for (const codegen::Launch &l : p.launches)
        opOfKernel[v][l.kernel] = l.op;
      std::string so = o.dir + "/" + summary.variants[v] + ".so";
      if (!build(p, so, error))
        return false;
      sos.push_back(so);
      if (v == 0)
        first = Program(); // (its weights: the model's size again)
    }
    // Enough runs per round for about 0.4 s of the first variant.
    std::map<std::string, double> perKernel;
    double latency = 0;
    if (!profile(o, sos[0], 3, perKernel, latency, error))
      return false;
    int runs = static_cast<int>(std::clamp(400.0 / std::max(latency, 1e-3), 5.0, 200.0));
    summary.runs = runs;
    // `rounds` rounds over the variants: per op and variant, the best of
    // the rounds' medians.
    auto measureRounds = [&](int rounds, std::map<int64_t, std::vector<double>> &ms) {
      for (auto &[op, info] : ops)
        ms[op].assign(variants.size(), std::numeric_limits<double>::infinity());
      // (Each round starts at another variant: a machine that speeds up
      // or slows down within rounds favours none.)
      for (int r = 0; r < rounds; ++r)
        for (size_t i = 0; i < variants.size(); ++i) {
          size_t v = (i + r) % variants.size();
          perKernel.clear();
          if (!profile(o, sos[v], runs, perKernel, latency, error))
            return false;
          std::map<int64_t, double> opMs;
          for (auto &[kernel, t] : perKernel)
            if (auto it = opOfKernel[v].find(kernel); it != opOfKernel[v].end())
              opMs[it->second] += t;
          for (auto &[op, info] : ops)
            ms[op][v] = std::min(ms[op][v], opMs[op]);
        }
      return true;
    };
    // A change must show twice: in the first rounds, then again in as many
    // more (one kernel's time moves 2-3% between runs here).
    std::map<int64_t, std::vector<double>> phase1, phase2;
    if (!measureRounds(o.rounds, phase1))
      return false;
    bool anyChange = false;
    for (auto &[op, info] : ops)
      if (auto it = cache.find(info.key); it == cache.end()) {
        info.ms = phase1[op];
        info.choice = decide(info, phase1[op]);
        anyChange |= !(info.choice == defaultOf(info));
      }
    if (anyChange) {
      summary.rounds = 2 * o.rounds;
      if (!measureRounds(o.rounds, phase2))
        return false;
      for (auto &[op, info] : ops) {
        if (cache.count(info.key))
          continue;
        for (size_t v = 0; v < variants.size(); ++v)
          info.ms[v] = std::min(info.ms[v], phase2[op][v]);
        if (!(info.choice == defaultOf(info)) && !(decide(info, phase2[op]) == info.choice))
          info.choice = defaultOf(info);
      }
    }
    for (const std::string &so : sos)
      llvm::sys::fs::remove(so);
  }

  for (auto &[op, info] : ops) {
    AutotuneSummary::Op s;
    s.op = op;
    s.what = info.what;
    s.tunable = info.tunable & (knobs | codegen::kTuneWinogradDefault);
    if (auto it = cache.find(info.key); it != cache.end()) {
      s.chosen = it->second;
      s.cached = true;
    } else {
      s.chosen = info.choice;
      s.ms = info.ms;
      std::string line = "v1\t" + info.key + "\t" + choiceText(s.chosen) + "\t";
      for (size_t v = 0; v < variants.size(); ++v)
        line += (v ? " " : "") + summary.variants[v] + "=" +
                llvm::formatv("{0:f4}", s.ms[v]).str();
      newLines[info.key] = line + "\t" + info.what;
    }
    s.changed = !(s.chosen == defaultOf(info));
    if (s.changed)
      chosen[op] = s.chosen;
    summary.ops.push_back(std::move(s));
  }
  if (!newLines.empty() && !o.cachePath.empty()) {
    std::string cacheError;
    if (!writeCache(o.cachePath, newLines, cacheError))
      llvm::errs() << "kiln-compile: warning: --autotune: " << cacheError
                   << " (the choices still apply to this build)\n";
  }
  summary.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return true;
}

void nameKernels(AutotuneSummary &summary, const Program &p) {
  for (AutotuneSummary::Op &s : summary.ops) {
    s.kernels.clear();
    for (const codegen::Launch &l : p.launches)
      if (l.op == s.op)
        s.kernels.push_back(l.kernel);
  }
}

std::string cpuKey(const std::string &mcpu) {
  std::vector<std::string> on;
  for (auto &[name, enabled] : llvm::sys::getHostCPUFeatures())
    if (enabled)
      on.push_back(name.str());
  std::sort(on.begin(), on.end());
  std::string host = llvm::sys::getHostCPUName().str();
  return host + "-" + hex(llvm::xxh3_64bits(llvm::join(on, ","))).substr(0, 8) +
         (mcpu.empty() ? "" : "-mcpu=" + mcpu);
}

std::string defaultCachePath() {
  llvm::SmallString<256> dir;
  if (const char *d = std::getenv("KILN_CACHE_DIR"); d && *d) {
    dir = d;
  } else if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    dir = x;
    llvm::sys::path::append(dir, "kiln");
  } else if (const char *h = std::getenv("HOME"); h && *h) {
    dir = h;
    llvm::sys::path::append(dir, ".cache", "kiln");
  } else {
    return "";
  }
  llvm::sys::path::append(dir, "autotune.tsv");
  return dir.str().str();
}

} // namespace kiln::autotune
