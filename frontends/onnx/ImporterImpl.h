//===- ImporterImpl.h - the importer's state (private) ----------*- C++ -*-===//
#ifndef KILN_FRONTENDS_ONNX_IMPORTERIMPL_H
#define KILN_FRONTENDS_ONNX_IMPORTERIMPL_H

#include "frontends/onnx/DynamicDims.h"
#include "frontends/onnx/Importer.h"
#include "frontends/onnx/NodeContext.h"

#include <map>
#include <string>

namespace kiln::onnx_import {

class Importer {
public:
  Importer(mlir::MLIRContext &ctx, llvm::StringRef path)
      : ctx(&ctx), path(path.str()) {}

  mlir::LogicalResult run(const ImportOptions &options,
                          mlir::OwningOpRef<mlir::ModuleOp> &out);
  /// The kiln value of a graph value, materializing host tensors.
  mlir::Value valueOf(mlir::OpBuilder &b, const std::string &name);
  /// The same for a slot held apart (a subgraph's output, an iteration's
  /// value): a host tensor is materialized once and cached in the slot.
  mlir::Value valueOf(mlir::OpBuilder &b, Slot &s, llvm::StringRef name);
  /// A host value computed from symbolic sizes whose every element is
  /// static or exactly one symbol's size (Shape and data movement on it),
  /// built at run time from the symbols' sizes; null for any other value.
  mlir::Value materializeSymbolSizes(mlir::OpBuilder &b, const HostTensor &h);
  static mlir::Value materialize(mlir::OpBuilder &b, const HostTensor &h,
                                 llvm::StringRef name);
  mlir::FailureOr<HostTensor> hostTensorFromProto(const onnx::TensorProto &t,
                                                  const llvm::Twine &what);
  mlir::LogicalResult fileError(const llvm::Twine &msg);

  mlir::MLIRContext *ctx;
  std::string path;
  /// Symbols an earlier attempt found fixed by the model (SymbolTracker::
  /// Fix), by name: to a static size, or renamed to another symbol.
  std::map<std::string, int64_t> fixedSizes;
  std::map<std::string, std::string> aliases;
  /// The node being converted ("node 'n' (Op)"), for notes on fixes.
  std::string currentNode;
  onnx::ModelProto model;
  /// A model given in memory (importOnnxModel): parse() copies it instead
  /// of reading `path`.
  const onnx::ModelProto *given = nullptr;
  int64_t opset = 0;
  std::map<std::string, Slot> slots;
  /// Which axes of each value carry a symbolic dimension.
  SymbolTracker symbols;
  /// --max-shape bounds by symbol name.
  std::map<std::string, int64_t> givenBounds;
  /// --max-shape bounds of node outputs, by value name: the axes whose size
  /// the run computes with no bound the graph implies (RunTimeShapes.cpp).
  std::map<std::string, std::vector<int64_t>> valueBounds;
  /// The function body, and the hidden i64[1] inputs holding symbols'
  /// run-time sizes (for masks; MaskSymbols.cpp), by symbol.
  mlir::Block *entryBlock = nullptr;
  /// The last op whose result symbols are derived (null: none yet).
  mlir::Operation *derivedUpTo = nullptr;
  /// Derives the symbols of the ops after derivedUpTo (masking reductions
  /// over symbolic axes); stops at the first op that mixes positions along
  /// one, with the reason in `why`.
  mlir::LogicalResult deriveSymbols(std::string &why);
  std::map<int32_t, mlir::Value> symbolArgs;
  /// A symbol's run-time size as an i64[1] value: a hidden input, or for a
  /// data-dependent symbol (and those derived from one) the value the graph
  /// computes (DataDependentSizes.cpp).
  mlir::Value symbolInput(int32_t sym);
  /// Data-dependent sizes (DataDependentSizes.cpp): per symbol, the i64[1]
  /// value holding its size; the model returns the KILN_SYM_COMPUTED ones
  /// as hidden outputs.
  std::map<int32_t, mlir::Value> computedSizes;
  /// A new data-dependent symbol `name` of at most `bound`, whose size is
  /// `size` (i64[1], computed by the graph).
  int32_t addComputedSymbol(const std::string &name, int64_t bound, mlir::Value size);
  /// The size of a symbol derived from data-dependent ones, as graph ops
  /// (built right after the sizes it follows from).
  mlir::Value derivedSizeInGraph(int32_t sym);
  /// A run-time size as an i64[1] value (SymbolTracker::SymSize).
  mlir::Value sizeValue(mlir::OpBuilder &b, mlir::Location loc, SymbolTracker::SymSize x);
  /// An i64 constant of `shape` whose element at flat position i is
  /// value(i) (run-time index arithmetic: iotas, strides, scalars).
  static mlir::Value indexConstant(mlir::OpBuilder &b, llvm::ArrayRef<int64_t> shape,
                                   llvm::function_ref<int64_t(int64_t)> value);
  /// The last real position along an axis of run-time size `x`, i.e.
  /// max(x - 1, 0), as an i64[1] value (the position padding repeats).
  mlir::Value lastPosition(mlir::OpBuilder &b, mlir::Location loc, SymbolTracker::SymSize x);
  /// One piece of an axis repackAxis lays out: `size` real elements, read
  /// from position `from` of the packed value on, `step` apart.
  struct RepackPiece {
    SymbolTracker::SymSize size, from;
    int64_t step = 1;
  };
  /// Ops along a symbolic axis whose real elements do not stay a prefix at
  /// the bound (a concat, a slice): `packed` gathered along `axis` (to
  /// `outSize` positions) so that the pieces' real elements lie one after
  /// another from position 0 and the rest repeats the last of them (the
  /// padding a run pads with); the axis carries the symbol of their total
  /// size. `repeat` lays the pieces out that many times (a tile). Built at
  /// `b`'s insertion point.
  mlir::Value repackAxis(mlir::OpBuilder &b, mlir::Location loc, mlir::Value packed,
                         int64_t axis, llvm::ArrayRef<RepackPiece> pieces, int64_t outSize,
                         int64_t repeat = 1);
  /// Masks the padding of a reduction or contraction over a symbolic axis;
  /// returns the first op it inserted (null when `op` needs none).
  mlir::FailureOr<mlir::Operation *> maskAlongSymbols(mlir::Operation *op);

  /// Values computed from symbolic sizes, at run time (RuntimeSizes.cpp):
  /// the node that computed each such host value, and the run-time ops
  /// already rebuilt for one (in the block they were built in).
  std::map<std::string, const onnx::NodeProto *> sizeProducers;
  std::map<std::string, mlir::Value> runtimeSizes;
  /// Whether `name` is a host value computed from symbolic sizes that holds
  /// only its value at the bounds (not a positional constant).
  bool isSymbolicHost(const std::string &name);
  /// That value as run-time ops at `b`'s insertion point; null where some
  /// node that computed it has no run-time form.
  mlir::Value sizesAtRunTime(mlir::OpBuilder &b, const std::string &name, int depth);
  /// Before a node that reads such values as data beside run-time values:
  /// binds them to their run-time form, with the slots replaced in `saved`
  /// (restored after the node).
  void rebuildSizesReadAsData(NodeContext &nc,
                              std::vector<std::pair<std::string, Slot>> &saved);
  static constexpr int kMaxRebuildDepth = 256;
  /// Range(start, start + n, 1) with start a size (torch.arange(P, P + T),
  /// a cache's positions): the n positions from the run-time start, along
  /// n's symbol; null for other ranges.
  mlir::Value shiftedRange(mlir::OpBuilder &b, const onnx::NodeProto &node);
  /// After a node's converter failed: a note for each shape argument it
  /// read that is a graph input, naming --bind (which fixes its value).
  void noteBindableInputs(NodeContext &nc);
  /// The error of a node that needs such a value at compile time.
  mlir::LogicalResult sizeArgumentError(NodeContext &nc, const std::string &name);

  /// Control flow (ConvertControlFlow.cpp) inlines subgraphs: binds `g`'s
  /// inputs to `inputs` (positionally), converts its nodes at the builder's
  /// insertion point, and returns its outputs. Names inside a subgraph are
  /// rebound each time it is inlined (a loop's iterations).
  mlir::FailureOr<llvm::SmallVector<Slot>> inlineGraph(const onnx::GraphProto &g,
                                                       llvm::ArrayRef<Slot> inputs,
                                                       mlir::OpBuilder &b,
                                                       llvm::StringRef scope);
  /// How deep subgraphs may nest, and how many nodes one import converts
  /// in all (unrolled loops count each iteration): bounds for hostile models.
  static constexpr int kMaxSubgraphDepth = 8;
  static constexpr int64_t kMaxConvertedNodes = 200000;

private:
  mlir::LogicalResult parse();
  mlir::LogicalResult checkOpset();
  mlir::LogicalResult checkSupported(const llvm::StringMap<Converter> &table);
  mlir::LogicalResult tensorBytes(const onnx::TensorProto &t, int64_t need,
                                  std::string &bytes,
                                  const llvm::Twine &what);
  mlir::Location nodeLoc(const onnx::NodeProto &node, int index, llvm::StringRef scope = "");
  mlir::LogicalResult convertNodes(const onnx::GraphProto &g, mlir::OpBuilder &b,
                                   llvm::StringRef scope);
  int subgraphDepth = 0;
  int64_t inlinedNodes = 0;
  mlir::LogicalResult inputSymbols(const onnx::ValueInfoProto &vi,
                                   const ImportOptions &options,
                                   llvm::SmallVectorImpl<int64_t> &shape,
                                   AxisSymbols &axes);
  mlir::LogicalResult trackSymbols(NodeContext &nc, bool taintedIn);
  void tagHostOutputs(NodeContext &nc, bool taintedIn);
  /// The converters, by op_type.
  llvm::StringMap<Converter> table;
  static std::string sanitize(llvm::StringRef name);
};

/// Whether input `i` of an `opType` node is data (read element by element
/// at run time) rather than a shape argument its converter needs at compile
/// time (a Reshape target, Slice bounds, reduction axes, ...).
bool readsAsData(llvm::StringRef opType, size_t i);

} // namespace kiln::onnx_import

#endif // KILN_FRONTENDS_ONNX_IMPORTERIMPL_H
