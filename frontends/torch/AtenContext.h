//===- AtenContext.h - what an ATen op converter sees -----------*- C++ -*-===//
//
// The translator (TorchImporter.cpp) hands each node of the exported graph to
// the converter of its target (Aten*.cpp) through an AtenContext: the
// node's named arguments, the recorded dtype and shape of every tensor, and
// helpers that append ONNX nodes and constants to the model being built.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_TORCH_ATENCONTEXT_H
#define KILN_FRONTENDS_TORCH_ATENCONTEXT_H

#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/JSON.h"

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::torch_import {

/// A tensor's recorded type: ONNX element type and, per dimension, its
/// static size or the name of its symbol (sizes[i] < 0 then).
struct TensorInfo {
  int elemType = 0;
  std::vector<int64_t> sizes;
  std::vector<std::string> symbols;
  bool isFloat() const;
};

/// The graph being translated: the ONNX model, the torch tensors' types,
/// the values known at translation time (weights, constants) and a counter
/// for fresh names.
struct TranslationState {
  onnx::GraphProto *graph = nullptr;
  std::map<std::string, TensorInfo> infos;
  /// Weights and constants, by value name (their initializer).
  std::map<std::string, const onnx::TensorProto *> initializers;
  /// The values some node or the graph's outputs read.
  llvm::StringMap<bool> used;
  int64_t fresh = 0;
};

/// One ONNX attribute to set on a node.
struct Attr {
  std::string name;
  std::function<void(onnx::AttributeProto &)> set;
  static Attr i(const std::string &n, int64_t v);
  static Attr f(const std::string &n, float v);
  static Attr s(const std::string &n, const std::string &v);
  static Attr ints(const std::string &n, const std::vector<int64_t> &v);
};

class AtenContext {
public:
  AtenContext(TranslationState &st, const llvm::json::Object &node, std::string name,
              std::string target)
      : st(st), node(node), name(std::move(name)), target(std::move(target)) {}

  /// The argument named `arg` (torch's schema names), or null when the node
  /// leaves it at its default.
  const llvm::json::Object *arg(llvm::StringRef arg) const;
  bool isNone(llvm::StringRef arg) const;
  /// A tensor argument's value name ("" and an error when it is not one).
  std::string tensor(llvm::StringRef arg);
  /// A tensor-list argument (cat's tensors).
  std::vector<std::string> tensors(llvm::StringRef arg);
  int64_t i(llvm::StringRef arg, int64_t dflt);
  double f(llvm::StringRef arg, double dflt);
  bool b(llvm::StringRef arg, bool dflt);
  std::optional<std::string> str(llvm::StringRef arg);
  /// An int-list argument (as_ints; a lone as_int repeats `repeat` times).
  std::vector<int64_t> ints(llvm::StringRef arg, std::vector<int64_t> dflt, size_t repeat = 1);
  /// An int-list argument that may hold symbolic sizes, as a 1-D int64
  /// ONNX value (a constant, or a Concat of the symbols' values).
  std::string shapeArg(llvm::StringRef arg);
  /// A scalar argument (int, float or bool) as a scalar constant of
  /// `elemType`; nullopt when absent.
  std::optional<std::string> scalar(llvm::StringRef arg, int elemType);
  std::optional<double> scalarValue(llvm::StringRef arg);
  /// A scalar argument that may be a symbolic size (a run-time value then,
  /// cast to `elemType`), as a scalar of `elemType`; nullopt when absent.
  std::optional<std::string> sizeOrScalar(llvm::StringRef arg, int elemType);

  /// The node's outputs: output k's value name ("" when torch drops it).
  std::string out(size_t k = 0);
  size_t numOutputs() const;
  /// Output k of a list output (split's pieces).
  std::vector<std::string> outList(size_t k = 0);
  /// Whether output k is read by a later node or the graph's outputs.
  bool used(const std::string &value) const { return st.used.count(value); }

  const TensorInfo &info(const std::string &value);
  /// Appends an ONNX node; returns its first output.
  std::string emit(const std::string &op, std::vector<std::string> ins,
                   std::vector<std::string> outs = {}, std::vector<Attr> attrs = {});
  std::string fresh();
  std::string constI64(const std::vector<int64_t> &v, bool scalar = false);
  std::string constScalar(double v, int elemType);
  /// `value` cast to `elemType` (itself when it already has it).
  std::string castTo(const std::string &value, int elemType);
  /// The output's shape as a 1-D int64 value built from its recorded sizes:
  /// static sizes as they are, a symbol from `from`'s dimension carrying it,
  /// any other unknown size as `unknown` (-1 for Reshape, 1 for Expand; at
  /// most one -1).
  std::string shapeFromOutput(const std::string &outValue, const std::string &from,
                              int64_t unknown);
  /// The constant initializer holding `value`, or null.
  const onnx::TensorProto *constant(const std::string &value) const;

  mlir::LogicalResult fail(const std::string &msg);
  bool failed() const { return !error.empty(); }

  TranslationState &st;
  const llvm::json::Object &node;
  std::string name, target;
  std::string error;
};

using AtenConverter = std::function<mlir::LogicalResult(AtenContext &)>;

/// Registers every ATen converter, by target without the "torch.ops."
/// prefix ("aten.conv2d.default"), and the Python operators on symbolic
/// sizes ("_operator.mul").
void registerAtenConverters(llvm::StringMap<AtenConverter> &table);

/// ONNX element type of torch's ScalarType enum value (0: unsupported).
int onnxTypeOfTorch(int64_t scalarType);

} // namespace kiln::torch_import

#endif // KILN_FRONTENDS_TORCH_ATENCONTEXT_H
