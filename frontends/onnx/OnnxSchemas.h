//===- OnnxSchemas.h - ONNX op schema queries -------------------*- C++ -*-===//
#ifndef KILN_FRONTENDS_ONNX_ONNXSCHEMAS_H
#define KILN_FRONTENDS_ONNX_ONNXSCHEMAS_H

#include <cstdint>
#include <string>

namespace onnx {
class NodeProto;
}

namespace kiln::onnx_import {

/// How many leading inputs a default-domain op requires at `opset`, from the
/// ONNX schemas; -1 when the schemas do not know the op.
int requiredInputs(const std::string &opType, int64_t opset);
/// Whether input `index` of the op is optional at `opset` (min_input counts
/// positions: an optional input before a required one, as opset-8 Scan's
/// sequence_lens, may be left empty).
bool inputIsOptional(const std::string &opType, int64_t opset, int index);
/// What is wrong with a default-domain node's attributes by its schema: one
/// the schema types differently ("attribute 'axis' holds a STRING; Softmax
/// takes an INT"), or a required one missing. "" when nothing is (or the
/// schemas do not know the op or the attribute).
std::string attributeError(const onnx::NodeProto &node, int64_t opset);

} // namespace kiln::onnx_import

#endif // KILN_FRONTENDS_ONNX_ONNXSCHEMAS_H
