//===- Report.h - what the compiler did, per kernel ------------*- C++ -*-===//
#ifndef KILN_COMPILER_PIPELINE_REPORT_H
#define KILN_COMPILER_PIPELINE_REPORT_H

#include "codegen/common/Program.h"

#include <string>

namespace kiln::pipeline {

/// Writes FILE.json or FILE.md: every kernel with its ops, ONNX nodes,
/// layout, dtypes, flops and bytes; totals; memory; and, when `unfused` is
/// given, the same totals without fusion so the saving is stated.
bool writeReport(const std::string &path, const codegen::Program &program,
                 const codegen::Program *unfused, std::string &error);

} // namespace kiln::pipeline

#endif // KILN_COMPILER_PIPELINE_REPORT_H
