//===- OnnxSchemas.cpp - what the ONNX op schemas say about a node ---------===//
//
// The op schemas of the system's libonnx (onnx 1.12: opsets up to 17) give
// each op's required inputs. Newer versions of an op never add a required
// input, so the newest schema at or below the model's opset is a safe lower
// bound for opsets past 17. Ops added after opset 17 are listed here from the
// pinned onnx's schemas.
//
//===----------------------------------------------------------------------===//
// Kiln builds without C++ exceptions: ONNX's headers abort instead of throwing.
#define ONNX_NO_EXCEPTIONS 1
#include "onnx/defs/schema.h"

#include "frontends/onnx/OnnxSchemas.h"

namespace kiln::onnx_import {

int requiredInputs(const std::string &opType, int64_t opset) {
  // Default-domain ops of opsets 18 to 25 (onnx 1.20's schemas: min_input).
  static const std::pair<const char *, int> newer[] = {
      {"AffineGrid", 2}, {"Attention", 3}, {"BitwiseAnd", 2}, {"BitwiseNot", 1},
      {"BitwiseOr", 2}, {"BitwiseXor", 2}, {"CenterCropPad", 2}, {"Col2Im", 3},
      {"DeformConv", 3}, {"Gelu", 1}, {"GroupNormalization", 3}, {"ImageDecoder", 1},
      {"Mish", 1}, {"RMSNormalization", 2}, {"RegexFullMatch", 1}, {"RotaryEmbedding", 3},
      {"StringConcat", 2}, {"StringSplit", 1}, {"Swish", 1}, {"TensorScatter", 2}};
  for (const auto &[name, n] : newer)
    if (opType == name)
      return n;
  const auto *schema = onnx::OpSchemaRegistry::Schema(
      opType, static_cast<int>(std::min<int64_t>(opset, INT32_MAX)), "");
  if (!schema) // an op newer than the model's opset: its first version's rule
    schema = onnx::OpSchemaRegistry::Schema(opType, "");
  return schema ? schema->min_input() : -1;
}

bool inputIsOptional(const std::string &opType, int64_t opset, int index) {
  const auto *schema = onnx::OpSchemaRegistry::Schema(
      opType, static_cast<int>(std::min<int64_t>(opset, INT32_MAX)), "");
  if (!schema || index < 0 || static_cast<size_t>(index) >= schema->inputs().size())
    return false;
  return schema->inputs()[index].GetOption() == onnx::OpSchema::Optional;
}

std::string attributeError(const onnx::NodeProto &node, int64_t opset) {
  const auto *schema = onnx::OpSchemaRegistry::Schema(
      node.op_type(), static_cast<int>(std::min<int64_t>(opset, INT32_MAX)), "");
  if (!schema)
    return "";
  auto typeName = [](int t) -> std::string {
    std::string n = onnx::AttributeProto_AttributeType_Name(
        static_cast<onnx::AttributeProto_AttributeType>(t));
    if (n.empty() || n.back() == 'S') // (INTS, FLOATS, ...)
      return n;
    return (n[0] == 'I' || n[0] == 'U' ? "an " : "a ") + n;
  };
  for (const auto &a : node.attribute()) {
    auto it = schema->attributes().find(a.name());
    // (an attribute without a type is from IR version 1, which had none)
    if (it == schema->attributes().end() || a.type() == onnx::AttributeProto::UNDEFINED)
      continue;
    if (a.type() != it->second.type)
      return "attribute '" + a.name() + "' holds " + typeName(a.type()) + "; " +
             node.op_type() + " takes " + typeName(it->second.type);
  }
  for (const auto &[name, info] : schema->attributes()) {
    if (!info.required)
      continue;
    bool given = false;
    for (const auto &a : node.attribute())
      given |= a.name() == name;
    if (!given)
      return "attribute '" + name + "' is required";
  }
  return "";
}

} // namespace kiln::onnx_import
