//===- ConvertShape.cpp - Reshape Flatten Transpose Concat and shape math --===//
//
// Data-movement ops, plus the shape arithmetic torch's exporter emits (Shape,
// Gather, Unsqueeze, Squeeze, Slice, Cast, Constant), which is evaluated at
// import time whenever its inputs are known.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/DataDependentSizes.h"
#include "frontends/onnx/HostEval.h"
#include "frontends/onnx/ImporterImpl.h"
#include "frontends/onnx/NodeContext.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
namespace kiln::onnx_import {
namespace {

/// A reshape merging input axes [i0, i1) into one output axis when they
/// hold a dynamic axis that is not the outermost of static ones (e.g. [B, S]
/// -> [B*S], torch's flattened advanced indexing): the real elements are not
/// a prefix of the padded buffer, so they are gathered into one (compact
/// layout). Output position j < L (the product of the axes' run-time sizes,
/// a derived symbol) reads the input at j's digits in the run-time sizes
/// times the bound strides; positions past L repeat the last real one. The
/// other axes must view as they are. Null when that does not apply.
Value compactReshape(NodeContext &ctx, Value x, ArrayRef<int64_t> outS) {
  SymbolTracker &st = ctx.imp.symbols;
  auto inS = llvm::cast<RankedTensorType>(x.getType()).getShape();
  AxisSymbols a = st.of(x);
  int64_t n = inS.size(), rank = outS.size();
  // Axis groups of equal element counts (unit axes on their own).
  struct Group { int64_t i0, i1, o0, o1; };
  SmallVector<Group> groups;
  int64_t i = 0, o = 0;
  while (i < n || o < rank) {
    if (i < n && inS[i] == 1) {
      if (a[i] >= 0)
        return {};
      ++i;
      continue;
    }
    if (o < rank && outS[o] == 1) {
      ++o;
      continue;
    }
    if (i >= n || o >= rank)
      return {};
    Group g{i, 0, o, 0};
    int64_t pi = inS[i++], po = outS[o++];
    if (!SymbolTracker::growGroup(inS, outS, i, o, pi, po))
      return {};
    g.i1 = i;
    g.o1 = o;
    groups.push_back(g);
  }
  // The one group to compact: a merge whose symbols a view cannot keep.
  const Group *merge = nullptr;
  for (const Group &g : groups) {
    bool sym = false, innerStatic = true;
    for (int64_t k = g.i0; k < g.i1; ++k) {
      sym |= a[k] >= 0;
      innerStatic &= k == g.i0 || a[k] < 0;
    }
    if (!sym || (g.i1 - g.i0 == 1 && g.o1 - g.o0 == 1) || (innerStatic && g.o1 - g.o0 == 1))
      continue;
    if (merge || g.o1 - g.o0 != 1)
      return {};
    merge = &g;
  }
  if (!merge)
    return {};
  OpBuilder &b = ctx.builder;
  Location loc = ctx.loc;
  auto et = llvm::cast<RankedTensorType>(x.getType()).getElementType();
  int64_t i0 = merge->i0, i1 = merge->i1, span = outS[merge->o0];
  // The view with the group as one axis of the bound's size.
  SmallVector<int64_t> viewShape(inS.begin(), inS.begin() + i0);
  viewShape.push_back(span);
  viewShape.append(inS.begin() + i1, inS.end());
  auto view = kiln::ReshapeOp::create(b, loc, RankedTensorType::get(viewShape, et), x);
  view->setAttr(kiln::attr::kRepacked, b.getUnitAttr());
  SmallVector<int64_t> kept;
  for (int64_t d = 0; d < (int64_t)viewShape.size(); ++d) {
    int64_t from = d < i0 ? d : d - 1 + (i1 - i0);
    if (d != i0 && a[from] >= 0)
      kept.append({d, a[from]});
  }
  if (!kept.empty())
    view->setAttr(kiln::attr::kAxisSymbol, b.getDenseI64ArrayAttr(kept));
  // The merged axis's symbol: the product of the group's sizes.
  int32_t sym = -1;
  int64_t factor = 1;
  for (int64_t k = i0; k < i1; ++k) {
    if (a[k] < 0)
      factor *= inS[k];
    else
      sym = sym < 0 ? a[k] : st.derive(KILN_SYM_MUL, sym, a[k]);
  }
  sym = st.product(sym, factor);
  auto scalar = [&](int64_t v) {
    return Importer::indexConstant(b, {1}, [=](int64_t) { return v; });
  };
  Value j = Importer::indexConstant(b, {span}, [](int64_t p) { return p; });
  j = kiln::MinOp::create(b, loc, j, ctx.imp.lastPosition(b, loc, {sym, 0}));
  Value idx;
  int64_t stride = 1;
  for (int64_t k = i1 - 1; k >= i0; --k) {
    Value digit = j;
    if (k > i0) {
      Value size = a[k] >= 0 ? ctx.imp.symbolInput(a[k]) : scalar(inS[k]);
      digit = kiln::ModOp::create(b, loc, j, size, false);
      j = kiln::DivOp::create(b, loc, j, size);
    }
    if (stride != 1)
      digit = kiln::MulOp::create(b, loc, digit, scalar(stride));
    idx = idx ? Value(kiln::AddOp::create(b, loc, idx, digit)) : digit;
    stride *= inS[k];
  }
  auto gather = kiln::GatherOp::create(b, loc, view, idx, b.getI64IntegerAttr(i0));
  gather->setAttr(kiln::attr::kSymbolIndices, b.getUnitAttr());
  gather->setAttr(kiln::attr::kAxisSymbol, b.getDenseI64ArrayAttr({i0, sym}));
  auto outType = RankedTensorType::get(outS, et);
  if (gather.getType() == outType)
    return gather.getResult();
  return kiln::ReshapeOp::create(b, loc, outType, gather.getResult()).getResult();
}

/// The base symbols and static factor a merged size is the product of
/// (KILN_SYM_MUL and MUL_CONST derivations taken apart); false for any
/// other derivation.
static bool productFactors(const SymbolTracker &st, int32_t s, SmallVectorImpl<int32_t> &syms,
                           int64_t &factor) {
  const SymbolTracker::Derivation &d = st.derived[s];
  if (d.op == KILN_SYM_MUL)
    return productFactors(st, d.a, syms, factor) &&
           productFactors(st, static_cast<int32_t>(d.b), syms, factor);
  if (d.op == KILN_SYM_MUL_CONST) {
    factor *= d.b;
    return productFactors(st, d.a, syms, factor);
  }
  syms.push_back(s);
  return true;
}

/// The inverse of compactReshape: a compact axis whose size is a product of
/// symbols (input axis i) split into output axes [i, i + k) that the target
/// names by those symbols and static sizes (`tags`: the target shape's
/// symbolTags), in the padded layout. Output position (p_0, ..., p_k-1)
/// reads the compact axis at sum_d min(p_d, n_d - 1) * (n_d+1 x ... ), the
/// n_d run-time sizes. The other axes must stay as they are. Null when that
/// does not apply.
Value splitReshape(NodeContext &ctx, Value x, ArrayRef<int64_t> outS, ArrayRef<int32_t> tags) {
  SymbolTracker &st = ctx.imp.symbols;
  auto inS = llvm::cast<RankedTensorType>(x.getType()).getShape();
  AxisSymbols a = st.of(x);
  int64_t n = inS.size(), rank = outS.size();
  if ((int64_t)tags.size() != rank || rank < n)
    return {};
  int64_t i = 0;
  while (i < n && a[i] < 0)
    ++i;
  int64_t k = rank - n + 1; // output axes for input axis i
  if (i == n || i + k > rank)
    return {};
  for (int64_t d = 0; d < n; ++d) {
    if (d == i)
      continue;
    int64_t od = d < i ? d : d + k - 1;
    if (a[d] >= 0 || inS[d] != outS[od] || (tags[od] >= 0))
      return {};
  }
  SmallVector<int32_t> want, have;
  int64_t wantFactor = 1, haveFactor = 1, span = 1;
  if (!productFactors(st, a[i], want, wantFactor))
    return {};
  for (int64_t d = i; d < i + k; ++d) {
    span *= outS[d];
    if (tags[d] >= 0)
      have.push_back(tags[d]);
    else
      haveFactor *= outS[d];
  }
  llvm::sort(want);
  llvm::sort(have);
  if (want != have || wantFactor != haveFactor || span != inS[i] || have.size() < 2)
    return {};
  OpBuilder &b = ctx.builder;
  Location loc = ctx.loc;
  auto scalar = [&](int64_t v) {
    return Importer::indexConstant(b, {1}, [=](int64_t) { return v; });
  };
  SmallVector<int64_t> groupShape(outS.begin() + i, outS.begin() + i + k);
  Value idx, stride;
  SmallVector<int64_t> pairs;
  for (int64_t d = i + k - 1; d >= i; --d) {
    SmallVector<int64_t> shape(k, 1);
    shape[d - i] = outS[d];
    Value p = Importer::indexConstant(b, shape, [](int64_t v) { return v; });
    Value size = tags[d] >= 0 ? ctx.imp.symbolInput(tags[d]) : scalar(outS[d]);
    if (tags[d] >= 0) {
      p = kiln::MinOp::create(b, loc, p, ctx.imp.lastPosition(b, loc, {tags[d], 0}));
      pairs.append({d, tags[d]});
    }
    if (stride)
      p = kiln::MulOp::create(b, loc, p, stride);
    idx = idx ? Value(kiln::AddOp::create(b, loc, idx, p)) : p;
    stride = stride ? Value(kiln::MulOp::create(b, loc, stride, size)) : size;
  }
  auto shapeOf = [](Value v) { return llvm::cast<RankedTensorType>(v.getType()).getShape(); };
  if (shapeOf(idx) != ArrayRef<int64_t>(groupShape)) // (every axis static and of size 1)
    return {};
  auto g = kiln::GatherOp::create(b, loc, x, idx, b.getI64IntegerAttr(i));
  g->setAttr(kiln::attr::kSymbolIndices, b.getUnitAttr());
  g->setAttr(kiln::attr::kAxisSymbol, b.getDenseI64ArrayAttr(pairs));
  return g.getResult();
}

/// Sets output 0 to `input(0)` viewed with `shape` (host or IR).
LogicalResult reshapeTo(NodeContext &ctx, ArrayRef<int64_t> shape) {
  if (const HostTensor *h = ctx.hostInput(0)) {
    HostTensor r = *h;
    r.shape.assign(shape.begin(), shape.end());
    if (r.numElements() != h->numElements())
      return ctx.error("cannot reshape " + Twine(h->numElements()) +
                       " elements to " + Twine(r.numElements()));
    ctx.setHostOutput(0, std::move(r));
    return success();
  }
  auto in = ctx.inputType(0);
  auto type = RankedTensorType::get(shape, in.getElementType());
  if (type.getNumElements() != in.getNumElements() && !llvm::is_contained(shape, 0)) {
    // A static target fixes the one symbolic axis of the input, if any.
    Value x = ctx.input(0);
    int64_t rest = 1, symAxis = -1, n = 0;
    for (int64_t d = 0; d < in.getRank(); ++d) {
      if (ctx.imp.symbols.of(x)[d] >= 0) {
        symAxis = d;
        ++n;
      } else {
        rest *= in.getDimSize(d);
      }
    }
    if (n == 1 && rest > 0 && type.getNumElements() % rest == 0 &&
        ctx.requireSize(x, symAxis, type.getNumElements() / rest))
      return failure(); // the import restarts with the symbol fixed
  }
  if (type.getNumElements() != in.getNumElements())
    return ctx.error("cannot reshape " + Twine(in.getNumElements()) +
                     " elements to " + Twine(type.getNumElements()));
  Value x = ctx.input(0);
  std::string why;
  if (ctx.imp.symbols.carriesSymbol(x) &&
      !ctx.imp.symbols.reshapeSymbols(x, shape, why, /*dryRun=*/true))
    if (Value c = compactReshape(ctx, x, shape))
      return ctx.setResult(c);
  return ctx.setResult(ctx.createTyped<kiln::ReshapeOp>(type, x));
}

/// The compile-time integer vector of input `i`, or an error.
FailureOr<std::vector<int64_t>> hostInts(NodeContext &ctx, size_t i,
                                         StringRef what) {
  const HostTensor *h = ctx.hostInput(i);
  if (!h)
    return ctx.error(what + " must be known at compile time (a constant or "
                            "shape arithmetic on static shapes)");
  std::vector<int64_t> v;
  for (double d : h->values)
    v.push_back(hostInt(d));
  return v;
}

/// A reshape whose -1 (at `m`) takes the share of the input's one symbolic
/// axis, N, when a static axis before it keeps the real elements from
/// staying a prefix (e.g. [N, 3, 4] -> [2, -1, 2], i.e. [2, 3N, 2]): the
/// symbol's axes before it all of size 1, so the input's real elements are
/// the first of its flat buffer, and output element i reads flat position
///   sum_{d<m} i_d c_d S + sum_{d>m} i_d c_d + min(i_m, S - 1) c_m
/// (S = N x restIn / restOut the output axis's run-time size, c_d the
/// static strides without axis m): a gather by run-time indices whose
/// padding repeats the last real position. Null when that does not apply.
Value gatherReshape(NodeContext &ctx, ArrayRef<int64_t> target, int64_t m) {
  SymbolTracker &st = ctx.imp.symbols;
  Value x = ctx.hostInput(0) ? Value() : ctx.input(0);
  if (!x || m < 0 || !st.carriesSymbol(x))
    return {};
  std::string why;
  if (st.reshapeSymbols(x, target, why, /*dryRun=*/true))
    return {}; // the plain view keeps the symbols
  auto in = ctx.inputType(0);
  AxisSymbols a = st.of(x);
  int64_t k = -1, restIn = 1, restOut = 1, rank = target.size();
  for (int64_t d = 0; d < in.getRank(); ++d) {
    if (a[d] >= 0) {
      if (k >= 0)
        return {};
      k = d;
    } else {
      if (k < 0 && in.getDimSize(d) != 1)
        return {};
      restIn *= in.getDimSize(d);
    }
  }
  for (int64_t d = 0; d < rank; ++d)
    if (d != m)
      restOut *= target[d];
  if (k < 0 || restIn == 0 || restOut == 0 || restIn % restOut)
    return {};
  int32_t S = st.product(a[k], restIn / restOut);
  if (st.bounds[S] != target[m])
    return {};
  // Static strides (axis m left out of those before it) as constants.
  SmallVector<int64_t> strideOut(rank, 1), strideBefore(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d) {
    strideOut[d] = strideOut[d + 1] * target[d + 1];
    strideBefore[d] = strideBefore[d + 1] * (d + 1 == m ? 1 : target[d + 1]);
  }
  OpBuilder &b = ctx.builder;
  Location loc = ctx.loc;
  // sum over axes `from` <= d < `to` of i_d * stride[d], shaped to broadcast.
  auto positional = [&](int64_t from, int64_t to, ArrayRef<int64_t> stride) {
    SmallVector<int64_t> shape(rank, 1);
    for (int64_t d = from; d < to; ++d)
      shape[d] = target[d];
    return Importer::indexConstant(b, shape, [&](int64_t flat) {
      int64_t v = 0;
      for (int64_t d = rank - 1; d >= 0; --d) {
        v += (flat % shape[d]) * stride[d];
        flat /= shape[d];
      }
      return v;
    });
  };
  auto scalar = [&](int64_t v) {
    return Importer::indexConstant(b, {1}, [=](int64_t) { return v; });
  };
  Value size = ctx.imp.symbolInput(S);
  Value last = ctx.imp.lastPosition(b, loc, {S, 0});
  Value im = kiln::MinOp::create(b, loc, positional(m, m + 1, SmallVector<int64_t>(rank, 1)), last);
  Value idx = kiln::MulOp::create(b, loc, im, scalar(strideOut[m]));
  if (m + 1 < rank)
    idx = kiln::AddOp::create(b, loc, idx, positional(m + 1, rank, strideOut));
  if (m > 0)
    idx = kiln::AddOp::create(
        b, loc, idx, kiln::MulOp::create(b, loc, positional(0, m, strideBefore), size));
  idx = kiln::MinOp::create(b, loc, idx, scalar(std::max<int64_t>(in.getNumElements() - 1, 0)));
  Value flat = kiln::ReshapeOp::create(
      b, loc, RankedTensorType::get({in.getNumElements()}, in.getElementType()), x);
  auto g = kiln::GatherOp::create(b, loc, flat, idx, b.getI64IntegerAttr(0));
  g->setAttr(kiln::attr::kSymbolIndices, b.getUnitAttr());
  g->setAttr(kiln::attr::kAxisSymbol, b.getDenseI64ArrayAttr({m, S}));
  return g.getResult();
}

LogicalResult convertReshape(NodeContext &ctx) {
  std::vector<int64_t> target;
  if (ctx.opset < 5) {
    target = ctx.attrInts("shape").value_or(std::vector<int64_t>{});
  } else {
    if (!ctx.hostInput(1) && ctx.input(1))
      return reshapeAtRunTime(ctx); // (a data-dependent shape)
    auto t = hostInts(ctx, 1, "the target shape");
    if (failed(t))
      return failure();
    target = *t;
  }
  auto in = ctx.inputType(0);
  bool allowZero = ctx.attrInt("allowzero", 0) != 0;
  int64_t known = 1, inferAt = -1;
  bool copiesSymbol = false; // (a 0 copying a symbolic axis: a plain view)
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowZero) {
      if (static_cast<int64_t>(i) >= in.getRank())
        return ctx.error("shape entry 0 at " + Twine(i) + " has no input dimension to copy");
      target[i] = in.getDimSize(i);
      copiesSymbol |= !ctx.hostInput(0) && ctx.imp.symbols.of(ctx.input(0))[i] >= 0;
    }
    if (target[i] == -1) {
      if (inferAt >= 0)
        return ctx.error("the target shape has more than one -1");
      inferAt = i;
    } else if (target[i] < 0) {
      return ctx.error("invalid target dimension " + Twine(target[i]));
    } else if (target[i] != 0 && known > kMaxTensorElements / target[i]) {
      return ctx.error("the target shape has more than 2^40 elements");
    } else {
      known *= target[i];
    }
  }
  // A compact merged axis split back into the target's symbols.
  if (const HostTensor *t = ctx.opset >= 5 ? ctx.hostInput(1) : nullptr;
      t && inferAt < 0 && !allowZero && !ctx.hostInput(0) &&
      t->symbolTags.size() == target.size() && ctx.imp.symbols.carriesSymbol(ctx.input(0))) {
    std::vector<int32_t> tags(t->symbolTags);
    for (size_t i = 0; i < tags.size(); ++i)
      if (t->values[i] == 0) // (a 0 copies the input's axis)
        tags[i] = ctx.imp.symbols.of(ctx.input(0))[i];
    if (Value g = splitReshape(ctx, ctx.input(0), target, tags))
      return ctx.setResult(g);
  }
  if (inferAt >= 0) {
    if (known == 0 || in.getNumElements() % known)
      return ctx.error("cannot infer the -1 dimension");
    target[inferAt] = in.getNumElements() / known;
    if (Value g = copiesSymbol ? Value() : gatherReshape(ctx, target, inferAt))
      return ctx.setResult(g);
  }
  return reshapeTo(ctx, target);
}

LogicalResult convertFlatten(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  int64_t rank = in.getRank();
  int64_t axis = ctx.attrInt("axis", 1);
  if (axis < -rank || axis > rank)
    return ctx.error("axis " + Twine(axis) + " is out of range");
  if (axis < 0)
    axis += rank;
  int64_t rows = 1, cols = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < axis ? rows : cols) *= in.getDimSize(i);
  return reshapeTo(ctx, {rows, cols});
}

LogicalResult convertUnsqueeze(NodeContext &ctx) {
  std::vector<int64_t> axes;
  if (ctx.opset < 13) {
    axes = ctx.attrInts("axes").value_or(std::vector<int64_t>{});
  } else {
    if (!ctx.hostInput(1) && ctx.input(1))
      return unsqueezeAtRunTime(ctx); // (a data-dependent shape)
    auto a = hostInts(ctx, 1, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  }
  auto in = ctx.inputType(0);
  int64_t outRank = in.getRank() + axes.size();
  std::vector<bool> isNew(outRank, false);
  for (int64_t a : axes) {
    auto n = normalizeAxis(ctx, a, outRank);
    if (failed(n))
      return failure();
    if (isNew[*n])
      return ctx.error("axis " + Twine(a) + " is repeated");
    isNew[*n] = true;
  }
  std::vector<int64_t> shape;
  int64_t src = 0;
  for (int64_t i = 0; i < outRank; ++i)
    shape.push_back(isNew[i] ? 1 : in.getDimSize(src++));
  return reshapeTo(ctx, shape);
}

LogicalResult convertSqueeze(NodeContext &ctx) {
  std::optional<std::vector<int64_t>> axes;
  if (ctx.opset < 13) {
    axes = ctx.attrInts("axes");
  } else if (ctx.hasInput(1)) {
    if (!ctx.hostInput(1) && ctx.input(1))
      return squeezeAtRunTime(ctx); // (a data-dependent shape)
    auto a = hostInts(ctx, 1, "axes");
    if (failed(a))
      return failure();
    axes = *a;
  }
  auto in = ctx.inputType(0);
  std::vector<bool> drop(in.getRank(), false);
  if (axes) {
    for (int64_t a : *axes) {
      auto n = normalizeAxis(ctx, a, in.getRank());
      if (failed(n))
        return failure();
      if (in.getDimSize(*n) != 1 && ctx.requireSize(ctx.input(0), *n, 1))
        return failure(); // a dynamic dimension the model squeezes is 1
      if (in.getDimSize(*n) != 1)
        return ctx.error("cannot squeeze dimension " + Twine(a) + " of size " +
                         Twine(in.getDimSize(*n)));
      drop[*n] = true;
    }
  } else {
    for (int64_t i = 0; i < in.getRank(); ++i)
      drop[i] = in.getDimSize(i) == 1;
  }
  std::vector<int64_t> shape;
  for (int64_t i = 0; i < in.getRank(); ++i)
    if (!drop[i])
      shape.push_back(in.getDimSize(i));
  return reshapeTo(ctx, shape);
}

LogicalResult convertTranspose(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  int64_t rank = in.getRank();
  std::vector<int64_t> perm;
  for (int64_t i = rank - 1; i >= 0; --i)
    perm.push_back(i);
  perm = ctx.attrInts("perm").value_or(perm);
  if (static_cast<int64_t>(perm.size()) != rank)
    return ctx.error("perm has " + Twine(perm.size()) + " entries for rank " +
                     Twine(rank));
  if (const HostTensor *h = ctx.hostInput(0)) {
    HostTensor r = *h;
    r.raw.clear();
    for (int64_t i = 0; i < rank; ++i) {
      if (perm[i] < 0 || perm[i] >= rank)
        return ctx.error("invalid perm");
      r.shape[i] = h->shape[perm[i]];
    }
    auto inStrides = stridesOf(h->shape);
    std::vector<int64_t> idx(rank, 0);
    for (int64_t e = 0; e < r.numElements(); ++e) {
      int64_t off = 0;
      for (int64_t i = 0; i < rank; ++i)
        off += idx[i] * inStrides[perm[i]];
      r.values[e] = h->values[off];
      for (int64_t i = rank - 1; i >= 0; --i) {
        if (++idx[i] < r.shape[i])
          break;
        idx[i] = 0;
      }
    }
    ctx.setHostOutput(0, std::move(r));
    return success();
  }
  return ctx.setResult(ctx.create<kiln::TransposeOp>(
                      ctx.input(0), ctx.builder.getDenseI64ArrayAttr(perm)));
}

LogicalResult convertConcat(NodeContext &ctx) {
  auto first = ctx.inputType(0);
  // Before opset 4 the axis defaulted to 1.
  auto axis = normalizeAxis(ctx, ctx.attrInt("axis", ctx.opset < 4 ? 1 : 0),
                            first.getRank());
  if (failed(axis))
    return failure();
  bool allHost = true;
  for (size_t i = 0; i < ctx.numInputs(); ++i)
    allHost &= ctx.hostInput(i) != nullptr;
  if (allHost) {
    // Concatenate on the host: outer x (axis block) layout.
    HostTensor r = *ctx.hostInput(0);
    r.raw.clear();
    r.shape[*axis] = 0;
    int64_t outer = 1;
    for (int64_t i = 0; i < *axis; ++i)
      outer *= r.shape[i];
    std::vector<double> vals;
    for (size_t i = 0; i < ctx.numInputs(); ++i) {
      const HostTensor *h = ctx.hostInput(i);
      if (h->shape.size() != r.shape.size())
        return ctx.error("inputs differ in rank");
      r.shape[*axis] += h->shape[*axis];
    }
    for (int64_t o = 0; o < outer; ++o)
      for (size_t i = 0; i < ctx.numInputs(); ++i) {
        const HostTensor *h = ctx.hostInput(i);
        int64_t block = outer ? h->numElements() / outer : 0;
        vals.insert(vals.end(), h->values.begin() + o * block,
                    h->values.begin() + (o + 1) * block);
      }
    r.values = std::move(vals);
    if (static_cast<int64_t>(r.values.size()) != r.numElements())
      return ctx.error("inputs differ in shape");
    ctx.setHostOutput(0, std::move(r));
    return success();
  }
  SmallVector<Value> ins;
  for (size_t i = 0; i < ctx.numInputs(); ++i)
    ins.push_back(ctx.input(i));
  auto packed = ctx.create<kiln::ConcatOp>(ValueRange(ins), ctx.builder.getI64IntegerAttr(*axis));
  // Along a symbolic axis the operands' real elements are prefixes of their
  // bounds: concatenated at the bounds, then gathered one after another.
  SymbolTracker &st = ctx.imp.symbols;
  if (failed(packed) || llvm::none_of(ins, [&](Value v) {
        return st.of(v)[*axis] >= 0;
      }))
    return ctx.setResult(packed);
  packed->getDefiningOp()->setAttr(kiln::attr::kRepacked, ctx.builder.getUnitAttr());
  SmallVector<Importer::RepackPiece> pieces;
  int64_t at = 0;
  for (Value v : ins) {
    int64_t dim = llvm::cast<RankedTensorType>(v.getType()).getDimSize(*axis);
    int32_t sym = st.of(v)[*axis];
    pieces.push_back({sym >= 0 ? SymbolTracker::SymSize{sym, 0} : SymbolTracker::SymSize{-1, dim},
                      SymbolTracker::SymSize{-1, at}, 1});
    at += dim;
  }
  return ctx.setResult(ctx.imp.repackAxis(ctx.builder, ctx.loc, *packed, *axis, pieces, at));
}

LogicalResult convertConstant(NodeContext &ctx) {
  auto *imp = &ctx.imp;
  HostTensor h;
  Builder b(ctx.builder.getContext());
  if (const auto *a = ctx.attr("value")) {
    auto t = imp->hostTensorFromProto(a->t(), "Constant '" + ctx.node.name() + "'");
    if (failed(t))
      return failure();
    h = std::move(*t);
  } else if (const auto *a = ctx.attr("value_float")) {
    h.elementType = b.getF32Type();
    h.values = {a->f()};
  } else if (const auto *a = ctx.attr("value_floats")) {
    h.elementType = b.getF32Type();
    h.shape = {a->floats_size()};
    h.values.assign(a->floats().begin(), a->floats().end());
  } else if (const auto *a = ctx.attr("value_int")) {
    h.elementType = b.getIntegerType(64);
    h.values = {static_cast<double>(a->i())};
  } else if (const auto *a = ctx.attr("value_ints")) {
    h.elementType = b.getIntegerType(64);
    h.shape = {a->ints_size()};
    for (int64_t v : a->ints())
      h.values.push_back(static_cast<double>(v));
  } else {
    return ctx.error("only dense value/value_float(s)/value_int(s) constants "
                     "are supported");
  }
  ctx.setHostOutput(0, std::move(h));
  return success();
}

LogicalResult convertShape(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  int64_t rank = in.getRank();
  int64_t start = ctx.attrInt("start", 0), end = ctx.attrInt("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  HostTensor h;
  h.elementType = ctx.builder.getIntegerType(64);
  h.shape = {end - start};
  for (int64_t i = start; i < end; ++i)
    h.values.push_back(static_cast<double>(in.getDimSize(i)));
  ctx.setHostOutput(0, std::move(h));
  return success();
}

LogicalResult convertGather(NodeContext &ctx) {
  const HostTensor *data = ctx.hostInput(0), *idx = ctx.hostInput(1);
  if (!data || !idx) {
    // Run-time data or indices (embedding lookups): kiln.gather.
    auto axis = normalizeAxis(ctx, ctx.attrInt("axis", 0), ctx.inputType(0).getRank());
    if (failed(axis))
      return failure();
    if (!ctx.inputType(1).getElementType().isSignlessInteger())
      return ctx.error("indices must be int32 or int64");
    if (failed(ctx.checkConstantIndices(1, ctx.inputType(0).getDimSize(*axis))))
      return failure();
    return ctx.setResult(userIndices(ctx.create<kiln::GatherOp>(
        ctx.input(0), ctx.input(1), ctx.builder.getI64IntegerAttr(*axis))));
  }
  int64_t rank = data->shape.size();
  auto axis = normalizeAxis(ctx, ctx.attrInt("axis", 0), rank);
  if (failed(axis))
    return failure();
  int64_t outer = 1, inner = 1, n = data->shape[*axis];
  for (int64_t i = 0; i < *axis; ++i) outer *= data->shape[i];
  for (int64_t i = *axis + 1; i < rank; ++i) inner *= data->shape[i];
  HostTensor r;
  r.elementType = data->elementType;
  r.shape.assign(data->shape.begin(), data->shape.begin() + *axis);
  r.shape.insert(r.shape.end(), idx->shape.begin(), idx->shape.end());
  r.shape.insert(r.shape.end(), data->shape.begin() + *axis + 1, data->shape.end());
  for (int64_t o = 0; o < outer; ++o)
    for (double dv : idx->values) {
      int64_t k = hostInt(dv);
      if (k < 0) k += n;
      if (k < 0 || k >= n)
        return ctx.error("index " + Twine(hostInt(dv)) +
                         " is out of range for a dimension of " + Twine(n));
      for (int64_t i = 0; i < inner; ++i)
        r.values.push_back(data->values[(o * n + k) * inner + i]);
    }
  ctx.setHostOutput(0, std::move(r));
  return success();
}

/// A slice (start, end, step as the model gives them) of an axis carrying
/// symbol `sym` (bound `bound`) as one piece with run-time start and size
/// (ONNX's clamping, counted from the run's size); nullopt where a negative
/// step starts from a negative position other than -1.
std::optional<Importer::RepackPiece> slicePiece(SymbolTracker &st, int32_t sym, int64_t bound,
                                                int64_t start, int64_t end, int64_t step) {
  using SymSize = SymbolTracker::SymSize;
  SymSize s{sym, 0};
  auto minC = [&](int64_t c) { return SymSize{st.derive(KILN_SYM_MIN_CONST, sym, c), 0}; };
  auto addC = [&](int64_t c) { return SymSize{st.symbolOf({sym, c}), 0}; };
  SymSize from, size;
  if (step > 0) {
    // [S, E) with S, E clamped to [0, s].
    from = start >= bound ? s : start >= 0 ? (start == 0 ? SymSize{-1, 0} : minC(start))
                                           : addC(start);
    SymSize e = end >= bound ? s : end >= 0 ? minC(end) : addC(end);
    size = from.sym < 0 ? e : SymSize{st.derive(KILN_SYM_SUB, e.sym, from.sym), 0};
    if (step > 1 && size.sym >= 0)
      size = {st.derive(KILN_SYM_CEIL_DIV_CONST, size.sym, step), 0};
  } else {
    // (E, S] with S clamped to [0, s - 1], E to [-1, s - 1]: with S + 1
    // and E + 1, both clamped to [0, s].
    SymSize sp1;
    if (start >= bound || start == -1)
      sp1 = s;
    else if (start >= 0)
      sp1 = minC(start + 1);
    else
      return std::nullopt;
    SymSize ep1 = end >= bound ? s : end >= 0 ? minC(end + 1)
                  : end < -bound ? SymSize{-1, 0} : addC(end + 1);
    size = ep1.sym < 0 ? sp1 : SymSize{st.derive(KILN_SYM_SUB, sp1.sym, ep1.sym), 0};
    if (-step > 1)
      size = {st.derive(KILN_SYM_CEIL_DIV_CONST, size.sym, -step), 0};
    from = {sp1.sym, -1};
  }
  return Importer::RepackPiece{size, from, step};
}

LogicalResult convertSlice(NodeContext &ctx) {
  // Starts, ends, axes and steps must be known at compile time; the data
  // may be a run-time tensor (a kiln.slice) or a compile-time one (sliced
  // here).
  const HostTensor *data = ctx.hostInput(0);
  std::vector<int64_t> shape = data ? data->shape
                                    : std::vector<int64_t>(ctx.inputType(0).getShape());
  int64_t rank = shape.size();
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset < 10) {
    starts = ctx.attrInts("starts").value_or(starts);
    ends = ctx.attrInts("ends").value_or(ends);
    axes = ctx.attrInts("axes").value_or(axes);
  } else {
    // Any of them a run-time value: gathered by run-time positions.
    bool runTime = false;
    for (size_t i = 1; i <= 4; ++i)
      runTime |= ctx.hasInput(i) && !ctx.hostInput(i);
    if (runTime && !data)
      return sliceAtRunTime(ctx);
    // Arguments computed from run-time sizes: an end that is exactly the
    // sliced axis' own size (x[:n] for n = x.shape[0]) keeps the axis
    // whole, as its bound does in the static path; any other is sliced at
    // run time by the rebuilt values.
    if (!data) {
      SmallVector<Value, 4> rebuilt(4);
      bool tainted = false, wholeAxes = true;
      const HostTensor *axesH = ctx.hasInput(3) ? ctx.hostInput(3) : nullptr;
      AxisSymbols syms = ctx.imp.symbols.of(ctx.input(0));
      for (size_t i = 1; i <= 4; ++i) {
        const HostTensor *h = ctx.hasInput(i) ? ctx.hostInput(i) : nullptr;
        if (!h || !h->fromSymbolicShape)
          continue;
        tainted = true;
        bool ownSizes =
            i == 2 && h->symbolTags.size() == h->values.size() &&
            (!axesH || (!axesH->fromSymbolicShape && axesH->values.size() == h->values.size()));
        for (size_t j = 0; ownSizes && j < h->values.size(); ++j) {
          int64_t a = axesH ? hostInt(axesH->values[j]) : static_cast<int64_t>(j);
          a = a < 0 ? a + rank : a;
          int32_t t = h->symbolTags[j];
          ownSizes = t == -1 || (a >= 0 && a < rank && t >= 0 && syms[a] == t);
        }
        wholeAxes = wholeAxes && ownSizes;
      }
      if (tainted && !wholeAxes) {
        for (size_t i = 1; i <= 4; ++i) {
          const HostTensor *h = ctx.hasInput(i) ? ctx.hostInput(i) : nullptr;
          if (h && h->fromSymbolicShape &&
              !(rebuilt[i - 1] = ctx.imp.sizesAtRunTime(ctx.builder, ctx.node.input(i), 0)))
            return failure(); // (the importer names the size it could not rebuild)
        }
        return sliceAtRunTime(ctx, rebuilt);
      }
    }
    auto s = hostInts(ctx, 1, "starts"), e = hostInts(ctx, 2, "ends");
    if (failed(s) || failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (ctx.hasInput(3)) {
      auto a = hostInts(ctx, 3, "axes");
      if (failed(a)) return failure();
      axes = *a;
    }
    if (ctx.hasInput(4)) {
      auto st = hostInts(ctx, 4, "steps");
      if (failed(st)) return failure();
      steps = *st;
    }
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return ctx.error("starts, ends, axes and steps differ in length");
  std::vector<int64_t> lo(rank, 0), step(rank, 1), count(shape);
  // Per axis, the slice's own start and end (for symbolic axes).
  std::vector<std::optional<std::pair<int64_t, int64_t>>> asGiven(rank);
  for (size_t i = 0; i < starts.size(); ++i) {
    auto ax = normalizeAxis(ctx, axes[i], rank);
    if (failed(ax))
      return failure();
    asGiven[*ax] = {starts[i], ends[i]};
    int64_t d = shape[*ax], st = steps[i];
    if (st == 0)
      return ctx.error("step 0");
    int64_t s = starts[i] < 0 ? starts[i] + d : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + d : ends[i];
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      count[*ax] = e > s ? (e - s + st - 1) / st : 0;
    } else {
      s = std::clamp<int64_t>(s, -1, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      count[*ax] = s > e ? (s - e - st - 1) / -st : 0;
    }
    lo[*ax] = s;
    step[*ax] = st;
  }
  if (!data) {
    for (int64_t d = 0; d < rank; ++d)
      if (count[d] == 0)
        lo[d] = 0; // an empty dimension reads nothing
    // Symbolic axes sliced at run time (their starts and ends count from
    // the run's size), the others here.
    SymbolTracker &st = ctx.imp.symbols;
    AxisSymbols syms = st.of(ctx.input(0));
    SmallVector<std::pair<int64_t, Importer::RepackPiece>> runtime;
    for (int64_t d = 0; d < rank; ++d) {
      if (syms[d] < 0 || !asGiven[d] || count[d] == 0 ||
          (lo[d] == 0 && step[d] == 1 && count[d] == shape[d]))
        continue;
      auto piece = slicePiece(st, syms[d], shape[d], asGiven[d]->first, asGiven[d]->second,
                              step[d]);
      if (!piece)
        continue; // (refused when the op is checked)
      runtime.push_back({d, *piece});
    }
    std::vector<int64_t> outCount = count;
    for (auto &[d, piece] : runtime) {
      lo[d] = 0;
      step[d] = 1;
      count[d] = shape[d];
    }
    auto &b = ctx.builder;
    auto r = ctx.create<kiln::SliceOp>(ctx.input(0), b.getDenseI64ArrayAttr(lo),
                                       b.getDenseI64ArrayAttr(count),
                                       b.getDenseI64ArrayAttr(step));
    for (auto &[d, piece] : runtime)
      if (succeeded(r))
        r = ctx.imp.repackAxis(b, ctx.loc, *r, d, piece, outCount[d]);
    return ctx.setResult(r);
  }
  HostTensor r;
  r.elementType = data->elementType;
  r.shape = count;
  auto strides = stridesOf(data->shape);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t e = 0; e < r.numElements(); ++e) {
    int64_t off = 0;
    for (int64_t i = 0; i < rank; ++i)
      off += (lo[i] + idx[i] * step[i]) * strides[i];
    r.values.push_back(data->values[off]);
    for (int64_t i = rank - 1; i >= 0; --i) {
      if (++idx[i] < count[i])
        break;
      idx[i] = 0;
    }
  }
  ctx.setHostOutput(0, std::move(r));
  return success();
}

LogicalResult castTo(NodeContext &ctx, Type to);

LogicalResult convertCast(NodeContext &ctx) {
  int64_t code = ctx.attrInt("to", 0);
  if (ctx.opset < 6) {
    // Before opset 6 `to` was a type name.
    static const std::pair<const char *, int> names[] = {
        {"FLOAT", onnx::TensorProto::FLOAT},   {"DOUBLE", onnx::TensorProto::DOUBLE},
        {"INT64", onnx::TensorProto::INT64},   {"INT32", onnx::TensorProto::INT32},
        {"INT16", onnx::TensorProto::INT16},   {"INT8", onnx::TensorProto::INT8},
        {"UINT8", onnx::TensorProto::UINT8},   {"BOOL", onnx::TensorProto::BOOL}};
    std::string name = ctx.attrString("to", "");
    code = 0;
    for (auto &[n, c] : names)
      if (name == n)
        code = c;
  }
  Type to = elementTypeOf(ctx.builder.getContext(), code);
  if (!to)
    return ctx.error("unsupported target type " + Twine(code));
  return castTo(ctx, to);
}

/// CastLike: Cast to the second input's element type.
LogicalResult convertCastLike(NodeContext &ctx) {
  return castTo(ctx, ctx.inputType(1).getElementType());
}

LogicalResult castTo(NodeContext &ctx, Type to) {
  // Narrow float targets: float8's saturation (opset 19) and float8e8m0's
  // rounding (opset 24).
  bool saturate = ctx.attrInt("saturate", 1) != 0;
  std::string roundMode = ctx.attrString("round_mode", "up");
  if (kiln::roundModeCode(roundMode) < 0)
    return ctx.error("round_mode must be \"up\", \"down\" or \"nearest\", not \"" +
                     roundMode + "\"");
  if (const HostTensor *h = ctx.hostInput(0)) {
    HostTensor r = *h;
    r.raw.clear();
    r.elementType = to;
    for (double &v : r.values) {
      if (to.isInteger(1)) v = v != 0;
      else if (kiln::narrowDtype(to) && llvm::isa<FloatType>(to))
        v = kiln::roundToNarrow(v, to, saturate, roundMode);
      else if (to.isInteger()) {
        // Truncate toward zero, then wrap to the width (as the kernels do).
        unsigned w = to.getIntOrFloatBitWidth();
        APInt x(w, static_cast<uint64_t>(hostInt(std::trunc(v))), true, true);
        v = to.isUnsignedInteger() ? static_cast<double>(x.getZExtValue())
                                   : static_cast<double>(x.getSExtValue());
      }
      else if (auto f = llvm::dyn_cast<FloatType>(to)) {
        APFloat x(v);
        bool lost;
        x.convert(f.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
        v = x.convertToDouble();
      }
    }
    ctx.setHostOutput(0, std::move(r));
    return success();
  }
  if (ctx.inputType(0).getElementType() == to) {
    ctx.setOutput(0, ctx.input(0));
    return success();
  }
  auto in = ctx.inputType(0);
  if (kiln::narrowDtype(to) && llvm::isa<FloatType>(to))
    return ctx.setResult(ctx.createTyped<kiln::CastOp>(
        in.clone(to), ctx.input(0), ctx.builder.getBoolAttr(saturate),
        ctx.builder.getStringAttr(roundMode)));
  return ctx.setResult(ctx.createTyped<kiln::CastOp>(in.clone(to), ctx.input(0)));
}

} // namespace

void registerShapeConverters(llvm::StringMap<Converter> &t) {
  t["Reshape"] = convertReshape;
  t["Flatten"] = convertFlatten;
  t["Unsqueeze"] = convertUnsqueeze;
  t["Squeeze"] = convertSqueeze;
  t["Transpose"] = convertTranspose;
  t["Concat"] = convertConcat;
  t["Constant"] = convertConstant;
  t["Shape"] = convertShape;
  t["Gather"] = convertGather;
  t["Slice"] = convertSlice;
  t["Cast"] = convertCast;
  t["CastLike"] = convertCastLike;
}

} // namespace kiln::onnx_import
