//===- Calibrate.cpp - --precision=auto: measure builds, choose per region ===//
#include "driver/Calibrate.h"

#include "codegen/program/Program.h"
#include "dialects/kiln/KilnDialect.h"

#include "support/TensorFile.h"
#include "kiln/runtime.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

namespace kiln::calibrate {

bool prepareInputs(mlir::ModuleOp module, const std::vector<std::string> &given,
                   const std::string &dir, std::vector<std::string> &runArgs,
                   std::string &what, std::string &error, bool zerosForOthers) {
  std::map<std::string, std::string> files;
  for (const std::string &g : given) {
    auto [name, file] = llvm::StringRef(g).split('=');
    if (name.empty() || file.empty()) {
      error = "--calibrate expects NAME=FILE (.npy or .pb), got '" + g + "'";
      return false;
    }
    if (files.count(name.str())) {
      error = "--calibrate names '" + name.str() + "' twice (several samples of an input are "
              "for --precision=int8's ranges)";
      return false;
    }
    files[name.str()] = file.str();
  }
  mlir::func::FuncOp main;
  module.walk([&](mlir::func::FuncOp f) {
    if (!main || f.getName() == "main")
      main = f;
  });
  if (!main) {
    error = "the model has no function to calibrate";
    return false;
  }
  std::mt19937_64 rng(20261125);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  int randomCount = 0;
  for (unsigned i = 0; i < main.getNumArguments(); ++i) {
    auto nameAttr = main.getArgAttrOfType<mlir::StringAttr>(i, kiln::attr::kName);
    std::string name = nameAttr ? nameAttr.str() : "arg" + std::to_string(i);
    if (llvm::StringRef(name).starts_with("__kiln_size_"))
      continue; // a dynamic dimension's size: the runtime passes it
    if (auto it = files.find(name); it != files.end()) {
      runArgs.push_back("--input");
      runArgs.push_back(name + "=" + it->second);
      files.erase(it);
      continue;
    }
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(main.getArgument(i).getType());
    if (zerosForOthers && type && type.hasStaticShape() && !type.getElementType().isF32() &&
        codegen::dtypeCode(type.getElementType())) {
      support::HostArray a;
      a.dtype = codegen::dtypeCode(type.getElementType());
      a.shape.assign(type.getShape().begin(), type.getShape().end());
      a.data.assign(a.bytes(), 0);
      std::string path = dir + "/calib_" + std::to_string(i) + ".npy";
      if (!support::writeNpy(path, a, error))
        return false;
      runArgs.push_back("--input");
      runArgs.push_back(name + "=" + path);
      continue;
    }
    if (!type || !type.hasStaticShape() || !type.getElementType().isF32()) {
      error = "input '" + name + "' is not a static f32 tensor, so it cannot be drawn at random: "
              "give it with --calibrate " + name + "=FILE";
      return false;
    }
    support::HostArray a;
    a.dtype = KILN_F32;
    a.shape.assign(type.getShape().begin(), type.getShape().end());
    a.data.resize(type.getNumElements() * sizeof(float));
    float *v = reinterpret_cast<float *>(a.data.data());
    for (int64_t e = 0; e < type.getNumElements(); ++e)
      v[e] = normal(rng);
    std::string path = dir + "/calib_" + std::to_string(i) + ".npy";
    if (!support::writeNpy(path, a, error))
      return false;
    runArgs.push_back("--input");
    runArgs.push_back(name + "=" + path);
    ++randomCount;
  }
  if (!files.empty()) {
    error = "--calibrate names '" + files.begin()->first + "', which is not an input of the model";
    return false;
  }
  what = randomCount == 0 ? "the --calibrate inputs"
         : given.empty()  ? "random normal inputs (seeded)"
                          : "the --calibrate inputs, random normal values for the others";
  return true;
}

bool splitSamples(const std::vector<std::string> &given,
                  std::vector<std::vector<std::string>> &samples, std::string &error) {
  std::vector<std::string> names; // in the order first given
  std::map<std::string, std::vector<std::string>> files;
  for (const std::string &g : given) {
    std::string name = llvm::StringRef(g).split('=').first.str();
    if (!files.count(name))
      names.push_back(name);
    files[name].push_back(g);
  }
  size_t n = names.empty() ? 1 : files[names.front()].size();
  for (const std::string &name : names)
    if (files[name].size() != n) {
      error = "--calibrate gives '" + names.front() + "' " + std::to_string(n) + " time(s) and '" +
              name + "' " + std::to_string(files[name].size()) +
              ": each sample needs a file for every input named";
      return false;
    }
  samples.assign(n, {});
  for (const std::string &name : names)
    for (size_t k = 0; k < n; ++k)
      samples[k].push_back(files[name][k]);
  return true;
}

namespace {

/// The last lines of a child's log, for an error message.
std::string tailOf(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return "";
  llvm::StringRef text = (*buf)->getBuffer().rtrim();
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  std::string out;
  for (size_t i = lines.size() > 12 ? lines.size() - 12 : 0; i < lines.size(); ++i)
    out += "\n  " + lines[i].str();
  return out;
}

bool execute(const std::string &program, const std::vector<std::string> &args,
             const std::string &log, std::string &error) {
  std::vector<llvm::StringRef> argv{program};
  for (const std::string &a : args)
    argv.push_back(a);
  std::optional<llvm::StringRef> redirects[] = {llvm::StringRef(""), llvm::StringRef(log),
                                                llvm::StringRef(log)};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(program, argv, std::nullopt, redirects, 0, 0, &message);
  if (rc != 0) {
    error = llvm::sys::path::filename(program).str() + " failed" +
            (message.empty() ? "" : " (" + message + ")") + ":" + tailOf(log);
    return false;
  }
  return true;
}

} // namespace

bool runBuild(const std::string &kilnRun, const std::string &so,
              const std::vector<std::string> &runArgs, const std::string &dir,
              const std::string &name, Outputs &outputs, std::string &error, bool keepSo) {
  std::string outDir = dir + "/" + name + ".out", log = dir + "/" + name + ".log";
  std::vector<std::string> run{so};
  run.insert(run.end(), runArgs.begin(), runArgs.end());
  run.push_back("--output-dir");
  run.push_back(outDir);
  if (!execute(kilnRun, run, log, error))
    return false;
  if (!keepSo)
    llvm::sys::fs::remove(so);
  std::vector<std::string> files;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(outDir, ec), end; it != end && !ec; it.increment(ec))
    if (llvm::StringRef(it->path()).ends_with(".npy"))
      files.push_back(it->path());
  std::sort(files.begin(), files.end());
  outputs = {};
  for (const std::string &f : files) {
    support::HostArray a;
    if (!support::readTensorFile(f, a, error))
      return false;
    std::vector<double> v(a.numElements());
    for (int64_t e = 0; e < a.numElements(); ++e)
      v[e] = a.at(e);
    outputs.names.push_back(llvm::sys::path::stem(f).str());
    outputs.shapes.push_back(a.shape);
    outputs.values.push_back(std::move(v));
    llvm::sys::fs::remove(f);
  }
  return true;
}

Error compare(const Outputs &got, const Outputs &ref) {
  Error e;
  if (got.names != ref.names) {
    e.rel = e.maxAbs = INFINITY;
    return e;
  }
  for (size_t o = 0; o < ref.values.size(); ++o) {
    const auto &y = got.values[o], &r = ref.values[o];
    if (y.size() != r.size()) {
      e.rel = e.maxAbs = INFINITY;
      continue;
    }
    double diff = 0, scale = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      double d = std::fabs(y[i] - r[i]);
      if (std::isnan(y[i]) != std::isnan(r[i]))
        d = INFINITY;
      else if (std::isnan(r[i]))
        d = 0;
      diff = std::max(diff, d);
      if (!std::isnan(r[i]))
        scale = std::max(scale, std::fabs(r[i]));
    }
    e.maxAbs = std::max(e.maxAbs, diff);
    e.rel = std::max(e.rel, diff == 0 ? 0.0 : diff / std::max(scale, 1e-30));
    const auto &shape = ref.shapes[o];
    int64_t classes = shape.empty() ? 0 : shape.back();
    if (classes < 2 || r.empty())
      continue;
    for (size_t row = 0; row + classes <= r.size(); row += classes) {
      auto argmax = [&](const std::vector<double> &v) {
        return std::max_element(v.begin() + row, v.begin() + row + classes) - v.begin();
      };
      e.top1Agree += argmax(y) == argmax(r);
      ++e.top1Rows;
    }
  }
  return e;
}

SearchResult search(int64_t n, double tolerance, int maxTrials,
                    const std::function<std::optional<Error>(const std::set<int64_t> &)> &measure) {
  SearchResult r;
  // Lowered: [0, k) less `kept`; fp32: `kept` and [k, n).
  auto config = [&](const std::set<int64_t> &kept, int64_t k) {
    std::set<int64_t> keep = kept;
    for (int64_t i = k; i < n; ++i)
      keep.insert(i);
    return keep;
  };
  std::set<int64_t> kept;
  int64_t start = 0; // [0, start) decided; its error is r.chosen
  auto within = [&](int64_t k, bool &ok) {
    ++r.trials;
    std::optional<Error> e = measure(config(kept, k));
    if (!e) {
      r.failed = true;
      return false;
    }
    ok = e->rel <= tolerance;
    if (ok)
      r.chosen = *e;
    return true;
  };
  while (start < n && r.trials < maxTrials) {
    bool ok;
    if (!within(n, ok))
      break;
    if (ok) {
      start = n;
      break;
    }
    // The longest prefix within: lo is (start, known within), hi the
    // largest k not known to be out.
    int64_t lo = start, hi = n - 1;
    while (lo < hi && r.trials < maxTrials) {
      int64_t mid = (lo + hi + 1) / 2;
      if (!within(mid, ok))
        break;
      if (ok)
        lo = mid;
      else
        hi = mid - 1;
    }
    if (r.failed || lo < hi) { // out of trials: what is decided stands
      start = lo;
      break;
    }
    kept.insert(lo);
    start = lo + 1;
  }
  r.keep = config(kept, start);
  return r;
}

} // namespace kiln::calibrate
