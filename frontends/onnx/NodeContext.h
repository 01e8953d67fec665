//===- NodeContext.h - what an ONNX op converter sees -----------*- C++ -*-===//
//
// The converters (one file per op family) receive a NodeContext: the node, the
// opset version in force, its inputs as kiln values or compile-time host
// tensors, and helpers to read attributes, create ops and report errors.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_ONNX_NODECONTEXT_H
#define KILN_FRONTENDS_ONNX_NODECONTEXT_H

#include "dialects/kiln/KilnDialect.h"

#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

namespace kiln::onnx_import {

/// A host value as an integer. Host values are widened to double, and the
/// cast of a double outside int64's range (or NaN) is undefined: saturate
/// (NaN reads 0), so that a nonsense size or index reaches the range checks.
inline int64_t hostInt(double v) {
  if (std::isnan(v))
    return 0;
  if (v >= 9223372036854775807.0)
    return INT64_MAX;
  if (v <= -9223372036854775808.0)
    return INT64_MIN;
  return static_cast<int64_t>(v);
}

/// The most elements a tensor Kiln builds may have (2^40): larger shapes,
/// negative dimensions and products that overflow are refused.
constexpr int64_t kMaxTensorElements = int64_t(1) << 40;
/// The most elements of one tensor the compiler holds in memory while
/// importing: an initializer, a constant evaluated at import, an index table
/// a converter builds (a Pad's or Resize's per-position map, an iota). 2^27
/// (a GiB of widened values; the largest weight of VGG-19 has 103M) unless
/// `--max-constant-elements` (ImportOptions::maxConstantElements) says
/// otherwise.
constexpr int64_t kDefaultMaxConstantElements = int64_t(1) << 27;
/// The limit in force for the import running on this thread.
int64_t maxConstantElements();
/// Sets maxConstantElements() on this thread while it lives.
class ConstantElementLimit {
public:
  explicit ConstantElementLimit(int64_t limit);
  ~ConstantElementLimit();
  ConstantElementLimit(const ConstantElementLimit &) = delete;
  ConstantElementLimit &operator=(const ConstantElementLimit &) = delete;

private:
  int64_t previous;
};
/// "the compiler's limit of N elements for one constant or table
/// (--max-constant-elements raises it)", for diagnostics.
std::string constantLimitText();

/// The elements of `shape`, or -1 when a dimension is negative, one passes
/// kMaxTensorElements or the count (of the non-zero dimensions) does.
inline int64_t checkedElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > kMaxTensorElements)
      return -1;
    if (d == 0)
      continue;
    if (n > kMaxTensorElements / d)
      n = kMaxTensorElements + 1;
    else
      n *= d;
  }
  if (n > kMaxTensorElements)
    return -1;
  return llvm::is_contained(shape, 0) ? 0 : n;
}

/// A tensor whose value is known while importing (initializers, Constant
/// nodes, and everything computed from them by shape arithmetic).
struct HostTensor {
  mlir::Type elementType;              // f32, i64, ...
  std::vector<int64_t> shape;
  std::vector<double> values;          // any element type, widened
  std::string raw;                     // float initializers: raw bytes (elementType)
  /// Computed from the size of a symbolic (dynamic) dimension, whose value
  /// here is only its bound: usable as a Reshape target, nowhere else.
  bool fromSymbolicShape = false;
  /// Whether its shape (not only its values) may depend on one: false for
  /// Shape's result (its length is the rank).
  bool shapeFromSymbolicShape = false;
  /// Per element of a value computed from symbolic sizes, when known: -1
  /// a static value, s >= 0 exactly the size of symbol s (Shape's result and
  /// data movement on it: Gather, Slice, Concat, ...), -2 anything else.
  /// Empty: all -2 (or all -1 when not fromSymbolicShape).
  std::vector<int32_t> symbolTags;
  /// Per axis: the symbol it carries (ConstantOfShape of an exact shape:
  /// the same value everywhere, so the padded layout is exact); such a
  /// tensor may be materialized for run-time ops. Empty: none.
  std::vector<int32_t> axisSymbols;
  /// Per axis: the symbol whose size the axis has, for a tensor whose values
  /// are not positional (arange(B) * S): what Shape reads. Empty: none, or
  /// axisSymbols says.
  std::vector<int32_t> shapeSymbols;
  const std::vector<int32_t> &axesOf() const {
    return axisSymbols.empty() ? shapeSymbols : axisSymbols;
  }

  /// The element count; -1 for a negative dimension or a count past
  /// kMaxTensorElements.
  int64_t numElements() const { return checkedElements(shape); }
  /// Whether the import may evaluate a tensor of this shape.
  bool evaluable() const {
    int64_t n = numElements();
    return n >= 0 && n <= maxConstantElements();
  }
  bool isInteger() const { return elementType.isInteger(); }
};

/// One value of the graph: a kiln SSA value, a host tensor, or both.
struct Slot {
  mlir::Value value;
  std::optional<HostTensor> host;
};

class Importer;

class NodeContext {
public:
  NodeContext(Importer &imp, const onnx::NodeProto &node, int64_t opset,
              mlir::OpBuilder &builder, mlir::Location loc)
      : imp(imp), node(node), opset(opset), builder(builder), loc(loc) {}

  Importer &imp;
  const onnx::NodeProto &node;
  int64_t opset;
  mlir::OpBuilder &builder;
  mlir::Location loc;

  // Inputs --------------------------------------------------------------
  size_t numInputs() const { return node.input_size(); }
  bool hasInput(size_t i) const {
    return i < static_cast<size_t>(node.input_size()) && !node.input(i).empty();
  }
  /// The input as a kiln value (materializing a constant if needed).
  mlir::Value input(size_t i);
  /// The input's compile-time value, or null if it is only known at run time.
  const HostTensor *hostInput(size_t i);
  mlir::RankedTensorType inputType(size_t i);

  // Attributes ----------------------------------------------------------
  const onnx::AttributeProto *attr(llvm::StringRef name) const;
  int64_t attrInt(llvm::StringRef name, int64_t dflt) const;
  float attrFloat(llvm::StringRef name, float dflt) const;
  std::string attrString(llvm::StringRef name, llvm::StringRef dflt) const;
  std::optional<std::vector<int64_t>> attrInts(llvm::StringRef name) const;

  // Outputs -------------------------------------------------------------
  void setOutput(size_t i, mlir::Value v);
  void setHostOutput(size_t i, HostTensor t);
  /// Sets output 0 from a created op, passing a failure through.
  mlir::LogicalResult setResult(mlir::FailureOr<mlir::Value> v) {
    if (mlir::failed(v))
      return mlir::failure();
    setOutput(0, *v);
    return mlir::success();
  }

  // Dynamic shapes: the model needs axis `d` of `v` to be `size` (or equal
  // to axis `db` of `b`). When it carries a symbol, requests that the
  // symbol be fixed and returns true: return failure() without a
  // diagnostic; the import restarts with the symbol static (DynamicDims.h).
  bool requireSize(mlir::Value v, int64_t d, int64_t size);
  /// Axis `d` of `v` carries a symbol broadcast against the static size
  /// `k` > 1: `v` sliced to k there, the symbol pinned to 1 or k (see
  /// pinBroadcast).
  mlir::Value pinAxis(mlir::Value v, int64_t d, int64_t k);
  bool requireEqual(mlir::Value a, int64_t da, mlir::Value b, int64_t db);

  // Errors: "node 'n' (Op): message", at the node's location. Returns failure.
  mlir::LogicalResult error(const llvm::Twine &msg);
  /// Fails unless a table or constant of `n` elements (`what`) fits
  /// maxConstantElements(); call it before allocating one.
  mlir::LogicalResult checkConstantSize(int64_t n, const llvm::Twine &what);
  /// Fails unless every value of input `i`, when it is known at compile time,
  /// indexes a dimension of `size` (in [-size, size)).
  mlir::LogicalResult checkConstantIndices(size_t i, int64_t size);

  /// Creates a kiln op whose result type is inferred; on inference or
  /// verification failure the op's own diagnostic is reported and failure
  /// returned (never an abort).
  template <typename OpTy, typename... Args>
  mlir::FailureOr<mlir::Value> create(Args &&...args) {
    mlir::OperationState state(loc, OpTy::getOperationName());
    OpTy::build(builder, state, mlir::Type(), std::forward<Args>(args)...);
    state.types.clear();
    if constexpr (kiln::BroadcastingOps::has<OpTy>)
      pinBroadcast(state.operands);
    if (constrainSymbols(state, inherentAttrs<OpTy>(state)))
      return mlir::failure(); // the import restarts with a symbol fixed
    llvm::SmallVector<mlir::Type, 1> types;
    if (mlir::failed(OpTy::inferReturnTypes(
            builder.getContext(), loc, state.operands,
            state.attributes.getDictionary(builder.getContext()),
            state.getRawProperties(), state.regions, types)))
      return error(boundsMeet(state.operands)
                       ? llvm::Twine(boundsMeetWhy)
                       : "invalid operands for " + OpTy::getOperationName());
    state.addTypes(types);
    return finish(builder.create(state));
  }
  /// Creates a kiln op with an explicit result type.
  template <typename OpTy, typename... Args>
  mlir::FailureOr<mlir::Value> createTyped(mlir::Type type, Args &&...args) {
    mlir::OperationState state(loc, OpTy::getOperationName());
    OpTy::build(builder, state, type, std::forward<Args>(args)...);
    if (constrainSymbols(state, inherentAttrs<OpTy>(state)))
      return mlir::failure(); // the import restarts with a symbol fixed
    return finish(builder.create(state));
  }

private:
  /// Whether two symbols of different bounds meet on an axis of
  /// `operands` (broadcast): then `boundsMeetWhy` says so.
  bool boundsMeet(mlir::ValueRange operands);
  std::string boundsMeetWhy;
  /// Dynamic shapes: a symbolic axis broadcast against a static size K > 1
  /// means the symbol is 1 or K at run time; the operand is sliced to K (a
  /// run at 1 is padded to K copies: numpy broadcasting) and the symbol
  /// pinned, so that the runtime refuses other sizes.
  void pinBroadcast(llvm::SmallVectorImpl<mlir::Value> &operands);
  /// The size constraints of the op about to be built (SymbolTracker::
  /// constrain); true when one requests a fix.
  bool constrainSymbols(mlir::OperationState &state, mlir::DictionaryAttr attrs);
  /// The attributes of an op being built (its properties, as a dictionary).
  template <typename OpTy>
  mlir::DictionaryAttr inherentAttrs(mlir::OperationState &state) {
    if constexpr (OpTy::hasProperties())
      return llvm::dyn_cast_or_null<mlir::DictionaryAttr>(OpTy::getPropertiesAsAttr(
          builder.getContext(), state.getOrAddProperties<typename OpTy::Properties>()));
    else
      return state.attributes.getDictionary(builder.getContext());
  }
  mlir::FailureOr<mlir::Value> finish(mlir::Operation *op) {
    for (mlir::Type t : op->getResultTypes())
      if (auto rt = llvm::dyn_cast<mlir::RankedTensorType>(t);
          rt && checkedElements(rt.getShape()) < 0) {
        std::string name = op->getName().getStringRef().str();
        op->erase();
        return error("a " + name + " result would have a negative dimension or more "
                     "than 2^40 elements");
      }
    if (mlir::failed(mlir::verify(op))) {
      std::string name = op->getName().getStringRef().str();
      op->erase();
      return error("could not build a valid " + name);
    }
    return op->getResult(0);
  }
};

/// Marks a gather or scatter whose indices are the model's own values (an
/// ONNX Gather's input, a loss's targets), not positions a converter
/// computed from a shape: only those may run along a dynamic dimension
/// (MaskSymbols wraps their negative indices by the run-time size), since
/// computed ones were computed from the bound.
inline mlir::FailureOr<mlir::Value> userIndices(mlir::FailureOr<mlir::Value> v) {
  if (mlir::succeeded(v) && *v && v->getDefiningOp())
    v->getDefiningOp()->setAttr(kiln::attr::kUserIndices,
                                mlir::UnitAttr::get(v->getContext()));
  return v;
}

/// A converter: reads ctx's inputs and attributes, creates ops, sets outputs.
using Converter = mlir::LogicalResult (*)(NodeContext &ctx);

/// Registers the converters of each op family into `table` (by converterKey).
void registerElementwiseConverters(llvm::StringMap<Converter> &table);
void registerNNConverters(llvm::StringMap<Converter> &table);
void registerShapeConverters(llvm::StringMap<Converter> &table);
void registerReduceConverters(llvm::StringMap<Converter> &table);
void registerLogicConverters(llvm::StringMap<Converter> &table);
void registerCompositeConverters(llvm::StringMap<Converter> &table);
void registerActivationConverters(llvm::StringMap<Converter> &table);
void registerNormalizationConverters(llvm::StringMap<Converter> &table);
void registerGatherScatterConverters(llvm::StringMap<Converter> &table);
void registerDetectionConverters(llvm::StringMap<Converter> &table);
void registerGeneratorConverters(llvm::StringMap<Converter> &table);
void registerLossConverters(llvm::StringMap<Converter> &table);
void registerQuantConverters(llvm::StringMap<Converter> &table);
void registerIndexMapConverters(llvm::StringMap<Converter> &table);
void registerAttentionConverters(llvm::StringMap<Converter> &table);
void registerEinsumConverters(llvm::StringMap<Converter> &table);
void registerRecurrentConverters(llvm::StringMap<Converter> &table);
void registerControlFlowConverters(llvm::StringMap<Converter> &table);
void registerContribConverters(llvm::StringMap<Converter> &table);

/// The converter table's key for `node`: its op_type in the default domain,
/// "<domain>.<op_type>" in another (com.microsoft.MatMulNBits).
inline std::string converterKey(const onnx::NodeProto &node) {
  bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
  return defaultDomain ? node.op_type() : node.domain() + "." + node.op_type();
}

/// Helpers shared by converters.
/// The axes a Reduce* node reduces (see ConvertReduce.cpp); nullopt: none
/// (noop_with_empty_axes).
mlir::FailureOr<std::optional<std::vector<int64_t>>> reductionAxes(NodeContext &ctx,
                                                                  int64_t inputFromOpset);
/// Whether the node's axes (input 1, from `inputFromOpset`) arrive at run
/// time: then reduceOverRunTimeAxes (DataDependentSizes.h) builds it.
bool runTimeAxes(NodeContext &ctx, int64_t inputFromOpset);
/// Clip as max/min with tensor bounds (run-time bounds, integer inputs).
mlir::LogicalResult convertClipGeneral(NodeContext &ctx);
mlir::Type elementTypeOf(mlir::MLIRContext *ctx, int32_t onnxType);
/// TensorProto data types newer than the ONNX proto Kiln builds against
/// (1.12): float8 (onnx 1.14), 4-bit (1.16), float4 (1.18), e8m0 and 2-bit.
enum OnnxNarrowType : int32_t {
  kOnnxFloat8E4M3FN = 17, kOnnxFloat8E4M3FNUZ = 18, kOnnxFloat8E5M2 = 19,
  kOnnxFloat8E5M2FNUZ = 20, kOnnxUint4 = 21, kOnnxInt4 = 22, kOnnxFloat4E2M1 = 23,
  kOnnxFloat8E8M0 = 24, kOnnxUint2 = 25, kOnnxInt2 = 26
};
/// Normalizes a possibly negative axis for `rank`; fails with a diagnostic.
mlir::FailureOr<int64_t> normalizeAxis(NodeContext &ctx, int64_t axis,
                                       int64_t rank);
/// A per-spatial-dimension attribute (strides, dilations, output_padding):
/// `n` values, `dflt` each when absent.
mlir::FailureOr<std::vector<int64_t>> spatialInts(NodeContext &ctx, llvm::StringRef name,
                                                  size_t n, int64_t dflt = 1);
/// A 3-D convolution (NCDHW input, OIDHW weight, optional bias; pads as
/// ONNX's [begins, ends]) built from one 2-D kiln.conv.
mlir::FailureOr<mlir::Value> buildConv3d(NodeContext &ctx, mlir::Value x, mlir::Value w,
                                         mlir::Value bias, llvm::ArrayRef<int64_t> strides,
                                         llvm::ArrayRef<int64_t> pads,
                                         llvm::ArrayRef<int64_t> dil, int64_t group);
/// Conv of `x` with `w` and an optional `bias` under the node's Conv
/// attributes (1-D, 2-D and 3-D; ConvInteger and QLinearConv reuse it).
mlir::FailureOr<mlir::Value> buildConv(NodeContext &ctx, mlir::Value x, mlir::Value w,
                                       mlir::Value bias);
/// Resolves pads for Conv/pooling from pads/auto_pad attributes.
mlir::FailureOr<std::vector<int64_t>>
windowPads(NodeContext &ctx, llvm::ArrayRef<int64_t> inSpatial,
           llvm::ArrayRef<int64_t> kernel, llvm::ArrayRef<int64_t> strides,
           llvm::ArrayRef<int64_t> dilations);

} // namespace kiln::onnx_import

#endif // KILN_FRONTENDS_ONNX_NODECONTEXT_H
