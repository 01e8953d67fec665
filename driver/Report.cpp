//===- Report.cpp - --report=FILE.json|FILE.md -----------------------------===//
#include "driver/Report.h"

#include "kiln/runtime.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln::pipeline {
namespace {

struct Totals {
  int64_t kernels = 0, flops = 0, read = 0, written = 0;
  /// What any schedule moves: weights once, inputs, outputs, and every
  /// intermediate that a contraction (conv, gemm, matmul, attention) kernel
  /// produces or reads, written once and read once. Everything else could in
  /// principle be fused into those kernels.
  int64_t unavoidable = 0;
};

Totals totalsOf(const codegen::Program &p) {
  Totals t;
  std::vector<bool> crossing(p.buffers.size(), false), used(p.buffers.size(), false);
  for (const auto &l : p.launches) {
    ++t.kernels;
    t.flops += l.flops;
    t.read += l.bytesRead;
    t.written += l.bytesWritten;
    for (int id : l.buffers) {
      used[id] = true;
      crossing[id] = crossing[id] || l.contraction;
    }
  }
  for (auto [id, b] : llvm::enumerate(p.buffers)) {
    if (b.kind == codegen::Buffer::Arena)
      t.unavoidable += crossing[id] ? 2 * b.bytes : 0;
    else if (used[id])
      t.unavoidable += b.bytes; // weights, inputs, outputs: once
  }
  return t;
}

llvm::json::Object totalsJson(const Totals &t) {
  return llvm::json::Object{{"kernels", t.kernels},
                            {"flops", t.flops},
                            {"bytes_read", t.read},
                            {"bytes_written", t.written},
                            {"bytes_moved", t.read + t.written},
                            {"bytes_unavoidable", t.unavoidable}};
}

int64_t tensorBytes(const codegen::TensorInfo &t) {
  int64_t n = 1;
  for (int64_t d : t.shape)
    n *= d;
  return static_cast<int64_t>(kiln_tensor_bytes(t.dtype, n));
}

/// The fraction of an H100's SMs the launch's grid occupies.
double smFill(const codegen::Launch &l) {
  double blocks = double(l.grid[0]) * l.grid[1] * l.grid[2];
  return std::min(1.0, blocks / kH100Sms);
}

/// Roofline time on an H100, microseconds: the larger of moving the
/// kernel's bytes at full bandwidth and doing its flops at the fp32 peak
/// (the dense bf16/f16 tensor-core peak for tensor-core kernels), divided
/// by the fraction of SMs the grid occupies.
double h100Microseconds(const codegen::Launch &l, bool &computeBound) {
  double mem = double(l.bytesRead + l.bytesWritten) / kH100BytesPerSecond;
  double math = double(l.flops) /
                (l.tensorCores ? kH100Bf16FlopsPerSecond : kH100Fp32FlopsPerSecond);
  computeBound = math > mem;
  return std::max(mem, math) / smFill(l) * 1e6;
}

/// "f16+f32" -> ["f16", "f32"].
llvm::json::Array dtypeArray(llvm::StringRef joined) {
  llvm::SmallVector<llvm::StringRef> parts;
  joined.split(parts, '+');
  llvm::json::Array a;
  for (llvm::StringRef t : parts)
    a.push_back(t.str());
  return a;
}

std::string dims(const uint32_t *d) {
  std::string s = std::to_string(d[0]);
  if (d[1] != 1 || d[2] != 1)
    s += "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
  return s;
}

std::string mib(int64_t bytes) {
  return llvm::formatv("{0:f2} MiB", bytes / (1024.0 * 1024.0)).str();
}

/// The precision a kernel multiplies in: kiln-lower-precision's, a
/// tensor-core kernel's operand type, or fp32.
std::string precisionOf(const codegen::Launch &l) {
  if (!l.precision.empty())
    return l.precision;
  if (l.tensorCores)
    return l.dtypes.substr(0, l.dtypes.find('+'));
  return "fp32";
}

} // namespace

bool writeReport(const std::string &path, const codegen::Program &p,
                 const codegen::Program *unfused, std::string &error, const CudaReport *cuda) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (ec) {
    error = "cannot write the report " + path + ": " + ec.message();
    return false;
  }
  Totals t = totalsOf(p);
  int64_t inBytes = 0, outBytes = 0;
  for (auto &i : p.inputs) inBytes += tensorBytes(i);
  for (auto &o : p.outputs) outBytes += tensorBytes(o);

  if (llvm::StringRef(path).ends_with(".md")) {
    os << "# Kiln report: " << p.name << "\n\n"
       << "| # | kernel | ops | ONNX nodes | layout | dtype | precision | workgroups | MFLOP | read | written |\n"
       << "| ---: | --- | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: |\n";
    for (auto [i, l] : llvm::enumerate(p.launches)) {
      std::string nodes;
      for (auto &n : l.nodes)
        nodes += (nodes.empty() ? "" : ", ") + n;
      os << "| " << i << " | " << l.kernel << " | " << l.what << " | " << nodes
         << " | " << l.layout << " | " << l.dtypes << " | "
         << precisionOf(l) << " | " << l.workgroups << " | "
         << llvm::formatv("{0:f3}", l.flops / 1e6) << " | " << l.bytesRead << " | "
         << l.bytesWritten << " |\n";
    }
    os << "\n## Totals\n\n"
       << "- kernels: " << t.kernels << "\n"
       << "- GFLOP per run: " << llvm::formatv("{0:f3}", t.flops / 1e9) << "\n"
       << "- bytes moved per run: " << mib(t.read + t.written) << " (read "
       << mib(t.read) << ", written " << mib(t.written) << "); "
       << llvm::formatv("{0:f2}", double(t.read + t.written) / std::max<int64_t>(t.unavoidable, 1))
       << "x the unavoidable " << mib(t.unavoidable)
       << " (weights, inputs, outputs, tensors crossing a conv/matmul)\n"
       << "- activation arena: " << mib(p.arenaBytes) << "; weights: "
       << mib(p.weights.size()) << "; inputs: " << mib(inBytes)
       << "; outputs: " << mib(outBytes) << "\n"
       << "- memory plan (kiln-plan-memory): arena " << mib(p.arenaBytes) << " against a live peak of "
       << mib(p.memory.livePeak) << " (no plan does better), "
       << mib(p.memory.naive) << " first fit in schedule order and " << mib(p.memory.noReuse)
       << " for every intermediate its own bytes; " << p.memory.inPlace
       << " kernels in place, " << p.memory.elided.size()
       << " concats elided (their inputs written into them); placement: " << p.memory.order
       << "\n";
    int64_t extra = 0, recomputed = 0;
    for (const auto &l : p.launches)
      if (!l.recomputes.empty()) {
        extra += l.extraFlops;
        ++recomputed;
      }
    if (const codegen::PrecisionSummary &ps = p.precision; !ps.mode.empty()) {
      os << "- precision (--precision=" << ps.mode;
      if (ps.mode == "auto")
        os << ", --tolerance " << llvm::formatv("{0:e1}", ps.tolerance);
      if (ps.mode == "int8")
        os << "): " << ps.lowered << " of " << ps.contractions
           << " gemms, matmuls and convolutions with constant weights on 8-bit integers "
              "(uint8 activations over their ranges, int8 weights per output column or "
              "channel, depthwise convolutions in f32 arithmetic on the 8-bit activations; "
              "the precision column says which), the rest fp32; ranges ("
           << ps.rangeMethod << ") measured on ";
      else
        os << "): " << ps.lowered << " of " << ps.contractions
           << " contractions lowered (the precision column says which), the rest fp32; on ";
      os << ps.inputs << ": relative error " << llvm::formatv("{0:e2}", ps.relError)
         << " against Kiln's fp32 build (max abs " << llvm::formatv("{0:e2}", ps.maxAbsError)
         << ")";
      if (ps.top1Rows > 0)
        os << ", top-1 agreement " << ps.top1Agree << "/" << ps.top1Rows;
      os << "; " << ps.trials << " trial builds\n";
    }
    if (const codegen::WeightsSummary &w = p.weightQuantization; w.bits)
      os << "- weights (--weights=int" << w.bits << ":" << w.block << "): " << w.quantized
         << " of " << w.products
         << " gemms and matmuls on block-quantized codes (a scale and zero point per output "
            "column and block of "
         << w.block << " k; activations f32), the rest as they were\n";
    if (const codegen::AutotuneSummary &a = p.autotune; a.on) {
      int changed = 0, cached = 0;
      for (const auto &op : a.ops) {
        changed += op.changed;
        cached += op.cached;
      }
      os << "- autotune (--autotune, " << a.threads << " thread" << (a.threads == 1 ? "" : "s")
         << ", CPU " << a.cpu << "): " << a.ops.size() << " ops with choices (" << cached
         << " from the cache), " << changed << " changed from the default\n";
      for (const auto &op : a.ops)
        if (op.changed) {
          os << "  - " << llvm::join(op.kernels, ", ") << " (" << op.what << "):";
          if (op.chosen.kBlock)
            os << (op.chosen.kBlock == codegen::kKBlockL2 ? " k blocks as deep as L2 holds"
                                                           : " k blocks of 128");
          if (op.chosen.winograd >= 0)
            os << (op.chosen.kBlock ? "," : "") << (op.chosen.winograd ? " Winograd" : " direct products");
          os << "\n";
        }
    }
    if (p.remat.budget < 0) {
      os << "- recomputed values: none (no --max-memory)\n";
    } else {
      os << "- rematerialization (kiln-rematerialize, --max-memory " << mib(p.remat.budget)
         << "): " << recomputed << " kernels recompute values, inside the kernels that read "
            "them or as copies next to them ("
         << p.remat.applied << " of " << p.remat.candidates << " candidates, cheapest first); arena "
         << mib(p.arenaBytes) << " against " << mib(p.remat.arenaWithout)
         << " without; extra work " << llvm::formatv("{0:f3}", extra / 1e6) << " MFLOP ("
         << llvm::formatv("{0:f2}", 100.0 * extra / std::max<int64_t>(t.flops - extra, 1))
         << "% of the run's flops)\n";
      if (p.remat.nchwForMemory)
        os << "  - every region NCHW: the NHWC regions --layout=auto chose could not meet the "
              "budget (no convolution prologues, no concats in place)\n";
      for (auto [i, l] : llvm::enumerate(p.launches))
        if (!l.recomputes.empty())
          os << "  - " << l.kernel << " (#" << i << ") recomputes " << l.recomputes
             << (l.recomputedCopy ? ", a value an earlier kernel computed" : " on its input")
             << ": +" << llvm::formatv("{0:f3}", l.extraFlops / 1e6) << " MFLOP\n";
    }
    if (cuda) {
      os << "\n## CUDA kernels (" << cuda->target << ")\n\n"
         << "Resources from ptxas for " << (cuda->resourcesArch.empty() ? "-" : cuda->resourcesArch)
         << "; the estimate is a roofline on an H100 (3.35 TB/s, 67 TFLOP/s fp32, 989 TFLOP/s "
            "bf16 dense): max(bytes / bandwidth, flops / peak) divided by the fraction of the "
            "132 SMs the grid fills (blocks / 132, at most 1), without launch overhead.\n\n"
         << "| # | kernel | grid | block | registers | spill st/ld (B) | stack (B) | smem (B) "
            "| MFLOP | bytes | SM fill | H100 est. (us) | bound |\n"
         << "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n";
      double total = 0;
      for (auto [i, l] : llvm::enumerate(p.launches)) {
        auto it = cuda->resources.find(l.kernel);
        CudaReport::Resources r = it == cuda->resources.end() ? CudaReport::Resources{} : it->second;
        bool compute = false;
        double us = h100Microseconds(l, compute);
        total += us;
        os << "| " << i << " | " << l.kernel << " | " << dims(l.grid) << " | " << dims(l.block)
           << " | " << r.registers << " | " << r.spillStores << "/" << r.spillLoads << " | "
           << r.stackBytes << " | " << std::max<int64_t>(r.sharedBytes, l.sharedBytes) << " | "
           << llvm::formatv("{0:f3}", l.flops / 1e6) << " | " << l.bytesRead + l.bytesWritten
           << " | " << llvm::formatv("{0:f2}", smFill(l)) << " | " << llvm::formatv("{0:f2}", us)
           << " | " << (compute ? (l.tensorCores ? "compute (tensor cores)" : "compute") : "memory")
           << " |\n";
      }
      os << "\nEstimated H100 time for one run: " << llvm::formatv("{0:f1}", total)
         << " us (sum of the kernels' roofline times).\n";
    }
    if (unfused) {
      Totals u = totalsOf(*unfused);
      os << "\n## Without fusion\n\n"
         << "- kernels: " << u.kernels << " (fusion saves " << u.kernels - t.kernels
         << ")\n"
         << "- bytes moved per run: " << mib(u.read + u.written) << " (fusion saves "
         << mib(u.read + u.written - t.read - t.written) << ")\n";
    }
    return true;
  }

  llvm::json::Array kernels;
  double cudaTotal = 0;
  for (const auto &l : p.launches) {
    llvm::json::Array nodes;
    for (auto &n : l.nodes)
      nodes.push_back(n);
    llvm::json::Object k{{"name", l.kernel},
                                         {"ops", l.what},
                                         {"onnx_nodes", std::move(nodes)},
                                         {"layout", l.layout},
                                         {"dtypes", dtypeArray(l.dtypes)},
                                         {"precision", precisionOf(l)},
                                         {"workgroups", l.workgroups},
                                         {"flops", l.flops},
                                         {"bytes_read", l.bytesRead},
                                         {"bytes_written", l.bytesWritten},
                                         {"op", l.op}};
    if (l.tunable & codegen::kTuneKBlock)
      k["k_block"] = codegen::kBlockName(l.kBlock);
    if (l.tunable & codegen::kTuneWinograd)
      k["winograd"] = l.winograd;
    if (cuda) {
      auto it = cuda->resources.find(l.kernel);
      CudaReport::Resources r = it == cuda->resources.end() ? CudaReport::Resources{} : it->second;
      bool compute = false;
      double us = h100Microseconds(l, compute);
      cudaTotal += us;
      k["cuda"] = llvm::json::Object{
          {"grid", llvm::json::Array{l.grid[0], l.grid[1], l.grid[2]}},
          {"block", llvm::json::Array{l.block[0], l.block[1], l.block[2]}},
          {"registers", r.registers},
          {"spill_store_bytes", r.spillStores},
          {"spill_load_bytes", r.spillLoads},
          {"stack_bytes", r.stackBytes},
          {"shared_bytes", std::max<int64_t>(r.sharedBytes, l.sharedBytes)},
          {"sm_fill", smFill(l)},
          {"h100_estimate_us", us},
          {"tensor_cores", l.tensorCores},
          {"bound", compute ? "compute" : "memory"}};
    }
    kernels.push_back(std::move(k));
  }
  llvm::json::Array recomputed;
  int64_t extraFlops = 0;
  for (const auto &l : p.launches)
    if (!l.recomputes.empty()) {
      extraFlops += l.extraFlops;
      recomputed.push_back(llvm::json::Object{
          {"kernel", l.kernel}, {"ops", l.recomputes}, {"extra_flops", l.extraFlops},
          {"copy", l.recomputedCopy}});
    }
  llvm::json::Object root{
      {"model", p.name},
      {"target", cuda ? cuda->target : "cpu"},
      {"kernels", std::move(kernels)},
      {"totals", totalsJson(t)},
      {"memory", llvm::json::Object{{"arena_bytes", p.arenaBytes},
                                    {"live_peak_bytes", p.memory.livePeak},
                                    {"naive_bytes", p.memory.naive},
                                    {"no_reuse_bytes", p.memory.noReuse},
                                    {"kernels_in_place", p.memory.inPlace},
                                    {"concats_elided", static_cast<int64_t>(p.memory.elided.size())},
                                    {"placement", p.memory.order},
                                    {"weights_bytes", static_cast<int64_t>(p.weights.size())},
                                    {"inputs_bytes", inBytes},
                                    {"outputs_bytes", outBytes}}},
      {"recomputed", std::move(recomputed)}};
  if (p.remat.budget >= 0)
    root["rematerialization"] = llvm::json::Object{
        {"max_memory_bytes", p.remat.budget},
        {"arena_bytes_without", p.remat.arenaWithout},
        {"candidates", p.remat.candidates},
        {"applied", p.remat.applied},
        {"nchw_for_memory", p.remat.nchwForMemory},
        {"extra_flops", extraFlops},
        {"flops_without", t.flops - extraFlops}};
  if (const codegen::PrecisionSummary &ps = p.precision; !ps.mode.empty())
    root["precision"] = llvm::json::Object{{"mode", ps.mode},
                                           {"tolerance", ps.tolerance},
                                           {"inputs", ps.inputs},
                                           {"contractions", ps.contractions},
                                           {"lowered", ps.lowered},
                                           {"trials", ps.trials},
                                           {"relative_error", ps.relError},
                                           {"max_abs_error", ps.maxAbsError},
                                           {"top1_agree", ps.top1Agree},
                                           {"top1_rows", ps.top1Rows}};
  if (const codegen::PrecisionSummary &ps = p.precision; ps.mode == "int8") {
    llvm::json::Array ranges;
    for (const auto &r : ps.ranges)
      ranges.push_back(llvm::json::Object{{"node", r.node}, {"lo", r.lo}, {"hi", r.hi}});
    auto *precision = root.getObject("precision");
    (*precision)["range_method"] = ps.rangeMethod;
    (*precision)["ranges"] = std::move(ranges);
  }
  if (const codegen::WeightsSummary &w = p.weightQuantization; w.bits)
    root["weights"] = llvm::json::Object{{"bits", w.bits},
                                         {"block", w.block},
                                         {"quantized", w.quantized},
                                         {"products", w.products}};
  if (const codegen::AutotuneSummary &a = p.autotune; a.on) {
    llvm::json::Array variants, ops;
    for (const std::string &v : a.variants)
      variants.push_back(v);
    for (const auto &op : a.ops) {
      llvm::json::Array kernels, ms;
      for (const std::string &k : op.kernels)
        kernels.push_back(k);
      for (double t : op.ms)
        ms.push_back(t);
      llvm::json::Object o{{"op", op.op},
                           {"ops", op.what},
                           {"kernels", std::move(kernels)},
                           {"cached", op.cached},
                           {"changed", op.changed},
                           {"ms", std::move(ms)}};
      if (op.chosen.kBlock)
        o["k_block"] = codegen::kBlockName(op.chosen.kBlock);
      if (op.chosen.winograd >= 0)
        o["winograd"] = op.chosen.winograd == 1;
      ops.push_back(std::move(o));
    }
    root["autotune"] = llvm::json::Object{{"threads", a.threads},
                                          {"cpu", a.cpu},
                                          {"cache", a.cache},
                                          {"variants", std::move(variants)},
                                          {"rounds", a.rounds},
                                          {"runs", a.runs},
                                          {"seconds", a.seconds},
                                          {"ops", std::move(ops)}};
  }
  if (unfused)
    root["unfused_totals"] = totalsJson(totalsOf(*unfused));
  if (cuda)
    root["cuda"] = llvm::json::Object{{"resources_arch", cuda->resourcesArch},
                                      {"h100_estimate_us", cudaTotal}};
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return true;
}

} // namespace kiln::pipeline
