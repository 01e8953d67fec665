//===- NodeContext.cpp - one ONNX node's inputs, attributes and outputs ---===//
//
// What a converter reads of its node (inputs as kiln values or import-time
// host tensors, attributes with defaults) and writes back (results, host
// outputs), the symbolic-size constraints it states while it builds (pinning
// broadcast axes, requiring equal sizes) and its diagnostics; with the
// helpers several converters share (axis normalization, window pads).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/ImporterImpl.h"
#include "frontends/onnx/NodeContext.h"

#include <algorithm>

using namespace mlir;
namespace kiln::onnx_import {

static thread_local int64_t constantElementLimit = kDefaultMaxConstantElements;

int64_t maxConstantElements() { return constantElementLimit; }

ConstantElementLimit::ConstantElementLimit(int64_t limit) : previous(constantElementLimit) {
  constantElementLimit = limit;
}

ConstantElementLimit::~ConstantElementLimit() { constantElementLimit = previous; }

std::string constantLimitText() {
  return "the compiler's limit of " + std::to_string(constantElementLimit) +
         " elements for one constant or table (--max-constant-elements raises it)";
}

LogicalResult NodeContext::checkConstantIndices(size_t i, int64_t size) {
  const HostTensor *h = hostInput(i);
  if (!h || h->fromSymbolicShape)
    return success();
  for (double v : h->values)
    if (v < -static_cast<double>(size) || v >= static_cast<double>(size))
      return error("index " + Twine(hostInt(v)) + " is out of range for a dimension of " +
                   Twine(size));
  return success();
}

LogicalResult NodeContext::checkConstantSize(int64_t n, const Twine &what) {
  if (n >= 0 && n <= constantElementLimit)
    return success();
  if (n < 0)
    return error(what + " would have a negative dimension or more than 2^40 elements");
  return error(what + " would have " + Twine(n) + " elements, past " + constantLimitText());
}

Value NodeContext::input(size_t i) {
  return hasInput(i) ? imp.valueOf(builder, node.input(i)) : Value();
}

const HostTensor *NodeContext::hostInput(size_t i) {
  if (!hasInput(i))
    return nullptr;
  auto &s = imp.slots[node.input(i)];
  return s.host ? &*s.host : nullptr;
}

RankedTensorType NodeContext::inputType(size_t i) {
  if (const HostTensor *h = hostInput(i))
    return RankedTensorType::get(h->shape, h->elementType);
  return llvm::cast<RankedTensorType>(input(i).getType());
}

const onnx::AttributeProto *NodeContext::attr(StringRef name) const {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}
int64_t NodeContext::attrInt(StringRef name, int64_t dflt) const {
  const auto *a = attr(name);
  return a ? a->i() : dflt;
}
float NodeContext::attrFloat(StringRef name, float dflt) const {
  const auto *a = attr(name);
  return a ? a->f() : dflt;
}
std::string NodeContext::attrString(StringRef name, StringRef dflt) const {
  const auto *a = attr(name);
  return a ? a->s() : dflt.str();
}
std::optional<std::vector<int64_t>> NodeContext::attrInts(StringRef name) const {
  const auto *a = attr(name);
  if (!a)
    return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

void NodeContext::setOutput(size_t i, Value v) {
  if (i < static_cast<size_t>(node.output_size()) && !node.output(i).empty()) {
    Slot &s = imp.slots[node.output(i)];
    s.value = v;
    s.host.reset();
  }
}
/// Rounds values computed in double to the tensor's float type, as the op
/// would compute them: a float32 op's result is a float32 (T5's bucket
/// `Cast(Log(x / 8) / 2.7725887 * 8)` is 2 in float32, 1.9999999 in double).
static void roundToElementType(HostTensor &t) {
  auto ft = llvm::dyn_cast<FloatType>(t.elementType);
  if (!ft || ft.getWidth() >= 64)
    return;
  if (ft.isF32()) {
    for (double &v : t.values)
      v = static_cast<float>(v);
    return;
  }
  for (double &v : t.values) {
    APFloat f(v);
    bool lost;
    f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    v = f.convertToDouble();
  }
}

void NodeContext::setHostOutput(size_t i, HostTensor t) {
  if (i < static_cast<size_t>(node.output_size()) && !node.output(i).empty()) {
    roundToElementType(t);
    // (Positional axes are the input's, not the result's: tagHostOutputs
    // states the result's.)
    t.axisSymbols.clear();
    Slot &s = imp.slots[node.output(i)];
    s.value = {};
    s.host = std::move(t);
  }
}

void NodeContext::pinBroadcast(SmallVectorImpl<Value> &operands) {
  SymbolTracker &st = imp.symbols;
  if (st.empty())
    return;
  // The symbols of the operands this node built so far (a failure there is
  // reported when the node's ops are checked).
  std::string why;
  if (failed(imp.deriveSymbols(why)))
    return;
  auto typeOf = [](Value v) { return llvm::dyn_cast<RankedTensorType>(v.getType()); };
  int64_t rank = 0;
  for (Value v : operands) {
    if (!typeOf(v))
      return;
    rank = std::max<int64_t>(rank, typeOf(v).getRank());
  }
  for (int64_t r = 0; r < rank; ++r) {
    // The static size (> 1) other operands have on this axis.
    int64_t k = 1;
    for (Value v : operands) {
      int64_t d = r - (rank - typeOf(v).getRank());
      if (d < 0 || st.of(v)[d] >= 0 || typeOf(v).getDimSize(d) == 1)
        continue;
      if (k != 1 && k != typeOf(v).getDimSize(d))
        return; // the shapes do not broadcast anyway
      k = typeOf(v).getDimSize(d);
    }
    if (k == 1)
      continue;
    for (Value &v : operands) {
      auto t = typeOf(v);
      int64_t d = r - (rank - t.getRank());
      int32_t sym = d < 0 ? -1 : st.of(v)[d];
      if (sym < 0 || t.getDimSize(d) < k)
        continue;
      v = pinAxis(v, d, k);
    }
  }
}

bool NodeContext::boundsMeet(ValueRange operands) {
  SymbolTracker &st = imp.symbols;
  if (st.empty())
    return false;
  int64_t rank = 0;
  for (Value v : operands)
    if (auto t = llvm::dyn_cast<RankedTensorType>(v.getType()))
      rank = std::max<int64_t>(rank, t.getRank());
  for (int64_t r = 0; r < rank; ++r) {
    int32_t seen = -1;
    for (Value v : operands) {
      AxisSymbols a = st.of(v);
      int64_t d = r - (rank - (int64_t)a.size());
      if (d < 0 || a[d] < 0)
        continue;
      if (seen >= 0 && st.bounds[seen] != st.bounds[a[d]]) {
        boundsMeetWhy = "dynamic dimensions '" + st.names[seen] + "' (bound " +
                        std::to_string(st.bounds[seen]) + ") and '" + st.names[a[d]] +
                        "' (bound " + std::to_string(st.bounds[a[d]]) +
                        ") meet on one axis; give them one bound (--max-shape) or "
                        "static sizes (--shape)";
        return true;
      }
      seen = a[d];
    }
  }
  return false;
}

Value NodeContext::pinAxis(Value v, int64_t d, int64_t k) {
  SymbolTracker &st = imp.symbols;
  auto t = llvm::cast<RankedTensorType>(v.getType());
  int32_t sym = st.of(v)[d];
  auto pin = st.pins.find(sym);
  if (sym < 0 || t.getDimSize(d) < k || (pin != st.pins.end() && pin->second != k))
    return v; // pinned to another size: the verifier reports it
  st.pins[sym] = k;
  SmallVector<int64_t> offsets(t.getRank(), 0), strides(t.getRank(), 1);
  SmallVector<int64_t> sizes(t.getShape());
  sizes[d] = k;
  OpBuilder::InsertionGuard guard(builder);
  auto slice = kiln::SliceOp::create(builder, loc, v, builder.getDenseI64ArrayAttr(offsets),
                                     builder.getDenseI64ArrayAttr(sizes),
                                     builder.getDenseI64ArrayAttr(strides));
  slice->setAttr(kiln::attr::kPinsSymbol, builder.getI32IntegerAttr(sym));
  return slice.getResult();
}

bool NodeContext::requireSize(Value v, int64_t d, int64_t size) {
  std::string why;
  if (imp.symbols.empty() || failed(imp.deriveSymbols(why)))
    return false;
  return imp.symbols.requireSize(v, d, size);
}

bool NodeContext::requireEqual(Value a, int64_t da, Value b, int64_t db) {
  std::string why;
  if (imp.symbols.empty() || failed(imp.deriveSymbols(why)))
    return false;
  return imp.symbols.requireEqual(a, da, b, db);
}

bool NodeContext::constrainSymbols(OperationState &state, DictionaryAttr attrs) {
  std::string why;
  if (imp.symbols.empty() || failed(imp.deriveSymbols(why)))
    return false;
  return imp.symbols.constrain(state.name.getStringRef(), state.operands, attrs);
}

LogicalResult NodeContext::error(const Twine &msg) {
  std::string name = node.name().empty()
                         ? llvm::cast<NameLoc>(loc).getName().str()
                         : node.name();
  emitError(loc) << "node '" << name << "' (" << node.op_type() << "): " << msg;
  return failure();
}

FailureOr<int64_t> normalizeAxis(NodeContext &ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return ctx.error("axis " + Twine(axis) + " is out of range for rank " +
                     Twine(rank));
  return axis < 0 ? axis + rank : axis;
}

FailureOr<std::vector<int64_t>> windowPads(NodeContext &ctx,
                                           ArrayRef<int64_t> in,
                                           ArrayRef<int64_t> k,
                                           ArrayRef<int64_t> s,
                                           ArrayRef<int64_t> d) {
  size_t n = in.size();
  for (size_t i = 0; i < n; ++i)
    if (s[i] < 1 || d[i] < 1 || k[i] < 1)
      return ctx.error("kernel sizes, strides and dilations must be positive");
  std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  std::vector<int64_t> pads(2 * n, 0);
  if (autoPad == "NOTSET") {
    if (auto p = ctx.attrInts("pads")) {
      if (p->size() != 2 * n)
        return ctx.error("expects " + Twine(2 * n) + " pads, got " +
                         Twine(p->size()));
      pads = *p;
    }
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < n; ++i) {
      int64_t out = (in[i] + s[i] - 1) / s[i];
      int64_t total =
          std::max<int64_t>(0, (out - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in[i]);
      int64_t small = total / 2, big = total - small;
      pads[i] = autoPad == "SAME_UPPER" ? small : big;
      pads[i + n] = autoPad == "SAME_UPPER" ? big : small;
    }
  } else if (autoPad != "VALID") {
    return ctx.error("unknown auto_pad '" + autoPad + "'");
  }
  return pads;
}

} // namespace kiln::onnx_import
