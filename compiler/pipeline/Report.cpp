//===- Report.cpp - --report=FILE.json|FILE.md -----------------------------===//
#include "compiler/pipeline/Report.h"

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
  int64_t n = t.dtype == codegen::kF64 || t.dtype == codegen::kI64 ? 8
              : t.dtype == codegen::kI8 || t.dtype == codegen::kU8 ? 1
                                                                   : 4;
  for (int64_t d : t.shape)
    n *= d;
  return n;
}

std::string mib(int64_t bytes) {
  return llvm::formatv("{0:f2} MiB", bytes / (1024.0 * 1024.0)).str();
}

} // namespace

bool writeReport(const std::string &path, const codegen::Program &p,
                 const codegen::Program *unfused, std::string &error) {
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
       << "| # | kernel | ops | ONNX nodes | layout | dtype | workgroups | MFLOP | read | written |\n"
       << "| ---: | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: |\n";
    for (auto [i, l] : llvm::enumerate(p.launches)) {
      std::string nodes;
      for (auto &n : l.nodes)
        nodes += (nodes.empty() ? "" : ", ") + n;
      os << "| " << i << " | " << l.kernel << " | " << l.what << " | " << nodes
         << " | " << l.layout << " | f32 | " << l.workgroups << " | "
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
       << "- recomputed values: none\n";
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
  for (const auto &l : p.launches) {
    llvm::json::Array nodes;
    for (auto &n : l.nodes)
      nodes.push_back(n);
    kernels.push_back(llvm::json::Object{{"name", l.kernel},
                                         {"ops", l.what},
                                         {"onnx_nodes", std::move(nodes)},
                                         {"layout", l.layout},
                                         {"dtypes", llvm::json::Array{"f32"}},
                                         {"workgroups", l.workgroups},
                                         {"flops", l.flops},
                                         {"bytes_read", l.bytesRead},
                                         {"bytes_written", l.bytesWritten}});
  }
  llvm::json::Object root{
      {"model", p.name},
      {"target", "cpu"},
      {"kernels", std::move(kernels)},
      {"totals", totalsJson(t)},
      {"memory", llvm::json::Object{{"arena_bytes", p.arenaBytes},
                                    {"weights_bytes", static_cast<int64_t>(p.weights.size())},
                                    {"inputs_bytes", inBytes},
                                    {"outputs_bytes", outBytes}}},
      {"recomputed", llvm::json::Array{}}};
  if (unfused)
    root["unfused_totals"] = totalsJson(totalsOf(*unfused));
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return true;
}

} // namespace kiln::pipeline
