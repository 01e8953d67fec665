//===- RunTimeShapes.cpp - shapes named by run-time values ----------------===//
//
// Reshape targets, Squeeze and Unsqueeze axes, Split sizes, the axes a
// keepdims=0 reduction drops and CumSum's axis, when they arrive at run
// time. The result's rank is known (the argument's length), each axis' size
// is a data-dependent symbol (KILN_SYM_COMPUTED, see DataDependentSizes.cpp)
// of a compile-time bound, and the result is laid out at its bounds, as
// every tensor with a symbol is: a gather from the source's flat buffer in
// which element (i_0, .., i_{R-1}) reads position
//
//   sum_j min(i_j, max(size_j - 1, 0)) * stride_j
//
// (the padding repeats each axis' last real entry, as a run pads its
// inputs), the sizes and strides computed by graph ops from the argument.
// Compact strides keep the source's element order (Reshape, Squeeze,
// Unsqueeze); a reduction's result keeps its source's strides and skips the
// reduced axes. An argument that names no valid shape makes the first size
// -1, outside its bound, and the runtime fails the run saying which size
// (never a result of the wrong shape).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/CompositeBuilder.h"
#include "frontends/onnx/DataDependentSizes.h"
#include "frontends/onnx/SizeMath.h"

#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace kiln::onnx_import {

namespace {

/// The most elements a result laid out at its bounds may have (2^26): a
/// rank-R view of N elements is bounded at N along every axis.
constexpr int64_t kMaxBoundElements = int64_t(1) << 26;

/// Row-major strides of `sizes` (i64[1] each).
SmallVector<Value> compactStrides(Sizes &m, ArrayRef<Value> sizes) {
  SmallVector<Value> strides(sizes.size());
  Value s = m.c(1);
  for (int64_t j = int64_t(sizes.size()) - 1; j >= 0; --j) {
    strides[j] = s;
    if (j)
      s = m.g.mul(s, sizes[j]);
  }
  return strides;
}

/// The axes `dropped` (i1[1] each) leaves, in order: output axis p is the
/// kept axis d with p kept before it (d in [p, p + k], k the number
/// dropped), of size shape[d] and the row-major stride of `layout` (the
/// buffer's shape) at d, bounded by the largest candidate.
struct KeptAxes {
  SmallVector<Value> sizes, strides;
  SmallVector<int64_t> bounds;
};
KeptAxes keptAxes(Builder &g, ArrayRef<int64_t> shape, ArrayRef<int64_t> layout,
                  ArrayRef<Value> dropped, int64_t k) {
  Sizes m{g};
  int64_t r = shape.size();
  SmallVector<int64_t> stride(r, 1);
  for (int64_t d = r - 2; d >= 0; --d)
    stride[d] = stride[d + 1] * layout[d + 1];
  KeptAxes out;
  for (int64_t p = 0; p < r - k; ++p) {
    Value size = m.c(1), step = m.c(0), before = m.c(0);
    int64_t bound = 1;
    for (int64_t d = 0; d <= std::min(p + k, r - 1); ++d) {
      Value kept = g.un<kiln::NotOp>(dropped[d]);
      if (d >= p) {
        Value here = g.bin<kiln::AndOp>(kept, g.cmp("eq", before, m.c(p)));
        size = g.where(here, m.c(shape[d]), size);
        step = g.where(here, m.c(stride[d]), step);
        bound = std::max(bound, shape[d]);
      }
      before = g.add(before, m.count(kept));
    }
    out.sizes.push_back(size);
    out.strides.push_back(step);
    out.bounds.push_back(bound);
  }
  return out;
}

/// `x` (static, non-empty) read along bounds.size() axes of run-time sizes
/// and strides into its flat buffer, as the file comment says; `invalid`
/// (an i1[1], or null) fails the run. Each axis gets a data-dependent
/// symbol named `name`[j]. Null on failure (reported).
Value gatherView(Builder &g, Value x, ArrayRef<int64_t> bounds, ArrayRef<Value> sizes,
                 ArrayRef<Value> strides, Value invalid, const std::string &name) {
  NodeContext &ctx = g.ctx;
  Sizes m{g};
  int64_t rank = bounds.size();
  int64_t cells = checkedElements(bounds);
  if (cells < 0 || cells > kMaxBoundElements) {
    (void)ctx.error(
        "the result's shape arrives at run time and, laid out at its bounds (" +
        llvm::join(llvm::map_range(bounds, [](int64_t b) { return std::to_string(b); }), "x") +
        "), would hold more than 2^26 elements: give the shape argument at compile "
        "time (--bind NAME=FILE)");
    g.failed = true;
    return {};
  }
  int64_t n = llvm::cast<RankedTensorType>(x.getType()).getNumElements();
  Value flat = g.reshape(x, {n});
  SmallVector<int64_t> ones(rank, 1);
  Value index;
  for (int64_t j = 0; j < rank; ++j) {
    Value last = m.max(g.sub(sizes[j], m.c(1)), m.c(0));
    Value pos = m.min(iotaAlong(g, bounds[j], j, rank), g.reshape(last, ones));
    Value term = g.mul(pos, g.reshape(strides[j], ones));
    index = index ? g.add(index, term) : term;
  }
  // (Sizes the run rejects may point anywhere: kept inside the buffer.)
  index = m.min(m.max(index, g.scalar(index, 0.0)), g.scalar(index, double(n - 1)));
  // (The sizes first: each op states them before the next reads them.)
  SmallVector<Value> stated(sizes.begin(), sizes.end());
  if (invalid)
    stated[0] = g.where(invalid, m.c(-1), stated[0]);
  for (Value s : stated)
    if (!g.ok({s}))
      return {};
  if (!g.ok({flat, index}))
    return {};
  Value y = g.take(ctx.create<kiln::GatherOp>(flat, index, ctx.builder.getI64IntegerAttr(0)));
  if (!g.ok({y}))
    return {};
  SmallVector<int64_t> pairs;
  for (int64_t j = 0; j < rank; ++j)
    pairs.append(
        {j, ctx.imp.addComputedSymbol(name + "[" + std::to_string(j) + "]", bounds[j], stated[j])});
  y.getDefiningOp()->setAttr(kiln::attr::kAxisSymbol, ctx.builder.getDenseI64ArrayAttr(pairs));
  return y;
}

/// The static input and argument the converters below need: a non-empty
/// data tensor without dynamic dimensions and a 1-D integer argument.
LogicalResult checkOperands(NodeContext &ctx, int64_t argument, const char *what) {
  Value x = ctx.input(0);
  if (!x || failed(requireStatic(ctx, x, "the data")) ||
      failed(requireStatic(ctx, ctx.input(argument), what)))
    return failure();
  if (ctx.inputType(0).getNumElements() == 0)
    return ctx.error(Twine(what) + " must be known at compile time when the data is empty");
  auto at = ctx.inputType(argument);
  if (at.getRank() != 1 || !at.getElementType().isSignlessInteger())
    return ctx.error(Twine(what) + " must be a 1-D integer tensor");
  return success();
}

} // namespace

LogicalResult reshapeAtRunTime(NodeContext &ctx) {
  if (failed(checkOperands(ctx, 1, "the target shape")))
    return failure();
  Builder g{ctx};
  Sizes m{g};
  auto xt = ctx.inputType(0);
  int64_t n = xt.getNumElements(), rank = ctx.inputType(1).getDimSize(0);
  if (rank == 0) {
    if (n != 1)
      return ctx.error("cannot reshape " + Twine(n) + " elements to a scalar");
    return g.result(g.reshape(ctx.input(0), {}));
  }
  bool allowZero = ctx.attrInt("allowzero", 0) != 0;
  Value t = g.cast(ctx.input(1), ctx.builder.getIntegerType(64));
  // Entries: 0 copies the input's dimension (unless allowzero), one -1
  // takes what the others leave.
  SmallVector<Value> sizes;
  Value known = m.c(1), inferred = m.c(0), invalid;
  for (int64_t j = 0; j < rank; ++j) {
    Value e = m.at(t, j);
    if (!allowZero && j < xt.getRank())
      e = g.where(g.cmp("eq", e, m.c(0)), m.c(xt.getDimSize(j)), e);
    Value infer = g.cmp("eq", e, m.c(-1));
    inferred = g.add(inferred, m.count(infer));
    // (A product kept under n + 1: entries past n are invalid anyway.)
    known = m.min(g.mul(known, g.where(infer, m.c(1), m.min(m.max(e, m.c(0)), m.c(n + 1)))),
                  m.c(n + 1));
    invalid = m.any(invalid, g.cmp("lt", e, m.c(-1)));
    sizes.push_back(e);
  }
  Value share = g.div(m.c(n), m.max(known, m.c(1)));
  for (Value &s : sizes)
    s = g.where(g.cmp("eq", s, m.c(-1)), share, s);
  Value total = m.c(1);
  for (Value s : sizes)
    total = m.min(g.mul(total, s), m.c(n + 1));
  invalid = m.any(invalid, g.cmp("gt", inferred, m.c(1)));
  invalid = m.any(invalid, m.ne(total, m.c(n)));
  SmallVector<int64_t> bounds(rank, n);
  Value y = gatherView(g, ctx.input(0), bounds, sizes, compactStrides(m, sizes), invalid,
                       resultName(ctx));
  return g.result(y);
}

LogicalResult unsqueezeAtRunTime(NodeContext &ctx) {
  if (failed(checkOperands(ctx, 1, "axes")))
    return failure();
  Builder g{ctx};
  Sizes m{g};
  auto xt = ctx.inputType(0);
  int64_t r = xt.getRank(), k = ctx.inputType(1).getDimSize(0), rank = r + k;
  Value axes = m.normalized(g.cast(ctx.input(1), ctx.builder.getIntegerType(64)), rank);
  // Output axis p is new (size 1) where the axes name it; else it is input
  // axis p - (new axes before p), one of [p - k, p].
  SmallVector<Value> sizes;
  SmallVector<int64_t> bounds;
  Value before = m.c(0);
  for (int64_t p = 0; p < rank; ++p) {
    Value isNew = m.contains(axes, p);
    Value from = g.sub(m.c(p), before);
    sizes.push_back(g.where(isNew, m.c(1), m.pick(from, xt.getShape(), p - k, p, 1)));
    int64_t bound = 1;
    for (int64_t d = std::max<int64_t>(p - k, 0); d <= std::min(p, r - 1); ++d)
      bound = std::max(bound, xt.getDimSize(d));
    bounds.push_back(bound);
    before = g.add(before, m.count(isNew));
  }
  // Every axis in range and none repeated: exactly k new axes.
  Value invalid = m.ne(before, m.c(k));
  for (int64_t j = 0; j < k; ++j) {
    Value a = m.at(axes, j);
    invalid = m.any(invalid, m.any(g.cmp("lt", a, m.c(0)), g.cmp("ge", a, m.c(rank))));
  }
  Value y = gatherView(g, ctx.input(0), bounds, sizes, compactStrides(m, sizes), invalid,
                       resultName(ctx));
  return g.result(y);
}

LogicalResult squeezeAtRunTime(NodeContext &ctx) {
  if (failed(checkOperands(ctx, 1, "axes")))
    return failure();
  Builder g{ctx};
  Sizes m{g};
  auto xt = ctx.inputType(0);
  int64_t r = xt.getRank(), k = ctx.inputType(1).getDimSize(0), rank = r - k;
  if (rank < 0)
    return ctx.error("squeezes " + Twine(k) + " axes of a rank-" + Twine(r) + " tensor");
  if (rank == 0) { // (every axis squeezed: each must be 1)
    if (xt.getNumElements() != 1)
      return ctx.error("squeezes every axis of a tensor of " + Twine(xt.getNumElements()) +
                       " elements");
    return g.result(g.reshape(ctx.input(0), {}));
  }
  Value axes = m.normalized(g.cast(ctx.input(1), ctx.builder.getIntegerType(64)), r);
  // Input axis d stays unless the axes name it (then it must be 1); the
  // kept ones fill the output in order.
  SmallVector<Value> dropped;
  Value count = m.c(0), invalid;
  for (int64_t d = 0; d < r; ++d) {
    dropped.push_back(m.contains(axes, d));
    if (xt.getDimSize(d) != 1)
      invalid = m.any(invalid, dropped.back());
    count = g.add(count, m.count(dropped.back()));
  }
  invalid = m.any(invalid, m.ne(count, m.c(k)));
  // (The squeezed axes are 1: the kept axes' strides are the result's.)
  KeptAxes kept = keptAxes(g, xt.getShape(), xt.getShape(), dropped, k);
  Value y =
      gatherView(g, ctx.input(0), kept.bounds, kept.sizes, kept.strides, invalid, resultName(ctx));
  return g.result(y);
}

LogicalResult splitAtRunTime(NodeContext &ctx, int64_t axis) {
  if (ctx.inputType(0).getDimSize(axis) == 0 && ctx.input(0)) {
    // (Sizes that add up to an empty axis are all 0: every part is empty.)
    for (int64_t i = 0, e = ctx.node.output_size(); i < e; ++i)
      ctx.setOutput(i, ctx.input(0));
    return success();
  }
  if (failed(checkOperands(ctx, 1, "split sizes")))
    return failure();
  Builder g{ctx};
  Sizes m{g};
  OpBuilder &b = ctx.builder;
  auto xt = ctx.inputType(0);
  int64_t outs = ctx.node.output_size(), n = xt.getDimSize(axis);
  if (ctx.inputType(1).getDimSize(0) != outs)
    return ctx.error("split has " + Twine(ctx.inputType(1).getDimSize(0)) + " sizes for " +
                     Twine(outs) + " outputs");
  Value split = g.cast(ctx.input(1), b.getIntegerType(64));
  SmallVector<Value> sizes;
  Value total = m.c(0), invalid;
  for (int64_t i = 0; i < outs; ++i) {
    sizes.push_back(m.at(split, i));
    invalid = m.any(invalid, g.cmp("lt", sizes.back(), m.c(0)));
    total = g.add(total, m.min(m.max(sizes.back(), m.c(0)), m.c(n)));
  }
  invalid = m.any(invalid, m.ne(total, m.c(n)));
  // Part i: positions start_i + min(t, size_i - 1) of the axis.
  Value start = m.c(0);
  for (int64_t i = 0; i < outs; ++i) {
    Value last = m.max(g.sub(sizes[i], m.c(1)), m.c(0));
    Value at = g.add(start, m.min(iotaAlong(g, n, 0, 1), last));
    at = m.min(at, m.c(n - 1));
    Value size = i == 0 ? g.where(invalid, m.c(-1), sizes[i]) : sizes[i];
    start = g.add(start, m.max(sizes[i], m.c(0)));
    if (!g.ok({at, size}))
      return failure();
    Value y = g.take(ctx.create<kiln::GatherOp>(ctx.input(0), at, b.getI64IntegerAttr(axis)));
    if (!g.ok({y}))
      return failure();
    int32_t sym = ctx.imp.addComputedSymbol(resultName(ctx, i), n, size);
    y.getDefiningOp()->setAttr(kiln::attr::kAxisSymbol, b.getDenseI64ArrayAttr({axis, sym}));
    ctx.setOutput(i, y);
  }
  return success();
}

LogicalResult cumSumAtRunTime(NodeContext &ctx) {
  Builder g{ctx};
  Sizes m{g};
  OpBuilder &b = ctx.builder;
  auto xt = ctx.inputType(0);
  int64_t rank = xt.getRank();
  if (rank == 0)
    return ctx.error("sums along an axis of a scalar");
  if (ctx.inputType(1).getNumElements() != 1 ||
      !ctx.inputType(1).getElementType().isSignlessInteger())
    return ctx.error("axis must be an integer scalar");
  Value axis = m.normalized(g.reshape(g.cast(ctx.input(1), b.getIntegerType(64)), {1}), rank);
  // An axis out of range makes an index out of range: the run fails saying
  // so, through the gather's check.
  Value valid = g.bin<kiln::AndOp>(g.cmp("ge", axis, m.c(0)), g.cmp("lt", axis, m.c(rank)));
  Value checked = g.where(valid, axis, m.c(rank));
  Value iota = iotaAlong(g, rank, 0, 1);
  if (!g.ok({iota, checked}))
    return failure();
  axis = g.take(ctx.create<kiln::GatherOp>(iota, checked, b.getI64IntegerAttr(0)));
  SmallVector<int64_t> ones(rank, 1);
  Value y;
  for (int64_t d = 0; d < rank; ++d) {
    if (!g.ok({ctx.input(0)}))
      return failure();
    Value s = g.take(ctx.createTyped<kiln::CumSumOp>(
        xt, ctx.input(0), b.getI64IntegerAttr(d), b.getBoolAttr(ctx.attrInt("exclusive", 0) != 0),
        b.getBoolAttr(ctx.attrInt("reverse", 0) != 0)));
    y = y ? g.where(g.reshape(g.cmp("eq", axis, m.c(d)), ones), s, y) : s;
  }
  return g.result(y);
}

Value dropReducedAxes(NodeContext &ctx, Value y, ArrayRef<int64_t> shape, ArrayRef<Value> chosen,
                      int64_t k, const std::string &name) {
  Builder g{ctx};
  Sizes m{g};
  auto yt = llvm::cast<RankedTensorType>(y.getType());
  int64_t r = yt.getRank(), rank = r - k;
  Value count = m.c(0);
  for (Value c : chosen)
    count = g.add(count, m.count(c));
  // Every axis in range and none repeated: exactly k chosen.
  Value invalid = m.ne(count, m.c(k));
  if (rank == 0) {
    // Every axis reduced: the one element (an invalid list reads past the
    // buffer, which the gather's check reports).
    int64_t n = yt.getNumElements();
    Value at = g.where(invalid, m.c(n), m.c(0));
    Value flat = g.reshape(y, {n});
    if (!g.ok({at, flat}))
      return {};
    Value one = g.take(g.ctx.create<kiln::GatherOp>(flat, at, g.ctx.builder.getI64IntegerAttr(0)));
    return g.reshape(one, {});
  }
  // (Sizes from the input's shape, strides from y's: an empty input's
  // empty axes are 1 in y.)
  KeptAxes kept = keptAxes(g, shape, yt.getShape(), chosen, k);
  return gatherView(g, y, kept.bounds, kept.sizes, kept.strides, invalid, name);
}

} // namespace kiln::onnx_import
