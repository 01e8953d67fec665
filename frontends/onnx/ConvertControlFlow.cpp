//===- ConvertControlFlow.cpp - If, Loop, Scan ------------------------------===//
//
// Control flow is resolved at compile time, into straight-line kiln ops:
//   If    a condition known while importing inlines its branch; a run-time
//         one inlines both and selects each output (kiln.where), so the
//         branches must agree on their outputs' types and shapes, unless
//         one branch's output is empty (an early out): then the other's,
//         its size 0 when the condition picks the empty one. A condition
//         computed from run-time sizes is rebuilt in the graph.
//   Loop  unrolled: the trip count and the condition must be known while
//         importing (each iteration's condition may be computed by the
//         body from host values: the iteration number, constants, bound
//         inputs); scan outputs are stacked along a new first axis.
//   Scan  unrolled over its (static) sequence length, per scan input axis
//         and direction; opset 8's batch axis is unrolled too.
// Subgraphs are inlined by Importer::inlineGraph, so every op their bodies
// use is an op Kiln converts anyway; each iteration's values that are known
// at import (host tensors) stay known, as in the main graph.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/CompositeBuilder.h"

using namespace mlir;
namespace kiln::onnx_import {
namespace {

/// The most iterations a Loop or Scan is unrolled to.
constexpr int64_t kMaxIterations = 4096;

std::string scopeOf(NodeContext &ctx) {
  return llvm::cast<NameLoc>(ctx.loc).getName().str();
}

const onnx::GraphProto *graphAttr(NodeContext &ctx, StringRef name) {
  const onnx::AttributeProto *a = ctx.attr(name);
  return a && a->has_g() ? &a->g() : nullptr;
}

/// The node's input `i` as a slot (an absent input: an empty slot).
Slot inputSlot(NodeContext &ctx, size_t i) {
  if (!ctx.hasInput(i))
    return {};
  return ctx.imp.slots[ctx.node.input(i)];
}

/// A slot's kiln value (a host tensor materialized as a constant).
Value valueOfSlot(NodeContext &ctx, Slot &s, const Twine &name) {
  return ctx.imp.valueOf(ctx.builder, s, name.str());
}

HostTensor hostScalar(Type t, double v) { return HostTensor{t, {}, {v}, {}}; }

/// A known truth value of a host slot; nullopt when only known at run time.
std::optional<bool> knownBool(const Slot &s) {
  if (!s.host || s.host->fromSymbolicShape || s.host->values.size() != 1)
    return std::nullopt;
  return s.host->values[0] != 0;
}

void setOutputSlot(NodeContext &ctx, size_t i, const Slot &s) {
  if (s.host)
    ctx.setHostOutput(i, *s.host);
  else
    ctx.setOutput(i, s.value);
}

/// Per-iteration values stacked along a new axis `axis` (reversed first
/// when `reverse`): a host tensor when every one is known at import (axis
/// 0), kiln ops otherwise.
FailureOr<Slot> stack(NodeContext &ctx, ArrayRef<Slot> parts, int64_t axis, bool reverse,
                      StringRef what) {
  if (parts.empty())
    return ctx.error(what + " has no iteration to take its shape from (zero iterations)");
  SmallVector<Slot> order(parts.begin(), parts.end());
  if (reverse)
    std::reverse(order.begin(), order.end());
  auto typeOf = [](const Slot &s) {
    return s.host ? RankedTensorType::get(s.host->shape, s.host->elementType)
                  : llvm::cast<RankedTensorType>(s.value.getType());
  };
  RankedTensorType t0 = typeOf(order[0]);
  for (const Slot &s : order)
    if (typeOf(s) != t0)
      return ctx.error(what + " differs in shape or element type between iterations");
  int64_t rank = t0.getRank();
  if (axis < 0)
    axis += rank + 1;
  if (axis < 0 || axis > rank)
    return ctx.error(what + ": axis out of range");
  bool allHost = axis == 0 && llvm::all_of(order, [](const Slot &s) {
    return s.host && !s.host->fromSymbolicShape && s.host->raw.empty();
  });
  if (allHost) {
    HostTensor h{t0.getElementType(), {static_cast<int64_t>(order.size())}, {}, {}};
    h.shape.insert(h.shape.end(), t0.getShape().begin(), t0.getShape().end());
    if (failed(ctx.checkConstantSize(h.numElements(), what + " stacked")))
      return failure();
    for (const Slot &s : order)
      h.values.insert(h.values.end(), s.host->values.begin(), s.host->values.end());
    return Slot{Value(), std::move(h)};
  }
  Builder g{ctx};
  SmallVector<int64_t> shape(t0.getShape());
  shape.insert(shape.begin() + axis, 1);
  SmallVector<Value> vals;
  for (auto [k, s] : llvm::enumerate(order)) {
    Value v = valueOfSlot(ctx, s, ctx.node.name() + ".part" + Twine(k));
    vals.push_back(g.reshape(v, shape));
  }
  if (!g.ok({}) || llvm::any_of(vals, [](Value v) { return !v; }))
    return failure();
  Value y = vals.size() == 1
                ? vals[0]
                : g.take(ctx.create<kiln::ConcatOp>(ValueRange(vals),
                                                    ctx.builder.getI64IntegerAttr(axis)));
  if (!g.ok({y}))
    return failure();
  return Slot{y, std::nullopt};
}

/// Output `i` of an If whose condition `c` is known at run time, when one
/// branch's value (`a` then, `b` else) is empty and the other has its rank
/// and type: the other, each axis empty in the empty one a data-dependent
/// size (0 where `c` picks the empty branch). failure() when the values do
/// not have that form; null on an error (reported).
FailureOr<Value> emptyOrOther(NodeContext &ctx, Value c, Value a, Value b, size_t i) {
  auto at = llvm::cast<RankedTensorType>(a.getType()),
       bt = llvm::cast<RankedTensorType>(b.getType());
  bool thenEmpty = at.getNumElements() == 0;
  if (thenEmpty == (bt.getNumElements() == 0) || at.getRank() != bt.getRank() ||
      at.getElementType() != bt.getElementType())
    return failure();
  Value other = thenEmpty ? b : a;
  auto et = thenEmpty ? at : bt, ot = thenEmpty ? bt : at;
  for (int64_t d = 0; d < et.getRank(); ++d)
    if (et.getDimSize(d) != 0 && et.getDimSize(d) != ot.getDimSize(d))
      return failure();
  Builder g{ctx};
  OpBuilder &ob = ctx.builder;
  AxisSymbols os = ctx.imp.symbols.of(other);
  Value y = other;
  for (int64_t d = 0; d < et.getRank(); ++d) {
    int64_t n = ot.getDimSize(d);
    if (et.getDimSize(d) != 0 || n == 0)
      continue;
    Value size = os[d] >= 0 ? ctx.imp.symbolInput(os[d])
                            : Importer::indexConstant(ob, {1}, [n](int64_t) { return n; });
    Value zero = g.mul(size, g.scalar(size, 0.0));
    size = thenEmpty ? g.where(c, zero, size) : g.where(c, size, zero);
    // Past the size, the last real position repeated (the padding's form).
    Value iota = iotaAlong(g, n, 0, 1);
    Value last = g.bin<kiln::MaxOp>(g.sub(size, g.scalar(size, 1.0)), g.scalar(size, 0.0));
    Value idx = g.bin<kiln::MinOp>(iota, last);
    if (!g.ok({size, idx}))
      return Value();
    int32_t sym =
        ctx.imp.addComputedSymbol(ctx.node.output(i) + "[" + std::to_string(d) + "]", n, size);
    y = g.take(ctx.create<kiln::GatherOp>(y, idx, ob.getI64IntegerAttr(d)));
    if (!g.ok({y}))
      return Value();
    y.getDefiningOp()->setAttr(kiln::attr::kAxisSymbol, ob.getDenseI64ArrayAttr({d, sym}));
    if (os[d] >= 0)
      y.getDefiningOp()->setAttr(kiln::attr::kSymbolIndices, ob.getUnitAttr());
  }
  return y;
}

LogicalResult convertIf(NodeContext &ctx) {
  const onnx::GraphProto *thenG = graphAttr(ctx, "then_branch");
  const onnx::GraphProto *elseG = graphAttr(ctx, "else_branch");
  if (!thenG || !elseG)
    return ctx.error("expects then_branch and else_branch graphs");
  auto ct = ctx.inputType(0);
  if (ct.getNumElements() != 1 || !ct.getElementType().isInteger(1))
    return ctx.error("the condition must be one bool");
  std::string scope = scopeOf(ctx);
  Slot cond = inputSlot(ctx, 0);
  // A condition computed from a run-time size (boxes.numel() == 0): its
  // run-time form.
  Value condAtRunTime;
  if (cond.host && cond.host->fromSymbolicShape) {
    condAtRunTime = ctx.imp.sizesAtRunTime(ctx.builder, ctx.node.input(0), 0);
    if (!condAtRunTime)
      return ctx.error("the condition depends on the size of a dynamic dimension, which Kiln "
                       "knows only at run time, in a way it cannot compute in the graph; give "
                       "the inputs static sizes with --shape");
  }
  auto checkCount = [&](const onnx::GraphProto &br, StringRef which) -> LogicalResult {
    if (br.output_size() != ctx.node.output_size())
      return ctx.error(which + " has " + Twine(br.output_size()) + " output(s); the node has " +
                       Twine(ctx.node.output_size()));
    return success();
  };
  if (failed(checkCount(*thenG, "then_branch")) || failed(checkCount(*elseG, "else_branch")))
    return failure();
  if (std::optional<bool> known = condAtRunTime ? std::nullopt : knownBool(cond)) {
    auto outs = ctx.imp.inlineGraph(*known ? *thenG : *elseG, {}, ctx.builder,
                                    scope + (*known ? "/then" : "/else"));
    if (failed(outs))
      return failure();
    for (auto [i, s] : llvm::enumerate(*outs))
      setOutputSlot(ctx, i, s);
    return success();
  }
  // A run-time condition: both branches, then a select per output.
  auto thenOuts = ctx.imp.inlineGraph(*thenG, {}, ctx.builder, scope + "/then");
  if (failed(thenOuts))
    return failure();
  auto elseOuts = ctx.imp.inlineGraph(*elseG, {}, ctx.builder, scope + "/else");
  if (failed(elseOuts))
    return failure();
  Builder g{ctx};
  Value c = g.reshape(condAtRunTime ? condAtRunTime : ctx.input(0), {});
  for (size_t i = 0; i < thenOuts->size(); ++i) {
    Value a = valueOfSlot(ctx, (*thenOuts)[i], scope + ".then" + Twine(i));
    Value b = valueOfSlot(ctx, (*elseOuts)[i], scope + ".else" + Twine(i));
    if (!g.ok({a, b, c}))
      return failure();
    if (a.getType() != b.getType()) {
      // One branch empty (an early out): the other's value, its size 0
      // along the empty axes where the condition picks the empty branch.
      FailureOr<Value> y = emptyOrOther(ctx, c, a, b, i);
      if (succeeded(y)) {
        if (!*y)
          return failure();
        ctx.setOutput(i, *y);
        continue;
      }
      std::string ta, tb;
      llvm::raw_string_ostream(ta) << a.getType();
      llvm::raw_string_ostream(tb) << b.getType();
      return ctx.error("output " + Twine(i) + " is " + ta + " in then_branch and " + tb +
                       " in else_branch; the condition is known only at run time, so Kiln "
                       "computes both branches and selects, and they must agree (--bind the "
                       "condition to compile one branch)");
    }
    Value y = g.where(c, a, b);
    if (!g.ok({y}))
      return failure();
    ctx.setOutput(i, y);
  }
  return success();
}

LogicalResult convertLoop(NodeContext &ctx) {
  const onnx::GraphProto *body = graphAttr(ctx, "body");
  if (!body)
    return ctx.error("expects a body graph");
  size_t carried = ctx.numInputs() < 2 ? 0 : ctx.numInputs() - 2;
  if (static_cast<size_t>(body->input_size()) != carried + 2 ||
      static_cast<size_t>(body->output_size()) < carried + 1)
    return ctx.error("the body must take the iteration number, the condition and the " +
                     Twine(carried) + " loop-carried value(s), and return the condition and "
                     "them (then any scan outputs)");
  size_t scans = body->output_size() - 1 - carried;
  if (static_cast<size_t>(ctx.node.output_size()) > carried + scans)
    return ctx.error("has more outputs than its body gives");
  int64_t trips = kMaxIterations + 1;
  bool bounded = false;
  if (ctx.hasInput(0)) {
    Slot m = inputSlot(ctx, 0);
    if (!m.host || m.host->fromSymbolicShape || m.host->values.size() != 1)
      return ctx.error("the trip count must be known at compile time (Kiln unrolls loops; "
                       "--bind it)");
    trips = hostInt(m.host->values[0]);
    bounded = true;
  }
  std::optional<bool> cond = true;
  if (ctx.hasInput(1)) {
    cond = knownBool(inputSlot(ctx, 1));
    if (!cond)
      return ctx.error("the loop condition must be known at compile time (Kiln unrolls "
                       "loops; --bind it)");
  }
  std::string scope = scopeOf(ctx);
  Type i64 = ctx.builder.getIntegerType(64), i1 = ctx.builder.getI1Type();
  SmallVector<Slot> state;
  for (size_t k = 0; k < carried; ++k)
    state.push_back(inputSlot(ctx, 2 + k));
  std::vector<SmallVector<Slot>> scanParts(scans);
  int64_t it = 0;
  for (; it < trips && *cond; ++it) {
    if (it >= kMaxIterations)
      return ctx.error(Twine(bounded ? "the trip count" : "the loop") + " exceeds " +
                       Twine(kMaxIterations) + " iterations, the most Kiln unrolls");
    SmallVector<Slot> ins{Slot{Value(), hostScalar(i64, static_cast<double>(it))},
                          Slot{Value(), hostScalar(i1, 1.0)}};
    ins.append(state.begin(), state.end());
    auto outs = ctx.imp.inlineGraph(*body, ins, ctx.builder, scope + "/" + Twine(it).str());
    if (failed(outs))
      return failure();
    cond = knownBool((*outs)[0]);
    if (!cond)
      return ctx.error("the body computes its condition from run-time values; Kiln unrolls "
                       "loops whose condition it can evaluate while compiling");
    for (size_t k = 0; k < carried; ++k)
      state[k] = (*outs)[1 + k];
    for (size_t k = 0; k < scans; ++k)
      scanParts[k].push_back((*outs)[1 + carried + k]);
  }
  for (size_t k = 0; k < carried && k < static_cast<size_t>(ctx.node.output_size()); ++k)
    setOutputSlot(ctx, k, state[k]);
  for (size_t k = 0; k < scans && carried + k < static_cast<size_t>(ctx.node.output_size());
       ++k) {
    if (ctx.node.output(carried + k).empty())
      continue;
    auto s = stack(ctx, scanParts[k], 0, false, "scan output " + Twine(k).str());
    if (failed(s))
      return failure();
    setOutputSlot(ctx, carried + k, *s);
  }
  return success();
}

/// `v` at index `t` of `axis`, that axis dropped.
Value sliceAt(Builder &g, Value v, int64_t axis, int64_t t) {
  if (!g.ok({v}))
    return {};
  auto s = g.shape(v);
  SmallVector<int64_t> off(s.size(), 0), sizes(s), strides(s.size(), 1);
  off[axis] = t;
  sizes[axis] = 1;
  Value x = g.slice(v, off, sizes, strides);
  SmallVector<int64_t> dropped(s);
  dropped.erase(dropped.begin() + axis);
  return g.reshape(x, dropped);
}

/// One scan over `states` and `scanIns` (opset 9+ semantics, or one batch
/// entry of opset 8's); fills `finalStates` and `scanOuts`.
LogicalResult runScan(NodeContext &ctx, const onnx::GraphProto &body, ArrayRef<Slot> states,
                      ArrayRef<Value> scanIns, ArrayRef<int64_t> inAxes,
                      ArrayRef<int64_t> inDirs, ArrayRef<int64_t> outAxes,
                      ArrayRef<int64_t> outDirs, StringRef scope,
                      SmallVectorImpl<Slot> &finalStates, SmallVectorImpl<Slot> &scanOuts) {
  Builder g{ctx};
  int64_t T = -1;
  for (auto [k, v] : llvm::enumerate(scanIns)) {
    auto vt = llvm::cast<RankedTensorType>(v.getType());
    int64_t axis = inAxes[k] < 0 ? inAxes[k] + vt.getRank() : inAxes[k];
    if (axis < 0 || axis >= vt.getRank())
      return ctx.error("scan input " + Twine(k) + "'s axis is out of range");
    auto syms = ctx.imp.symbols.of(v);
    if (axis < static_cast<int64_t>(syms.size()) && syms[axis] >= 0)
      return ctx.error("scans along a dynamic dimension; Kiln unrolls scans, so the sequence "
                       "length must be static (give the inputs static sizes with --shape)");
    int64_t len = vt.getDimSize(axis);
    if (T >= 0 && len != T)
      return ctx.error("scan inputs differ in sequence length (" + Twine(T) + " and " +
                       Twine(len) + ")");
    T = len;
  }
  if (T < 0)
    return ctx.error("expects at least one scan input");
  if (T > kMaxIterations)
    return ctx.error("the sequence length " + Twine(T) + " exceeds " + Twine(kMaxIterations) +
                     ", the most Kiln unrolls");
  size_t nState = states.size();
  SmallVector<Slot> state(states.begin(), states.end());
  size_t nScanOut = body.output_size() - nState;
  std::vector<SmallVector<Slot>> parts(nScanOut);
  for (int64_t t = 0; t < T; ++t) {
    SmallVector<Slot> ins(state);
    for (auto [k, v] : llvm::enumerate(scanIns)) {
      int64_t rank = llvm::cast<RankedTensorType>(v.getType()).getRank();
      int64_t axis = inAxes[k] < 0 ? inAxes[k] + rank : inAxes[k];
      Value e = sliceAt(g, v, axis, inDirs[k] ? T - 1 - t : t);
      if (!g.ok({e}))
        return failure();
      ins.push_back(Slot{e, std::nullopt});
    }
    auto outs = ctx.imp.inlineGraph(body, ins, ctx.builder, scope.str() + "/" + Twine(t).str());
    if (failed(outs))
      return failure();
    for (size_t k = 0; k < nState; ++k)
      state[k] = (*outs)[k];
    for (size_t k = 0; k < nScanOut; ++k)
      parts[k].push_back((*outs)[nState + k]);
  }
  finalStates.assign(state.begin(), state.end());
  for (size_t k = 0; k < nScanOut; ++k) {
    auto s = stack(ctx, parts[k], outAxes[k], outDirs[k] != 0,
                   "scan output " + Twine(k).str());
    if (failed(s))
      return failure();
    scanOuts.push_back(*s);
  }
  return success();
}

/// A per-input attribute list: `n` values (all 0 when absent).
FailureOr<SmallVector<int64_t>> perInput(NodeContext &ctx, StringRef name, size_t n) {
  auto v = ctx.attrInts(name);
  if (!v)
    return SmallVector<int64_t>(n, 0);
  if (v->size() != n)
    return ctx.error(name + " needs " + Twine(n) + " value(s), not " + Twine(v->size()));
  return SmallVector<int64_t>(v->begin(), v->end());
}

LogicalResult convertScan(NodeContext &ctx) {
  const onnx::GraphProto *body = graphAttr(ctx, "body");
  if (!body)
    return ctx.error("expects a body graph");
  int64_t numScanIns = ctx.attrInt("num_scan_inputs", 0);
  bool v8 = ctx.opset < 9;
  size_t first = v8 ? 1 : 0; // opset 8: sequence_lens first
  if (numScanIns < 1 || ctx.numInputs() < first + numScanIns)
    return ctx.error("num_scan_inputs must be between 1 and the number of inputs");
  size_t nState = ctx.numInputs() - first - numScanIns;
  if (static_cast<size_t>(body->input_size()) != nState + numScanIns ||
      static_cast<size_t>(body->output_size()) < nState)
    return ctx.error("the body must take the " + Twine(nState) + " state value(s) and " +
                     Twine(numScanIns) + " scan element(s), and return the states first");
  size_t nScanOut = body->output_size() - nState;
  if (static_cast<size_t>(ctx.node.output_size()) > nState + nScanOut)
    return ctx.error("has more outputs than its body gives");
  std::string scope = scopeOf(ctx);
  SmallVector<Slot> states;
  for (size_t k = 0; k < nState; ++k)
    states.push_back(inputSlot(ctx, first + k));
  SmallVector<Value> scanIns;
  for (int64_t k = 0; k < numScanIns; ++k) {
    Value v = ctx.input(first + nState + k);
    if (!v)
      return ctx.error("scan input " + Twine(k) + " is missing");
    scanIns.push_back(v);
  }
  auto setAll = [&](ArrayRef<Slot> st, ArrayRef<Slot> so) {
    for (size_t k = 0; k < st.size() && k < static_cast<size_t>(ctx.node.output_size()); ++k)
      setOutputSlot(ctx, k, st[k]);
    for (size_t k = 0; k < so.size() && nState + k < static_cast<size_t>(ctx.node.output_size());
         ++k)
      if (!ctx.node.output(nState + k).empty())
        setOutputSlot(ctx, nState + k, so[k]);
  };
  if (!v8) {
    auto inAxes = perInput(ctx, "scan_input_axes", numScanIns);
    auto inDirs = perInput(ctx, "scan_input_directions", numScanIns);
    auto outAxes = perInput(ctx, "scan_output_axes", nScanOut);
    auto outDirs = perInput(ctx, "scan_output_directions", nScanOut);
    if (failed(inAxes) || failed(inDirs) || failed(outAxes) || failed(outDirs))
      return failure();
    SmallVector<Slot> st, so;
    if (failed(runScan(ctx, *body, states, scanIns, *inAxes, *inDirs, *outAxes, *outDirs, scope,
                       st, so)))
      return failure();
    setAll(st, so);
    return success();
  }
  // Opset 8: axis 0 of every input is a batch; each entry scans on its own
  // along axis 1 (`directions` per scan input), results stacked again.
  auto dirs = perInput(ctx, "directions", numScanIns);
  if (failed(dirs))
    return failure();
  Builder g{ctx};
  int64_t B = -1;
  SmallVector<Value> all;
  for (Slot &s : states)
    all.push_back(valueOfSlot(ctx, s, scope + ".state"));
  all.append(scanIns.begin(), scanIns.end());
  for (Value v : all) {
    if (!v || llvm::cast<RankedTensorType>(v.getType()).getRank() < 1)
      return ctx.error("opset-8 Scan inputs need a batch axis");
    auto syms = ctx.imp.symbols.of(v);
    if (!syms.empty() && syms[0] >= 0)
      return ctx.error("the batch of an opset-8 Scan is a dynamic dimension; Kiln unrolls it, "
                       "so give the inputs static sizes with --shape");
    int64_t b = llvm::cast<RankedTensorType>(v.getType()).getDimSize(0);
    if (B >= 0 && b != B)
      return ctx.error("inputs differ in batch size");
    B = b;
  }
  if (ctx.hasInput(0)) {
    Slot lens = inputSlot(ctx, 0);
    int64_t T = llvm::cast<RankedTensorType>(scanIns[0].getType()).getRank() >= 2
                    ? llvm::cast<RankedTensorType>(scanIns[0].getType()).getDimSize(1)
                    : -1;
    if (!lens.host || lens.host->fromSymbolicShape ||
        llvm::any_of(lens.host->values, [&](double v) { return hostInt(v) != T; }))
      return ctx.error("sequence_lens must be known at compile time and equal the full "
                       "sequence length");
  }
  SmallVector<int64_t> inAxes(numScanIns, 0), outAxes(nScanOut, 0), outDirs(nScanOut, 0);
  std::vector<SmallVector<Slot>> stParts(nState), soParts(nScanOut);
  for (int64_t b = 0; b < B; ++b) {
    SmallVector<Slot> st;
    for (size_t k = 0; k < nState; ++k)
      st.push_back(Slot{sliceAt(g, all[k], 0, b), std::nullopt});
    SmallVector<Value> xs;
    for (int64_t k = 0; k < numScanIns; ++k)
      xs.push_back(sliceAt(g, scanIns[k], 0, b));
    if (!g.ok({}) || llvm::any_of(st, [](const Slot &s) { return !s.value; }) ||
        llvm::any_of(xs, [](Value v) { return !v; }))
      return failure();
    SmallVector<Slot> fs, so;
    // Per-entry directions apply to the scan inputs and, as opset 8
    // defines, the scan outputs are in step order.
    if (failed(runScan(ctx, *body, st, xs, inAxes, *dirs, outAxes, outDirs,
                       scope + "/b" + Twine(b).str(), fs, so)))
      return failure();
    for (size_t k = 0; k < nState; ++k)
      stParts[k].push_back(fs[k]);
    for (size_t k = 0; k < nScanOut; ++k)
      soParts[k].push_back(so[k]);
  }
  SmallVector<Slot> st, so;
  for (size_t k = 0; k < nState; ++k) {
    auto s = stack(ctx, stParts[k], 0, false, "state " + Twine(k).str());
    if (failed(s))
      return failure();
    st.push_back(*s);
  }
  for (size_t k = 0; k < nScanOut; ++k) {
    auto s = stack(ctx, soParts[k], 0, false, "scan output " + Twine(k).str());
    if (failed(s))
      return failure();
    so.push_back(*s);
  }
  setAll(st, so);
  return success();
}

} // namespace

void registerControlFlowConverters(llvm::StringMap<Converter> &t) {
  t["If"] = convertIf;
  t["Loop"] = convertLoop;
  t["Scan"] = convertScan;
}

} // namespace kiln::onnx_import
