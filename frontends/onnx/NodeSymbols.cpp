//===- NodeSymbols.cpp - the dynamic dimensions each imported node carries ===//
//
// After each node is converted: trackSymbols marks host values computed
// from symbolic sizes and gives their elements and axes the symbols they
// are (tagHostOutputs: Shape, size arithmetic, positional ranges, views,
// data movement re-run on the tags), refuses sizes used where a
// compile-time value is needed, and derives the symbols of the ops the
// node built (deriveSymbols: MaskSymbols' masks first, then
// SymbolTracker::visit).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/ImporterImpl.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

#include <algorithm>
#include <cmath>

#include "kiln/runtime.h"

using namespace mlir;

namespace kiln::onnx_import {

/// The symbols of the axes a Shape node reads ([start, end) of its input's).
static AxisSymbols shapeSymbols(NodeContext &nc, const AxisSymbols &a) {
  int64_t rank = a.size();
  auto clampAxis = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  int64_t start = clampAxis(nc.attrInt("start", 0)), end = clampAxis(nc.attrInt("end", rank));
  return AxisSymbols(a.begin() + start, a.begin() + std::max(start, end));
}

/// After a node with symbolic or symbol-derived inputs: derives the symbols
/// of the ops it built (failing where one mixes positions along a symbolic
/// axis) and marks host values it computed from symbolic sizes.
LogicalResult Importer::trackSymbols(NodeContext &nc, bool taintedIn) {
  const char *hint = " (a dynamic dimension compiles at its bound and smaller runs are "
                     "padded to it; give the inputs static sizes with --shape)";
  // Shape with start/end reading only static axes computes a static value.
  bool staticShape = false;
  if (nc.node.op_type() == "Shape" && !taintedIn) {
    Value in = nc.input(0);
    staticShape = llvm::none_of(shapeSymbols(nc, symbols.of(in)),
                                [](int32_t sym) { return sym >= 0; });
  }
  // Host results that depend on no symbolic size: CastLike reads only its
  // second input's element type; Shape and Size of a host tensor read its
  // (static) shape, not its tainted values.
  const std::string &opType = nc.node.op_type();
  auto hostTainted = [&](size_t i) {
    const HostTensor *h = nc.hostInput(i);
    return h && h->fromSymbolicShape;
  };
  if (opType == "CastLike")
    staticShape = !hostTainted(0);
  if ((opType == "Shape" || opType == "Size") && nc.hostInput(0) &&
      !nc.hostInput(0)->shapeFromSymbolicShape)
    staticShape = true;
  // Host inputs whose every element is known to be static (a symbolic
  // tensor's static sizes, Shape(x)[1]): the same values in every run.
  if (nc.numInputs() && opType != "Shape" && opType != "Size") {
    bool allStatic = true;
    for (size_t i = 0; i < nc.numInputs() && allStatic; ++i) {
      if (!nc.hasInput(i))
        continue;
      const HostTensor *h = nc.hostInput(i);
      allStatic = h && (!h->fromSymbolicShape ||
                        (!h->shapeFromSymbolicShape && h->axisSymbols.empty() &&
                         h->shapeSymbols.empty() && h->symbolTags.size() == h->values.size() &&
                         llvm::all_of(h->symbolTags, [](int32_t t) { return t == -1; })));
    }
    staticShape = staticShape || allStatic;
  }
  // Whether the results' shapes may depend on a symbolic size: Shape's
  // never (its length is the rank); ops whose result shape follows from
  // their inputs' shapes (and the values of inputs from `valuesFrom` on:
  // Unsqueeze's axes, Slice's starts...) only when one of those does.
  auto shapeDependent = [&]() {
    if (opType == "Shape" || opType == "Size")
      return false;
    size_t valuesFrom;
    static const llvm::StringSet<> shapeFromShapes = {
        "Gather", "Concat", "Cast", "Identity", "Neg", "Abs", "Flatten", "Transpose",
        "Add", "Sub", "Mul", "Div", "Max", "Min", "Equal", "Less", "Greater", "Not",
        "And", "Or", "Where"};
    if (shapeFromShapes.contains(opType))
      valuesFrom = nc.numInputs();
    else if (opType == "Unsqueeze" || opType == "Squeeze" || opType == "Slice" ||
             opType == "Reshape" || opType == "Expand")
      valuesFrom = 1;
    else
      return true;
    for (size_t i = 0; i < nc.numInputs(); ++i) {
      const HostTensor *h = nc.hostInput(i);
      if (h && (h->shapeFromSymbolicShape || (i >= valuesFrom && h->fromSymbolicShape)))
        return true;
    }
    return false;
  };
  bool shapeDep = !staticShape && shapeDependent();
  bool runtimeOut = false;
  for (int o = 0; o < nc.node.output_size(); ++o) {
    auto it = slots.find(nc.node.output(o));
    if (nc.node.output(o).empty() || it == slots.end())
      continue; // (an output the converter left unset is reported after)
    if (it->second.host) {
      it->second.host->fromSymbolicShape = !staticShape;
      it->second.host->shapeFromSymbolicShape = shapeDep;
    } else
      runtimeOut = true;
  }
  if (opType == "CastLike" && !hostTainted(0))
    taintedIn = false;
  tagHostOutputs(nc, taintedIn);

  // Run-time results may use such values only where an exact one (every
  // element static or a symbol's size) stands for a shape: Reshape and
  // Expand targets, ConstantOfShape results (axisSymbols).
  auto exact = [](const HostTensor *h) {
    return h && (!h->fromSymbolicShape ||
                 (!h->symbolTags.empty() && llvm::all_of(h->symbolTags, [](int32_t t) {
                   return t >= -1;
                 })));
  };
  bool expandTarget = opType == "Expand" && runtimeOut && exact(nc.hostInput(1));
  std::string blocking;
  for (size_t i = 0; i < nc.numInputs() && blocking.empty(); ++i) {
    const HostTensor *h = nc.hostInput(i);
    if (!h || !h->fromSymbolicShape || !h->axisSymbols.empty())
      continue;
    // (TopK's converter reads its k's run-time form, If its condition's,
    // Slice its arguments'.)
    if ((opType == "Reshape" && i == 1) || (expandTarget && i == 1) ||
        (opType == "TopK" && i == 1) || (opType == "If" && i == 0) ||
        (opType == "Slice" && i >= 1 && !nc.hostInput(0)))
      continue;
    blocking = nc.node.input(i);
  }
  if (!blocking.empty() && runtimeOut)
    return sizeArgumentError(nc, blocking);
  std::string why;
  if (failed(deriveSymbols(why)))
    return why.empty() ? failure() : nc.error(why + hint);
  if (expandTarget) {
    // The result's axes where the target names a symbol carry it.
    const HostTensor *t = nc.hostInput(1);
    Value res = slots[nc.node.output(0)].value;
    AxisSymbols out = symbols.of(res);
    int64_t rank = out.size(), n = t->symbolTags.size();
    for (int64_t i = 0; i < n && i < rank; ++i) {
      int32_t tag = t->symbolTags[n - 1 - i];
      int32_t &have = out[rank - 1 - i];
      if (tag < 0)
        continue;
      if (have >= 0 && have != tag)
        return nc.error("dynamic dimensions '" + symbols.names[have] + "' and '" +
                        symbols.names[tag] + "' meet on one axis (Kiln cannot prove they "
                        "are equal)" + Twine(hint));
      have = tag;
    }
    symbols.setSymbols(res, out);
  }
  return success();
}

/// The symbolTags of a node's host results: Shape names its input's
/// symbols; data movement (Gather, Slice, Concat, ...) moves its inputs'
/// tags as it moves their values -- found by running the converter once
/// more on the tags themselves; ConstantOfShape of an exact shape gets the
/// shape's symbols on its axes.
/// The axis symbols of a positional host tensor after a view that only adds
/// or drops unit axes: its other axes in order, with their symbols (none
/// when the view moves elements across axes).
static std::vector<int32_t> viewSymbols(ArrayRef<int64_t> in, ArrayRef<int32_t> syms,
                                        ArrayRef<int64_t> out) {
  std::vector<int32_t> result(out.size(), -1);
  size_t i = 0;
  for (size_t o = 0; o < out.size(); ++o) {
    if (out[o] == 1)
      continue;
    while (i < in.size() && in[i] == 1)
      ++i;
    if (i == in.size() || in[i] != out[o])
      return {};
    result[o] = i < syms.size() ? syms[i] : -1;
    ++i;
  }
  while (i < in.size() && in[i] == 1)
    ++i;
  if (i != in.size() || llvm::none_of(result, [](int32_t s) { return s >= 0; }))
    return {};
  return result;
}

void Importer::tagHostOutputs(NodeContext &nc, bool taintedIn) {
  const onnx::NodeProto &node = nc.node;
  const std::string &opType = node.op_type();
  auto outHost = [&](int o) -> HostTensor * {
    if (o >= node.output_size() || node.output(o).empty())
      return nullptr;
    auto it = slots.find(node.output(o));
    return it == slots.end() || !it->second.host ? nullptr : &*it->second.host;
  };
  // Positional results shaped like a run-time input (EyeLike's identity,
  // Dropout's all-true mask): element (i, j, ...) depends only on its
  // position, so the padded layout is exact.
  if ((opType == "EyeLike" || opType == "Dropout") && !nc.hostInput(0)) {
    Value in = nc.input(0);
    for (int o = 0; o < node.output_size(); ++o)
      if (HostTensor *h = outHost(o); h && h->fromSymbolicShape &&
          llvm::ArrayRef<int64_t>(h->shape) ==
              llvm::cast<RankedTensorType>(in.getType()).getShape()) {
        AxisSymbols a = symbols.of(in);
        h->axisSymbols.assign(a.begin(), a.end());
      }
    return;
  }
  HostTensor *out = outHost(0);
  if (!out || !out->fromSymbolicShape)
    return;
  auto tagsOf = [](const HostTensor &h) {
    if (!h.symbolTags.empty())
      return h.symbolTags;
    return std::vector<int32_t>(h.values.size(), h.fromSymbolicShape ? -2 : -1);
  };
  if (opType == "Shape" && (!nc.hostInput(0) || !nc.hostInput(0)->axesOf().empty())) {
    // (A host tensor's symbolic axes are its symbols' sizes.)
    AxisSymbols a = nc.hostInput(0) ? AxisSymbols(nc.hostInput(0)->axesOf().begin(),
                                                  nc.hostInput(0)->axesOf().end())
                                    : symbols.of(nc.input(0));
    AxisSymbols read = shapeSymbols(nc, a);
    out->symbolTags.assign(read.begin(), read.end());
    return;
  }
  auto exactTags = [](const HostTensor *h) {
    return h && h->fromSymbolicShape && !h->symbolTags.empty() &&
           h->symbolTags.size() == h->values.size() &&
           llvm::all_of(h->symbolTags, [](int32_t t) { return t >= -1; });
  };
  auto staticValue = [](const HostTensor *h) { return h && !h->fromSymbolicShape; };
  if (opType == "Equal" && nc.numInputs() == 2) {
    // Sizes against a negative constant (torch's `shape == -1` before an
    // Expand): a size is never negative, so the result is the same in
    // every run -- a static value.
    for (int k = 0; k < 2; ++k) {
      const HostTensor *sizes = nc.hostInput(k), *c = nc.hostInput(1 - k);
      if (exactTags(sizes) && staticValue(c) && !c->values.empty() &&
          llvm::all_of(c->values, [](double v) { return v < 0; })) {
        out->fromSymbolicShape = false;
        out->shapeFromSymbolicShape = false;
        return;
      }
    }
  }
  if (opType == "Where" && nc.numInputs() == 3 && staticValue(nc.hostInput(0))) {
    // A static choice between sizes: each element takes its side's tag.
    const HostTensor *c = nc.hostInput(0), *x = nc.hostInput(1), *y = nc.hostInput(2);
    size_t n = out->values.size();
    auto sized = [&](const HostTensor *h) {
      return h && (h->values.size() == n || h->values.size() == 1);
    };
    if (sized(c) && sized(x) && sized(y) && (exactTags(x) || staticValue(x)) &&
        (exactTags(y) || staticValue(y))) {
      auto tag = [&](const HostTensor *h, size_t e) -> int32_t {
        if (!h->fromSymbolicShape)
          return -1;
        return h->symbolTags[h->values.size() == 1 ? 0 : e];
      };
      out->symbolTags.resize(n);
      for (size_t e = 0; e < n; ++e)
        out->symbolTags[e] = c->values[c->values.size() == 1 ? 0 : e] != 0 ? tag(x, e) : tag(y, e);
      return;
    }
  }
  if ((opType == "Mul" || opType == "Add") && nc.numInputs() == 2 && out->shape.size() == 1 &&
      out->values.size() > 1 && out->elementType.isSignlessInteger()) {
    // Size arithmetic on shape vectors (Shape(x) * [1, 3, 1], Shape(x) + 1,
    // the sum or product of two shapes), as on single sizes below: each
    // element's size follows from its operands' (a derived symbol), so the
    // result stays exact where a target needs one. A factor that is not
    // positive loses it.
    const HostTensor *x = nc.hostInput(0), *y = nc.hostInput(1);
    size_t n = out->values.size();
    auto fits = [&](const HostTensor *h) {
      return h && (h->values.size() == n || h->values.size() == 1) &&
             (staticValue(h) || exactTags(h));
    };
    if (n >= 1 && fits(x) && fits(y) && (exactTags(x) || exactTags(y))) {
      using SymSize = SymbolTracker::SymSize;
      auto at = [&](const HostTensor *h, size_t e) -> SymSize {
        size_t i = h->values.size() == 1 ? 0 : e;
        int32_t t = h->fromSymbolicShape ? h->symbolTags[i] : -1;
        return t >= 0 ? SymSize{t, 0} : SymSize{-1, hostInt(h->values[i])};
      };
      std::vector<int32_t> tags(n, -2);
      for (size_t e = 0; e < n; ++e) {
        SymSize a = at(x, e), b = at(y, e);
        if (a.sym < 0 && b.sym < 0) {
          tags[e] = -1;
          continue;
        }
        if (a.sym < 0)
          std::swap(a, b); // (a carries a symbol)
        if (opType == "Add") {
          tags[e] = symbols.symbolOf(symbols.add(a, b));
        } else if (b.sym >= 0) {
          tags[e] = symbols.derive(KILN_SYM_MUL, a.sym, b.sym);
        } else if (b.c == 0) {
          tags[e] = -1; // (0 in every run)
        } else if (b.c > 0) {
          tags[e] = symbols.product(a.sym, b.c);
        }
      }
      out->symbolTags = std::move(tags);
      return;
    }
  }
  static const llvm::StringSet<> elementwise = {
      "Add", "Sub", "Mul", "Div", "Max", "Min", "Mod", "Equal", "Less", "LessOrEqual",
      "Greater", "GreaterOrEqual", "And", "Or", "Xor", "Not", "Neg", "Abs", "Where", "Cast"};
  if (elementwise.contains(opType) && out->values.size() > 1) {
    // Element-wise on static and positional tensors: the result's element
    // at a position depends on that position only, so its padded layout is
    // exact too; its axes carry the inputs' symbols (broadcast). With a
    // size among the inputs (arange(B) * S), only its shape's are known.
    size_t rank = out->shape.size();
    std::vector<int32_t> axes(rank, -1);
    bool positional = true, any = false;
    for (size_t i = 0; i < nc.numInputs(); ++i) {
      const HostTensor *h = nc.hasInput(i) ? nc.hostInput(i) : nullptr;
      if (!h)
        return;
      const std::vector<int32_t> &ha = h->axesOf();
      if (h->fromSymbolicShape && h->axisSymbols.empty()) {
        positional = false;
        if (ha.empty() && h->values.size() != 1)
          return; // (its shape's symbols are unknown)
      }
      for (size_t k = 0; k < ha.size() && k < rank; ++k) {
        int32_t sym = ha[ha.size() - 1 - k];
        int32_t &have = axes[rank - 1 - k];
        if (sym < 0)
          continue;
        if (have >= 0 && have != sym)
          return; // (two symbols meet: not exact)
        have = sym;
        any = true;
      }
    }
    if (any)
      (positional ? out->axisSymbols : out->shapeSymbols) = axes;
    return;
  }
  if (opType == "Size" && !nc.hostInput(0)) {
    // One symbolic axis: the size is that symbol's times the static rest
    // (a derived symbol the runtime computes); more: not one symbol's size.
    Value in = nc.input(0);
    AxisSymbols a = symbols.of(in);
    auto t = llvm::cast<RankedTensorType>(in.getType());
    int32_t sym = -1, count = 0;
    int64_t rest = 1;
    for (int64_t d = 0; d < t.getRank(); ++d) {
      if (a[d] >= 0) {
        sym = a[d];
        ++count;
      } else {
        rest *= t.getDimSize(d);
      }
    }
    out->symbolTags = {count == 1 && rest > 0 ? symbols.product(sym, rest) : -2};
    return;
  }
  if (const HostTensor *in = nc.hostInput(0);
      opType == "Expand" && in && (!in->fromSymbolicShape || !in->axisSymbols.empty())) {
    // A static or positional tensor broadcast to an exact shape: copies
    // along the target's symbols, positions along the input's.
    const HostTensor *shape = nc.hostInput(1);
    if (shape && !shape->symbolTags.empty() &&
        llvm::all_of(shape->symbolTags, [](int32_t t) { return t >= -1; })) {
      size_t rank = out->shape.size(), n = shape->symbolTags.size();
      size_t inRank = in->axisSymbols.size();
      out->axisSymbols.assign(rank, -1);
      for (size_t i = 0; i < n && i < rank; ++i)
        out->axisSymbols[rank - 1 - i] = shape->symbolTags[n - 1 - i];
      for (size_t i = 0; i < inRank && i < rank; ++i)
        if (int32_t s = in->axisSymbols[inRank - 1 - i]; s >= 0) {
          int32_t &have = out->axisSymbols[rank - 1 - i];
          if (have >= 0 && have != s) {
            out->axisSymbols.clear(); // (two symbols on one axis: not exact)
            break;
          }
          have = s;
        }
    }
    return;
  }
  if (opType == "ConstantOfShape") {
    const HostTensor *shape = nc.hostInput(0);
    if (shape && !shape->symbolTags.empty() &&
        llvm::all_of(shape->symbolTags, [](int32_t t) { return t >= -1; }) &&
        llvm::any_of(shape->symbolTags, [](int32_t t) { return t >= 0; }))
      out->axisSymbols = shape->symbolTags;
    return;
  }
  if (opType == "Slice" && nc.hostInput(0) && !nc.hostInput(0)->fromSymbolicShape) {
    // A static tensor sliced from 0 to a symbol's size (torch's pos[:seq]):
    // at the bound it is the model's own value, and its axis carries the
    // symbol (the rows past a run's size are the padding).
    const HostTensor *starts = nc.hostInput(1), *ends = nc.hostInput(2);
    const HostTensor *axes = nc.numInputs() > 3 ? nc.hostInput(3) : nullptr;
    const HostTensor *steps = nc.numInputs() > 4 ? nc.hostInput(4) : nullptr;
    if (!starts || starts->fromSymbolicShape || !ends || ends->symbolTags.empty() ||
        (nc.numInputs() > 3 && nc.hasInput(3) && (!axes || axes->fromSymbolicShape)) ||
        (nc.numInputs() > 4 && nc.hasInput(4) && (!steps || steps->fromSymbolicShape)))
      return;
    int64_t rank = int64_t(out->shape.size());
    std::vector<int32_t> carried(rank, -1);
    for (size_t k = 0; k < ends->symbolTags.size(); ++k) {
      int32_t tag = ends->symbolTags[k];
      if (tag == -1)
        continue;
      int64_t axis = axes && k < axes->values.size() ? hostInt(axes->values[k]) : int64_t(k);
      if (axis < 0)
        axis += rank;
      bool fromZero = k < starts->values.size() && starts->values[k] == 0;
      bool unitStep = !steps || (k < steps->values.size() && steps->values[k] == 1);
      if (tag < 0 || axis < 0 || axis >= rank || !fromZero || !unitStep)
        return;
      carried[axis] = tag;
    }
    out->axisSymbols = carried;
    return;
  }
  if (opType == "Range") {
    // From a static start by 1 to a size: element i is start + i whatever
    // the size, so the values at the bound are exact and the axis carries
    // the length's symbol (torch.arange(T)).
    const HostTensor *st = nc.hostInput(0), *lim = nc.hostInput(1), *d = nc.hostInput(2);
    if (st && lim && d && !st->fromSymbolicShape && !d->fromSymbolicShape &&
        st->values.size() == 1 && d->values.size() == 1 && d->values[0] == 1 &&
        st->values[0] >= 0 && std::floor(st->values[0]) == st->values[0] &&
        lim->symbolTags.size() == 1 && lim->symbolTags[0] >= 0) {
      int64_t start = static_cast<int64_t>(st->values[0]);
      out->axisSymbols = {start ? symbols.derive(KILN_SYM_ADD_CONST, lim->symbolTags[0], -start)
                                : lim->symbolTags[0]};
    }
    return;
  }
  if ((opType == "Add" || opType == "Sub" || opType == "Mul") && out->values.size() == 1 &&
      out->isInteger() && nc.numInputs() == 2 && nc.hostInput(0) && nc.hostInput(1) &&
      nc.hostInput(0)->values.size() == 1 && nc.hostInput(1)->values.size() == 1) {
    // Size arithmetic: a sum or difference of sizes, or a size and a
    // static value, is a derived symbol's size (the runtime computes it).
    auto tagOf = [&](const HostTensor &h) {
      return h.fromSymbolicShape ? (h.symbolTags.size() == 1 ? h.symbolTags[0] : -2) : -1;
    };
    int32_t ta = tagOf(*nc.hostInput(0)), tb = tagOf(*nc.hostInput(1));
    int64_t va = hostInt(nc.hostInput(0)->values[0]), vb = hostInt(nc.hostInput(1)->values[0]);
    int32_t tag = -2;
    if (opType == "Add" && ta >= 0 && tb >= 0)
      tag = symbols.derive(KILN_SYM_ADD, ta, tb);
    else if (opType == "Add" && (ta >= 0) != (tb >= 0) && std::min(ta, tb) == -1)
      tag = ta >= 0 ? (vb ? symbols.derive(KILN_SYM_ADD_CONST, ta, vb) : ta)
                    : (va ? symbols.derive(KILN_SYM_ADD_CONST, tb, va) : tb);
    else if (opType == "Sub" && ta >= 0 && tb >= 0)
      tag = ta == tb ? -2 : symbols.derive(KILN_SYM_SUB, ta, tb);
    else if (opType == "Sub" && ta >= 0 && tb == -1)
      tag = vb ? symbols.derive(KILN_SYM_ADD_CONST, ta, -vb) : ta;
    else if (opType == "Mul" && (ta >= 0) != (tb >= 0) && std::min(ta, tb) == -1) {
      int64_t factor = ta >= 0 ? vb : va;
      if (factor > 0)
        tag = symbols.product(ta >= 0 ? ta : tb, factor);
    }
    if (tag >= -1)
      out->symbolTags = {tag};
    return;
  }
  static const llvm::StringSet<> views = {"Identity", "Squeeze", "Unsqueeze", "Reshape",
                                          "Flatten"};
  if (const HostTensor *in = nc.numInputs() ? nc.hostInput(0) : nullptr;
      views.contains(opType) && in && !in->axesOf().empty()) {
    std::vector<int32_t> syms = viewSymbols(in->shape, in->axesOf(), out->shape);
    // A view merging a symbolic outermost axis with the static axes after
    // it ([S, 4] -> [4 S]): the merged axis' live positions stay a prefix,
    // of the product's size.
    const std::vector<int32_t> &ia = in->axesOf();
    if (syms.empty() && !in->shape.empty() && !out->shape.empty() &&
        ia.size() == in->shape.size() && ia[0] >= 0 &&
        llvm::none_of(ArrayRef<int32_t>(ia).drop_front(), [](int32_t t) { return t >= 0; })) {
      int64_t merged = in->shape[0];
      size_t k = 1;
      while (k < in->shape.size() && merged < out->shape[0])
        merged *= in->shape[k++];
      if (merged == out->shape[0] && k > 1 &&
          ArrayRef<int64_t>(in->shape).drop_front(k) ==
              ArrayRef<int64_t>(out->shape).drop_front()) {
        syms.assign(out->shape.size(), -1);
        syms[0] = symbols.product(ia[0], merged / in->shape[0]);
      }
    }
    (in->axisSymbols.empty() ? out->shapeSymbols : out->axisSymbols) = syms;
  }
  static const llvm::StringSet<> moves = {"Identity", "Gather", "Slice", "Concat", "Squeeze",
                                          "Unsqueeze", "Reshape", "Flatten", "Transpose", "Cast"};
  if (!taintedIn || !moves.contains(opType) || node.output_size() != 1 ||
      (opType == "Cast" && out->elementType.isInteger(1)))
    return;
  // Swap the moved inputs' values for their tags, convert again, swap back.
  size_t moved = opType == "Concat" ? node.input_size() : 1;
  std::vector<std::pair<std::string, HostTensor>> saved;
  for (size_t i = 0; i < moved; ++i) {
    if (node.input(i).empty() || !slots[node.input(i)].host)
      return;
  }
  for (size_t i = 0; i < moved; ++i) {
    HostTensor &h = *slots[node.input(i)].host;
    saved.emplace_back(node.input(i), h);
    std::vector<int32_t> tags = tagsOf(h);
    h.values.assign(tags.begin(), tags.end());
    h.raw.clear();
  }
  HostTensor real = *out;
  bool ok;
  {
    ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
    NodeContext shadow(*this, node, opset, nc.builder, nc.loc);
    ok = succeeded(table.lookup(opType)(shadow));
  }
  std::vector<int32_t> tags;
  if (HostTensor *t = outHost(0); ok && t && t->values.size() == real.values.size())
    for (double v : t->values)
      tags.push_back(static_cast<int32_t>(v));
  for (auto it = saved.rbegin(); it != saved.rend(); ++it)
    *slots[it->first].host = std::move(it->second);
  slots[node.output(0)].value = {};
  slots[node.output(0)].host = std::move(real);
  slots[node.output(0)].host->symbolTags = std::move(tags);
}

LogicalResult Importer::deriveSymbols(std::string &why) {
  for (Operation *op = derivedUpTo ? derivedUpTo->getNextNode()
                                   : (entryBlock->empty() ? nullptr : &entryBlock->front());
       op;) {
    // Reductions over a symbolic axis read masked inputs: derive the masks
    // (inserted before the op) and then the op.
    auto masked = maskAlongSymbols(op);
    if (failed(masked))
      return failure();
    if (*masked) {
      op = *masked;
      continue;
    }
    if (failed(symbols.visit(op, why)))
      return failure();
    derivedUpTo = op;
    op = op->getNextNode();
  }
  return success();
}

} // namespace kiln::onnx_import
