//===- RuntimeSizes.cpp - values computed from dynamic sizes, at run time -===//
//
// The importer evaluates shape arithmetic on the host (Shape, Gather,
// Concat, Add, Range, ... of compile-time values), and a value computed
// from a symbolic dimension's size holds only what it would be at the
// bound (HostTensor::fromSymbolicShape). That is right where the value
// stands for a shape (a Reshape target: its elements are tagged with the
// symbols they are), and wrong where the model uses it as data: RoPE's
// positions `arange(T) + P`, a causal mask's offset, a scale of 1/sqrt(T).
//
// Where a node uses such a value as data beside run-time values, the value
// is rebuilt as run-time ops: a size the host value is exactly (every
// element static or one symbol's size) from the hidden size inputs; a
// positional constant (a range from 0 to a size, axisSymbols) as the
// constant; anything else by converting the nodes that computed it once
// more, on their rebuilt inputs. The host value stays for the uses that
// need a compile-time one.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/ImporterImpl.h"

#include "kiln/runtime.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace kiln::onnx_import {

bool readsAsData(llvm::StringRef opType, size_t i) {
  static const llvm::StringSet<> firstIsData = {
      "Reshape", "Expand", "Slice",  "Unsqueeze", "Squeeze",  "Tile",       "Pad",
      "Split",   "TopK",   "Resize", "Upsample",  "OneHot",   "Trilu",      "CumSum",
      "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
      "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
  static const llvm::StringSet<> noData = {"Range", "ConstantOfShape", "Shape", "Size",
                                           "EyeLike"};
  if (noData.contains(opType))
    return false;
  if (firstIsData.contains(opType))
    return opType == "OneHot" ? i != 1 : i == 0;
  return true;
}

Value Importer::shiftedRange(OpBuilder &b, const onnx::NodeProto &node) {
  if (node.input_size() < 3)
    return {};
  auto hostOf = [&](int i) -> const HostTensor * {
    auto it = slots.find(node.input(i));
    return it == slots.end() || !it->second.host ? nullptr : &*it->second.host;
  };
  const HostTensor *start = hostOf(0), *limit = hostOf(1), *delta = hostOf(2);
  if (!start || !limit || !delta || delta->fromSymbolicShape || delta->values.size() != 1 ||
      delta->values[0] != 1 || !start->isInteger())
    return {};
  auto tagOf = [](const HostTensor *h) {
    return h->fromSymbolicShape && h->symbolTags.size() == 1 ? h->symbolTags[0] : -2;
  };
  int32_t from = tagOf(start), to = tagOf(limit);
  if (from < 0 || to < 0)
    return {};
  // The length: the other term of limit = start + n (a symbol or static).
  const SymbolTracker::Derivation &d = symbols.derived[to];
  int32_t lengthSymbol = -1;
  int64_t length;
  if (d.op == KILN_SYM_ADD && (d.a == from || d.b == from)) {
    lengthSymbol = static_cast<int32_t>(d.a == from ? d.b : d.a);
    length = symbols.bounds[lengthSymbol];
  } else if (d.op == KILN_SYM_ADD_CONST && d.a == from && d.b >= 0) {
    length = d.b;
  } else {
    return {};
  }
  if (length > maxConstantElements())
    return {};
  // (Rebuilding the start converts its producer once more, which replaces
  // the slots of its outputs: `start` points into one of them.)
  Type elementType = start->elementType;
  Value first = sizesAtRunTime(b, node.input(0), 1);
  if (!first)
    return {};
  HostTensor iota{elementType, {length}, {}, {}};
  for (int64_t i = 0; i < length; ++i)
    iota.values.push_back(static_cast<double>(i));
  Value positions = materialize(b, iota, node.name() + ".iota");
  if (lengthSymbol >= 0)
    symbols.setSymbols(positions, AxisSymbols{lengthSymbol});
  return kiln::AddOp::create(b, b.getUnknownLoc(), positions, first).getResult();
}

LogicalResult Importer::sizeArgumentError(NodeContext &nc, const std::string &name) {
  return nc.error("needs '" + name + "' at compile time, and it is computed from the size "
                  "of a dynamic dimension, known only at run time (such values may be "
                  "data, Reshape and Expand targets and ConstantOfShape shapes; a dynamic "
                  "dimension compiles at its bound; give the inputs static sizes with "
                  "--shape)");
}

void Importer::noteBindableInputs(NodeContext &nc) {
  const onnx::NodeProto &node = nc.node;
  for (int i = 0; i < node.input_size(); ++i) {
    const std::string &in = node.input(i);
    auto it = slots.find(in);
    if (in.empty() || readsAsData(node.op_type(), i) || it == slots.end() ||
        it->second.host || !it->second.value)
      continue;
    auto arg = llvm::dyn_cast<BlockArgument>(it->second.value);
    if (!arg || arg.getOwner() != entryBlock)
      continue;
    // (A note of its own, which the import's held diagnostics attach to the
    // error before it: DiagnosticEngine::emit refuses bare notes.)
    Diagnostic note(nc.loc, DiagnosticSeverity::Note);
    note << "'" << in << "' is a graph input; `kiln-compile --bind " << in
         << "=FILE` (.npy or .pb) compiles the model for that value";
    ctx->getDiagEngine().emit(std::move(note));
  }
}

bool Importer::isSymbolicHost(const std::string &name) {
  auto it = slots.find(name);
  return it != slots.end() && it->second.host && it->second.host->fromSymbolicShape &&
         it->second.host->axisSymbols.empty();
}

Value Importer::sizesAtRunTime(OpBuilder &b, const std::string &name, int depth) {
  if (!isSymbolicHost(name))
    return valueOf(b, name);
  if (auto it = runtimeSizes.find(name);
      it != runtimeSizes.end() && it->second.getParentBlock() == b.getInsertionBlock())
    return it->second;
  auto remember = [&](Value v) {
    if (v)
      runtimeSizes[name] = v;
    return v;
  };
  HostTensor &host = *slots[name].host;
  if (Value v = materializeSymbolSizes(b, host))
    return remember(v);
  auto producer = sizeProducers.find(name);
  if (producer == sizeProducers.end() || depth > kMaxRebuildDepth)
    return {};
  const onnx::NodeProto &node = *producer->second;
  if (node.op_type() == "Range")
    if (Value v = shiftedRange(b, node))
      return remember(v);
  // The node's inputs computed from sizes, rebuilt; its outputs set aside
  // while it converts once more on those.
  std::vector<std::pair<std::string, Slot>> saved;
  auto restore = [&] {
    for (auto it = saved.rbegin(); it != saved.rend(); ++it)
      slots[it->first] = std::move(it->second);
  };
  for (int i = 0; i < node.input_size(); ++i) {
    // Data inputs (positional constants too: the node must see a run-time
    // value); shape arguments stay compile-time values, tagged.
    const std::string &in = node.input(i);
    if (in.empty() || !readsAsData(node.op_type(), i) || !slots[in].host ||
        !slots[in].host->fromSymbolicShape ||
        llvm::any_of(saved, [&](auto &s) { return s.first == in; }))
      continue;
    Value v = sizesAtRunTime(b, in, depth + 1);
    if (!v) {
      restore();
      return {};
    }
    saved.emplace_back(in, slots[in]);
    slots[in] = Slot{v, std::nullopt};
  }
  for (const std::string &out : node.output())
    if (!out.empty()) {
      saved.emplace_back(out, slots[out]);
      slots.erase(out);
    }
  Value result;
  {
    ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
    NodeContext again(*this, node, opset, b, b.getUnknownLoc());
    if (succeeded(table.lookup(converterKey(node))(again))) {
      auto it = slots.find(name);
      std::string why;
      if (it != slots.end() && !it->second.host) {
        result = it->second.value;
      } else if (it != slots.end() && node.op_type() == "Shape" &&
                 succeeded(deriveSymbols(why))) {
        // The shape of a rebuilt value: its sizes, named by its symbols.
        it->second.host->fromSymbolicShape = true;
        tagHostOutputs(again, false);
        result = materializeSymbolSizes(b, *slots[name].host);
      }
    }
  }
  restore();
  return remember(result);
}

void Importer::rebuildSizesReadAsData(NodeContext &nc,
                                      std::vector<std::pair<std::string, Slot>> &saved) {
  const onnx::NodeProto &node = nc.node;
  bool runtimeIn = llvm::any_of(node.input(), [&](const std::string &in) {
    return !in.empty() && !slots[in].host;
  });
  if (!runtimeIn)
    return;
  for (int i = 0; i < node.input_size(); ++i) {
    const std::string &in = node.input(i);
    if (in.empty() || !isSymbolicHost(in) || !readsAsData(node.op_type(), i) ||
        llvm::any_of(saved, [&](auto &s) { return s.first == in; }))
      continue;
    Value v = sizesAtRunTime(nc.builder, in, 0);
    if (!v)
      continue; // (reported by trackSymbols, which names the node)
    saved.emplace_back(in, slots[in]);
    slots[in] = Slot{v, std::nullopt};
  }
}

} // namespace kiln::onnx_import
