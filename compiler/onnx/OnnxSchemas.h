//===- OnnxSchemas.h - ONNX op schema queries -------------------*- C++ -*-===//
#ifndef KILN_COMPILER_ONNX_ONNXSCHEMAS_H
#define KILN_COMPILER_ONNX_ONNXSCHEMAS_H

#include <cstdint>
#include <string>

namespace kiln::onnx_import {

/// How many leading inputs a default-domain op requires at `opset`, from the
/// ONNX schemas; -1 when the schemas do not know the op.
int requiredInputs(const std::string &opType, int64_t opset);

} // namespace kiln::onnx_import

#endif // KILN_COMPILER_ONNX_ONNXSCHEMAS_H
