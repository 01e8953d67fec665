//===- Report.h - what the compiler did, per kernel ------------*- C++ -*-===//
#ifndef KILN_DRIVER_REPORT_H
#define KILN_DRIVER_REPORT_H

#include "codegen/program/Program.h"

#include <map>
#include <string>

namespace kiln::pipeline {

/// What the CUDA targets add to the report: ptxas' resources per kernel
/// (for one architecture) and, from each launch's flops and bytes, a
/// roofline estimate of its time on an H100.
struct CudaReport {
  struct Resources {
    int registers = 0, spillStores = 0, spillLoads = 0, stackBytes = 0, sharedBytes = 0;
  };
  std::string target;        // "cuda" or "cuda-emu"
  std::string resourcesArch; // the CUBIN the resources come from ("sm_90")
  std::map<std::string, Resources> resources; // by kernel name
};

/// The roofline the report estimates with (H100 SXM, dense).
constexpr double kH100BytesPerSecond = 3.35e12;
constexpr double kH100Fp32FlopsPerSecond = 67e12;
constexpr double kH100Bf16FlopsPerSecond = 989e12;
constexpr double kH100Sms = 132; // a grid of fewer blocks leaves SMs idle

/// Writes FILE.json or FILE.md: every kernel with its ops, ONNX nodes,
/// layout, dtypes, flops and bytes; totals; memory; and, when `unfused` is
/// given, the same totals without fusion so the saving is stated. With
/// `cuda`: per kernel its grid and block, ptxas resources and the H100
/// roofline estimate.
bool writeReport(const std::string &path, const codegen::Program &program,
                 const codegen::Program *unfused, std::string &error,
                 const CudaReport *cuda = nullptr);

} // namespace kiln::pipeline

#endif // KILN_DRIVER_REPORT_H
