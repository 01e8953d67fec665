//===- OnnxSchemas.h - ONNX op schema queries -------------------*- C++ -*-===//
#ifndef KILN_FRONTENDS_ONNX_ONNXSCHEMAS_H
#define KILN_FRONTENDS_ONNX_ONNXSCHEMAS_H

#include <cstdint>
#include <string>

namespace kiln::onnx_import {

/// How many leading inputs a default-domain op requires at `opset`, from the
/// ONNX schemas; -1 when the schemas do not know the op.
int requiredInputs(const std::string &opType, int64_t opset);
/// Whether input `index` of the op is optional at `opset` (min_input counts
/// positions: an optional input before a required one, as opset-8 Scan's
/// sequence_lens, may be left empty).
bool inputIsOptional(const std::string &opType, int64_t opset, int index);

} // namespace kiln::onnx_import

#endif // KILN_FRONTENDS_ONNX_ONNXSCHEMAS_H
