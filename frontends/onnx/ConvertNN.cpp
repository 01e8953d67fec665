//===- ConvertNN.cpp - Conv Gemm MatMul pooling BatchNorm Softmax ----------===//
#include "frontends/onnx/CompositeBuilder.h"
#include "frontends/onnx/ImporterImpl.h"
#include "frontends/onnx/NodeContext.h"

#include <limits>

using namespace mlir;
namespace kiln::onnx_import {
namespace {


/// `v` with a unit dimension inserted at 2: 1-D windows run as 2-D windows
/// of height 1.
FailureOr<Value> insertUnitDim(NodeContext &ctx, Value v) {
  auto t = llvm::cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(t.getShape());
  shape.insert(shape.begin() + 2, 1);
  return ctx.createTyped<kiln::ReshapeOp>(RankedTensorType::get(shape, t.getElementType()),
                                          v);
}

/// 1-D window attributes as 2-D ones (height 1): [v] -> [1, v]; pads
/// [b, e] -> [0, b, 0, e].
std::vector<int64_t> lift(ArrayRef<int64_t> v, bool isPads) {
  if (isPads)
    return {0, v[0], 0, v[1]};
  return {1, v[0]};
}

/// A 2-D result with the unit dimension dropped again if the node was 1-D.
FailureOr<Value> dropUnitDim(NodeContext &ctx, FailureOr<Value> v, bool oneD) {
  if (failed(v) || !oneD)
    return v;
  auto t = llvm::cast<RankedTensorType>(v->getType());
  SmallVector<int64_t> shape(t.getShape());
  shape.erase(shape.begin() + 2);
  return ctx.createTyped<kiln::ReshapeOp>(RankedTensorType::get(shape, t.getElementType()), *v);
}

/// The taps of window axis `axis` side by side: [.., n, ..] -> [.., out*K, ..]
/// with position o*K + k reading x[o*s + k*d - pb] (`fill` where that is
/// outside the input: zero for sums, -inf for maxima).
Value gatherTaps(Builder &g, Value x, int64_t axis, int64_t out, int64_t k, int64_t s,
                 int64_t d, int64_t pb, double fill) {
  if (!g.ok({x}))
    return Value();
  OpBuilder &b = g.ctx.builder;
  auto shape = g.shape(x);
  int64_t n = shape[axis], rank = shape.size();
  if (n == 0) {
    (void)g.ctx.error("cannot slide a window over the empty dimension " + Twine(axis));
    g.failed = true;
    return Value();
  }
  HostTensor idx{b.getIntegerType(64), {out * k}, {}, {}};
  HostTensor mask{b.getI1Type(), {}, {}, {}};
  mask.shape.assign(rank, 1);
  mask.shape[axis] = out * k;
  bool any = false;
  for (int64_t o = 0; o < out; ++o)
    for (int64_t t = 0; t < k; ++t) {
      int64_t p = o * s + t * d - pb;
      bool outside = p < 0 || p >= n;
      any |= outside;
      idx.values.push_back(static_cast<double>(std::clamp<int64_t>(p, 0, n - 1)));
      mask.values.push_back(outside);
    }
  bool identity = !any && out * k == n;
  for (int64_t j = 0; identity && j < n; ++j)
    identity = idx.values[j] == static_cast<double>(j);
  if (identity) // non-overlapping windows tiling the axis: a reshape suffices
    return x;
  std::string name = g.ctx.node.name() + ".taps" + std::to_string(axis);
  Value iv = Importer::materialize(b, idx, name);
  Value y = g.take(g.ctx.create<kiln::GatherOp>(x, iv, b.getI64IntegerAttr(axis)));
  if (any)
    y = g.where(Importer::materialize(b, mask, name + ".outside"), g.scalar(y, fill), y);
  return y;
}

} // namespace

FailureOr<std::vector<int64_t>> spatialInts(NodeContext &ctx, StringRef name, size_t n,
                                            int64_t dflt) {
  auto v = ctx.attrInts(name).value_or(std::vector<int64_t>(n, dflt));
  if (v.size() != n)
    return ctx.error("expects " + Twine(n) + " values in '" + name + "', got " +
                     Twine(v.size()));
  return v;
}

/// 3-D convolution as one 2-D convolution: the depth taps gathered into
/// the channels (per group: [kD, C/G]), batch and output depth merged.
/// `pads` is ONNX's [d, h, w begins, d, h, w ends].
FailureOr<Value> buildConv3d(NodeContext &ctx, Value x, Value w, Value bias,
                             ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                             ArrayRef<int64_t> dil, int64_t group) {
  Builder g{ctx};
  auto xs = g.shape(x), ws = g.shape(w);
  int64_t N = xs[0], C = xs[1], D = xs[2], H = xs[3], W = xs[4];
  int64_t O = ws[0], Cg = ws[1], kD = ws[2];
  if (group >= 1 && C % group == 0 && ctx.requireSize(w, 1, C / group))
    return failure(); // the import restarts with the symbol fixed
  if (group < 1 || C % group || C / group != Cg || O % group)
    return ctx.error("the weight has " + Twine(Cg) + " input channels per group; the input "
                     "has " + Twine(C) + " channels in " + Twine(group) + " group(s)");
  for (size_t i = 0; i < 3; ++i)
    if (strides[i] < 1 || dil[i] < 1)
      return ctx.error("strides and dilations must be positive");
  int64_t Do = kiln::windowOut(D, kD, strides[0], dil[0], pads[0], pads[3], false);
  if (Do < 1)
    return ctx.error("the kernel's depth does not fit the padded input");
  Value t = gatherTaps(g, x, 2, Do, kD, strides[0], dil[0], pads[0], 0.0);
  t = g.reshape(t, {N, group, Cg, Do, kD, H, W});
  t = g.transpose(t, {0, 3, 1, 4, 2, 5, 6});
  t = g.reshape(t, {N * Do, group * kD * Cg, H, W});
  Value w2 = g.reshape(g.transpose(w, {0, 2, 1, 3, 4}), {O, kD * Cg, ws[3], ws[4]});
  if (!g.ok({t, w2}))
    return failure();
  OpBuilder &b = ctx.builder;
  Value y = g.take(ctx.create<kiln::ConvOp>(
      t, w2, bias, b.getDenseI64ArrayAttr({strides[1], strides[2]}),
      b.getDenseI64ArrayAttr({pads[1], pads[2], pads[4], pads[5]}),
      b.getDenseI64ArrayAttr({dil[1], dil[2]}), b.getI64IntegerAttr(group)));
  if (!g.ok({y}))
    return failure();
  auto ys = g.shape(y);
  y = g.transpose(g.reshape(y, {N, Do, O, ys[2], ys[3]}), {0, 2, 1, 3, 4});
  if (!g.ok({y}))
    return failure();
  return y;
}

/// Conv of `x` with weight `w` and optional `bias` under the node's Conv
/// attributes (kernel_shape, strides, dilations, pads/auto_pad, group):
/// 1-D, 2-D and 3-D.
FailureOr<Value> buildConv(NodeContext &ctx, Value x, Value wt, Value bias) {
  auto in = llvm::cast<RankedTensorType>(x.getType());
  auto w = llvm::cast<RankedTensorType>(wt.getType());
  if (in.getRank() == 5 && w.getRank() == 5) {
    std::vector<int64_t> kernel(w.getShape().begin() + 2, w.getShape().end());
    if (auto k = ctx.attrInts("kernel_shape"); k && *k != kernel)
      return ctx.error("kernel_shape does not match the weight's shape");
    auto strides = spatialInts(ctx, "strides", 3);
    auto dil = spatialInts(ctx, "dilations", 3);
    if (failed(strides) || failed(dil))
      return failure();
    auto pads = windowPads(ctx, in.getShape().drop_front(2), kernel, *strides, *dil);
    if (failed(pads))
      return failure();
    return buildConv3d(ctx, x, wt, bias, *strides, *pads, *dil, ctx.attrInt("group", 1));
  }
  if ((in.getRank() != 4 && in.getRank() != 3) || w.getRank() != in.getRank())
    return ctx.error("only 1-D, 2-D and 3-D convolution (rank-3, 4 or 5 input and "
                     "weight) is supported; the input has rank " +
                     Twine(in.getRank()));
  size_t spatial = in.getRank() - 2;
  std::vector<int64_t> kernel(w.getShape().begin() + 2, w.getShape().end());
  if (auto k = ctx.attrInts("kernel_shape"); k && *k != kernel)
    return ctx.error("kernel_shape does not match the weight's shape");
  auto strides = spatialInts(ctx, "strides", spatial);
  auto dil = spatialInts(ctx, "dilations", spatial);
  if (failed(strides) || failed(dil))
    return failure();
  auto pads = windowPads(ctx, in.getShape().drop_front(2), kernel, *strides, *dil);
  if (failed(pads))
    return failure();
  bool oneD = spatial == 1;
  if (oneD) {
    auto x4 = insertUnitDim(ctx, x), w4 = insertUnitDim(ctx, wt);
    if (failed(x4) || failed(w4))
      return failure();
    x = *x4;
    wt = *w4;
    *strides = lift(*strides, false);
    *dil = lift(*dil, false);
    *pads = lift(*pads, true);
  }
  OpBuilder &b = ctx.builder;
  return dropUnitDim(ctx,
                     ctx.create<kiln::ConvOp>(x, wt, bias, b.getDenseI64ArrayAttr(*strides),
                                              b.getDenseI64ArrayAttr(*pads),
                                              b.getDenseI64ArrayAttr(*dil),
                                              b.getI64IntegerAttr(ctx.attrInt("group", 1))),
                     oneD);
}

namespace {

LogicalResult convertConv(NodeContext &ctx) {
  return ctx.setResult(buildConv(ctx, ctx.input(0), ctx.input(1), ctx.input(2)));
}

LogicalResult convertGemm(NodeContext &ctx) {
  // Before opset 7, broadcast=0 required C to be M x N already; numpy
  // broadcasting (what kiln.gemm does) agrees on those shapes.
  OpBuilder &b = ctx.builder;
  Value c = ctx.input(2);
  bool tA = ctx.attrInt("transA", 0) != 0, tB = ctx.attrInt("transB", 0) != 0;
  if (c && !ctx.imp.symbols.empty()) {
    // A dynamic dimension of C broadcast against a static one of the
    // result: 1 or that size (pinned); a result of 1 fixes it to 1.
    auto at = ctx.inputType(0), bt = ctx.inputType(1), ct = ctx.inputType(2);
    if (at.getRank() == 2 && bt.getRank() == 2 && ct.getRank() <= 2) {
      Value a = ctx.input(0), bv = ctx.input(1);
      int64_t mAxis = tA ? 1 : 0, nAxis = tB ? 0 : 1;
      std::pair<Value, int64_t> res[2] = {{a, mAxis}, {bv, nAxis}};
      for (int64_t d = 0; d < ct.getRank(); ++d) {
        auto [src, axis] = res[d + 2 - ct.getRank()];
        bool cSym = ctx.imp.symbols.of(c)[d] >= 0;
        if (ctx.imp.symbols.of(src)[axis] >= 0) {
          // A static size of C fixes the result's symbol.
          if (!cSym && ct.getDimSize(d) > 1 && ctx.requireSize(src, axis, ct.getDimSize(d)))
            return failure();
          // Another symbol on C's axis: C broadcasts there (its size is 1;
          // the runtime refuses others). The same symbol: the sizes agree.
          if (cSym && ctx.imp.symbols.of(c)[d] != ctx.imp.symbols.of(src)[axis] &&
              ctx.requireSize(c, d, 1))
            return failure();
          continue;
        }
        if (!cSym)
          continue;
        int64_t k = llvm::cast<RankedTensorType>(src.getType()).getDimSize(axis);
        if (k == 1 ? ctx.requireSize(c, d, 1) : false)
          return failure(); // the import restarts with the symbol fixed
        if (k > 1)
          c = ctx.pinAxis(c, d, k);
      }
    }
  }
  return ctx.setResult(ctx.create<kiln::GemmOp>(
                      ctx.input(0), ctx.input(1), c,
                      b.getF32FloatAttr(ctx.attrFloat("alpha", 1.0f)),
                      b.getF32FloatAttr(ctx.attrFloat("beta", 1.0f)),
                      b.getBoolAttr(ctx.attrInt("transA", 0) != 0),
                      b.getBoolAttr(ctx.attrInt("transB", 0) != 0)));
}

LogicalResult convertMatMul(NodeContext &ctx) {
  return ctx.setResult(ctx.create<kiln::MatMulOp>(ctx.input(0), ctx.input(1)));
}

/// A max or average pool of `x` (the node's input, or a value computed from
/// it with its shape) with the node's window attributes; 1-D pools run as
/// 2-D ones of height 1.
/// 3-D pooling, separably: per spatial axis the window's taps gathered side
/// by side and reduced (max: -inf outside the input; average: sums divided
/// by the window's count, the padding counted or not as ONNX's reference
/// does: never past the end padding).
FailureOr<Value> buildPool3d(NodeContext &ctx, Value x, bool isMax, bool countIncludePad,
                             ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                             ArrayRef<int64_t> pads, ArrayRef<int64_t> dil, bool ceil) {
  Builder g{ctx};
  auto xs = g.shape(x);
  std::vector<int64_t> outShape{1, 1};
  std::vector<std::vector<double>> counts(3);
  const double ninf = -std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < 3; ++i) {
    int64_t n = xs[2 + i], k = kernel[i], s = strides[i], d = dil[i];
    if (k < 1 || s < 1 || d < 1)
      return ctx.error("kernel sizes, strides and dilations must be positive");
    int64_t out = kiln::windowOut(n, k, s, d, pads[i], pads[3 + i], ceil);
    if (out < 1)
      return ctx.error("the window does not fit the padded input along axis " + Twine(2 + i));
    outShape.push_back(out);
    for (int64_t o = 0; o < out; ++o) {
      int64_t c = 0;
      for (int64_t t = 0; t < k; ++t) {
        int64_t p = o * s + t * d - pads[i];
        c += countIncludePad ? p < n + pads[3 + i] : (p >= 0 && p < n);
      }
      counts[i].push_back(static_cast<double>(c));
    }
    Value t = gatherTaps(g, x, 2 + i, out, k, s, d, pads[i], isMax ? ninf : 0.0);
    if (!g.ok({t}))
      return failure();
    SmallVector<int64_t> split(g.shape(t));
    split[2 + i] = out;
    split.insert(split.begin() + 3 + i, k);
    t = g.reshape(t, split);
    x = isMax ? g.reduce<kiln::ReduceMaxOp>(t, {3 + i}, false)
              : g.reduce<kiln::ReduceSumOp>(t, {3 + i}, false);
  }
  if (!isMax) {
    HostTensor div{g.elem(x), outShape, {}, {}};
    for (double a : counts[0])
      for (double b : counts[1])
        for (double c : counts[2])
          div.values.push_back(a * b * c);
    x = g.div(x, Importer::materialize(ctx.builder, div, ctx.node.name() + ".count"));
  }
  if (!g.ok({x}))
    return failure();
  return x;
}

/// MaxPool's Indices output for a 2-D pool of x [N, C, H, W] (1-D pools
/// lifted to height 1): per window the first maximal tap in row-major window
/// order (the taps gathered side by side, -inf outside the input, then an
/// argmax), as the flat index into x: ((n * C + c) * H + h) * W + w, or with
/// storage_order 1 (column-major) (n * C + c) * H * W + h + w * H.
FailureOr<Value> buildMaxPoolIndices(NodeContext &ctx, Value x, ArrayRef<int64_t> kernel,
                                     ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                                     ArrayRef<int64_t> dil, bool ceil, bool columnMajor) {
  Builder g{ctx};
  auto xs = g.shape(x);
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  int64_t kh = kernel[0], kw = kernel[1];
  int64_t oh = kiln::windowOut(H, kh, strides[0], dil[0], pads[0], pads[2], ceil);
  int64_t ow = kiln::windowOut(W, kw, strides[1], dil[1], pads[1], pads[3], ceil);
  if (oh < 1 || ow < 1)
    return ctx.error("the window does not fit the padded input");
  const double ninf = -std::numeric_limits<double>::infinity();
  Value t = gatherTaps(g, x, 2, oh, kh, strides[0], dil[0], pads[0], ninf);
  t = gatherTaps(g, t, 3, ow, kw, strides[1], dil[1], pads[1], ninf);
  t = g.reshape(t, {N, C, oh, kh, ow, kw});
  t = g.reshape(g.transpose(t, {0, 1, 2, 4, 3, 5}), {N, C, oh, ow, kh * kw});
  if (!g.ok({t}))
    return failure();
  OpBuilder &b = ctx.builder;
  Value tap = g.take(ctx.create<kiln::ArgReduceOp>(t, b.getI64IntegerAttr(4), b.getBoolAttr(false),
                                                   b.getBoolAttr(true), b.getBoolAttr(false)));
  if (!g.ok({tap}))
    return failure();
  // h = oh_i * sh - ph + (tap / kw) * dh, w = ow_i * sw - pw + (tap % kw) * dw.
  Type i64 = b.getIntegerType(64);
  std::string name = ctx.node.name() + ".idx";
  HostTensor hStart{i64, {oh, 1}, {}, {}}, wStart{i64, {ow}, {}, {}};
  for (int64_t i = 0; i < oh; ++i)
    hStart.values.push_back(static_cast<double>(i * strides[0] - pads[0]));
  for (int64_t i = 0; i < ow; ++i)
    wStart.values.push_back(static_cast<double>(i * strides[1] - pads[1]));
  Value n = g.batchIota(x);
  HostTensor channel{i64, {1, C, 1, 1}, {}, {}};
  for (int64_t c = 0; c < C; ++c)
    channel.values.push_back(static_cast<double>(c * H * W));
  Value base = g.add(g.mul(n, g.scalar(n, static_cast<double>(C * H * W))),
                     Importer::materialize(b, channel, name + ".channel"));
  Value kwv = g.scalar(tap, static_cast<double>(kw));
  Value row = g.div(tap, kwv), col = g.sub(tap, g.mul(row, kwv)); // (tap >= 0)
  Value h = g.add(Importer::materialize(b, hStart, name + ".h"),
                  g.mul(row, g.scalar(tap, static_cast<double>(dil[0]))));
  Value w = g.add(Importer::materialize(b, wStart, name + ".w"),
                  g.mul(col, g.scalar(tap, static_cast<double>(dil[1]))));
  Value flat = columnMajor ? g.add(h, g.mul(w, g.scalar(w, static_cast<double>(H))))
                           : g.add(g.mul(h, g.scalar(h, static_cast<double>(W))), w);
  Value idx = g.add(flat, base);
  if (!g.ok({idx}))
    return failure();
  return idx;
}

template <typename OpTy>
FailureOr<Value> buildPool(NodeContext &ctx, Value x, bool countIncludePad) {
  auto in = llvm::cast<RankedTensorType>(x.getType());
  if (in.getRank() == 5) {
    auto kernel = ctx.attrInts("kernel_shape");
    if (!kernel || kernel->size() != 3)
      return ctx.error("expects a kernel_shape of 3 values");
    auto strides = spatialInts(ctx, "strides", 3);
    auto dil = spatialInts(ctx, "dilations", 3);
    if (failed(strides) || failed(dil))
      return failure();
    auto pads = windowPads(ctx, in.getShape().drop_front(2), *kernel, *strides, *dil);
    if (failed(pads))
      return failure();
    if (ctx.node.output_size() > 1 && !ctx.node.output(1).empty())
      return ctx.error("the Indices output of 3-D max pooling is not supported");
    return buildPool3d(ctx, x, std::is_same_v<OpTy, kiln::MaxPoolOp>, countIncludePad, *kernel,
                       *strides, *pads, *dil, ctx.attrInt("ceil_mode", 0) != 0);
  }
  if (in.getRank() != 4 && in.getRank() != 3)
    return ctx.error("only 1-D, 2-D and 3-D pooling (a rank-3, 4 or 5 input) is "
                     "supported; the input has rank " + Twine(in.getRank()));
  size_t spatial = in.getRank() - 2;
  auto kernel = ctx.attrInts("kernel_shape");
  if (!kernel || kernel->size() != spatial)
    return ctx.error("expects a kernel_shape of " + Twine(spatial) + " values");
  auto strides = spatialInts(ctx, "strides", spatial);
  auto dil = spatialInts(ctx, "dilations", spatial);
  if (failed(strides) || failed(dil))
    return failure();
  auto pads = windowPads(ctx, in.getShape().drop_front(2), *kernel, *strides, *dil);
  if (failed(pads))
    return failure();
  bool oneD = spatial == 1;
  if (oneD) {
    auto x4 = insertUnitDim(ctx, x);
    if (failed(x4))
      return failure();
    x = *x4;
    *kernel = lift(*kernel, false);
    *strides = lift(*strides, false);
    *dil = lift(*dil, false);
    *pads = lift(*pads, true);
  }
  OpBuilder &b = ctx.builder;
  bool ceil = ctx.attrInt("ceil_mode", 0) != 0;
  if (std::is_same_v<OpTy, kiln::MaxPoolOp> && ctx.node.output_size() > 1 &&
      !ctx.node.output(1).empty()) {
    auto idx = dropUnitDim(ctx,
                           buildMaxPoolIndices(ctx, x, *kernel, *strides, *pads, *dil, ceil,
                                               ctx.attrInt("storage_order", 0) != 0),
                           oneD);
    if (failed(idx))
      return failure();
    ctx.setOutput(1, *idx);
  }
  auto y = ctx.create<OpTy>(x, b.getDenseI64ArrayAttr(*kernel), b.getDenseI64ArrayAttr(*strides),
                            b.getDenseI64ArrayAttr(*pads), b.getDenseI64ArrayAttr(*dil),
                            b.getBoolAttr(ceil), b.getBoolAttr(countIncludePad));
  return dropUnitDim(ctx, y, oneD);
}

template <typename OpTy> LogicalResult convertPool(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  Type et = in.getElementType();
  if (std::is_same_v<OpTy, kiln::MaxPoolOp> && et.isInteger()) {
    // 8- and 16-bit integers through f32, which holds them exactly.
    if (et.getIntOrFloatBitWidth() > 16)
      return ctx.error("max-pools integer tensors of 8 or 16 bits, not " +
                       Twine(et.getIntOrFloatBitWidth()));
    Builder g{ctx};
    Value x = g.cast(ctx.input(0), ctx.builder.getF32Type());
    if (!g.ok({x}))
      return failure();
    Value y = g.take(buildPool<OpTy>(ctx, x, false));
    return g.result(g.cast(y, et));
  }
  return ctx.setResult(
      buildPool<OpTy>(ctx, ctx.input(0), ctx.attrInt("count_include_pad", 0) != 0));
}

/// LpPool: (sum over the window of |x|^p)^(1/p), the sum as an average pool
/// that counts the (zero) padding, times the window size.
LogicalResult convertLpPool(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  if (!llvm::isa<FloatType>(in.getElementType()))
    return ctx.error("expects a floating-point input");
  int64_t p = ctx.attrInt("p", 2);
  if (p <= 0)
    return ctx.error("p must be positive");
  auto kernel = ctx.attrInts("kernel_shape");
  if (!kernel)
    return ctx.error("expects a kernel_shape");
  int64_t taps = 1;
  for (int64_t k : *kernel)
    taps *= k;
  auto scalar = [&](Value like, double v) {
    HostTensor h{llvm::cast<RankedTensorType>(like.getType()).getElementType(), {}, {v}, {}};
    return Importer::materialize(ctx.builder, h, ctx.node.name() + ".c");
  };
  Value x = ctx.input(0);
  auto ax = ctx.createTyped<kiln::AbsOp>(x.getType(), x);
  if (failed(ax))
    return failure();
  auto xp = p == 1 ? ax : ctx.create<kiln::PowOp>(*ax, scalar(x, static_cast<double>(p)));
  if (failed(xp))
    return failure();
  auto avg = buildPool<kiln::AvgPoolOp>(ctx, *xp, true);
  if (failed(avg))
    return failure();
  auto sum = ctx.create<kiln::MulOp>(*avg, scalar(*avg, static_cast<double>(taps)));
  if (failed(sum) || p == 1)
    return ctx.setResult(sum);
  return ctx.setResult(ctx.create<kiln::PowOp>(*sum, scalar(*sum, 1.0 / p)));
}

LogicalResult convertGlobalAvgPool(NodeContext &ctx) {
  return ctx.setResult(ctx.create<kiln::GlobalAvgPoolOp>(ctx.input(0)));
}

/// BatchNormalization with training_mode = 1 (opset 14+): normalized by the
/// batch's own statistics (mean and biased variance over every axis but
/// the channels); outputs 1 and 2 are the running mean and variance
/// updated with them: running * momentum + batch * (1 - momentum).
LogicalResult convertBatchNormTraining(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  if (in.getRank() < 2 || !llvm::isa<FloatType>(in.getElementType()))
    return ctx.error("expects a floating-point input of rank 2 or more (N, C, ...)");
  int64_t C = in.getDimSize(1);
  for (size_t i = 1; i <= 4; ++i) {
    if (ctx.requireSize(ctx.input(i), 0, C))
      return failure(); // the import restarts with the symbol fixed
    auto t = ctx.inputType(i);
    if (t.getRank() != 1 || t.getDimSize(0) != C)
      return ctx.error("scale, B, input_mean and input_var must have one entry per channel (" +
                       Twine(C) + ")");
  }
  Builder g{ctx};
  Value x = ctx.input(0);
  SmallVector<int64_t> axes{0};
  for (int64_t d = 2; d < in.getRank(); ++d)
    axes.push_back(d);
  SmallVector<int64_t> perChannel(in.getRank(), 1);
  perChannel[1] = C;
  Value mean = g.reduce<kiln::ReduceMeanOp>(x, axes, true);
  Value d = g.sub(x, mean);
  Value var = g.reduce<kiln::ReduceMeanOp>(g.mul(d, d), axes, true);
  double eps = ctx.attrFloat("epsilon", 1e-5f), momentum = ctx.attrFloat("momentum", 0.9f);
  Value y = g.div(d, g.un<kiln::SqrtOp>(g.add(var, g.scalar(var, eps))));
  y = g.add(g.mul(y, g.reshape(ctx.input(1), perChannel)), g.reshape(ctx.input(2), perChannel));
  auto running = [&](size_t i, Value batch) {
    Value r = ctx.input(i);
    return g.add(g.mul(r, g.scalar(r, momentum)),
                 g.mul(g.reshape(batch, {C}), g.scalar(r, 1.0 - momentum)));
  };
  Value rm = running(3, mean), rv = running(4, var);
  if (!g.ok({y, rm, rv}))
    return failure();
  ctx.setOutput(0, y);
  if (ctx.node.output_size() > 1)
    ctx.setOutput(1, rm);
  if (ctx.node.output_size() > 2)
    ctx.setOutput(2, rv);
  return success();
}

LogicalResult convertBatchNorm(NodeContext &ctx) {
  if (ctx.attrInt("training_mode", 0) != 0) {
    if (ctx.opset < 14)
      return ctx.error("training_mode needs opset 14 or later");
    return convertBatchNormTraining(ctx);
  }
  if (ctx.opset < 9 && ctx.attrInt("spatial", 1) == 0)
    return ctx.error("spatial=0 is not supported");
  return ctx.setResult(ctx.create<kiln::BatchNormOp>(
                      ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3),
                      ctx.input(4),
                      ctx.builder.getF32FloatAttr(ctx.attrFloat("epsilon", 1e-5f))));
}

LogicalResult convertSoftmax(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  int64_t rank = in.getRank();
  auto axis = normalizeAxis(ctx, ctx.attrInt("axis", ctx.opset < 13 ? 1 : -1),
                            rank);
  if (failed(axis))
    return failure();
  OpBuilder &b = ctx.builder;
  Value x = ctx.input(0);
  if (ctx.opset >= 13 || *axis == rank - 1)
    return ctx.setResult(ctx.createTyped<kiln::SoftmaxOp>(
                        in, x, b.getI64IntegerAttr(*axis)));
  // Before opset 13: softmax of the input coerced to 2-D at `axis`.
  int64_t rows = 1, cols = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < *axis ? rows : cols) *= in.getDimSize(i);
  auto flat = RankedTensorType::get({rows, cols}, in.getElementType());
  auto r = ctx.createTyped<kiln::ReshapeOp>(flat, x);
  if (failed(r))
    return failure();
  auto s = ctx.createTyped<kiln::SoftmaxOp>(flat, *r, b.getI64IntegerAttr(1));
  if (failed(s))
    return failure();
  return ctx.setResult(ctx.createTyped<kiln::ReshapeOp>(in, *s));
}

} // namespace

/// LRN: x / (bias + alpha / size * sum of x^2 over the channel window)^beta,
/// the window [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped to the
/// channels; its taps gathered side by side along the channels and summed.
LogicalResult convertLRN(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  if (in.getRank() < 3 || !llvm::isa<FloatType>(in.getElementType()))
    return ctx.error("expects a floating-point input of rank 3 or more (N, C, ...)");
  int64_t size = ctx.attrInt("size", 0);
  if (size < 1)
    return ctx.error("size must be positive");
  double alpha = ctx.attrFloat("alpha", 1e-4f), beta = ctx.attrFloat("beta", 0.75f),
         bias = ctx.attrFloat("bias", 1.0f);
  int64_t C = in.getDimSize(1), before = (size - 1) / 2;
  Builder g{ctx};
  Value x = ctx.input(0);
  Value sq = g.mul(x, x);
  Value taps = gatherTaps(g, sq, 1, C, size, 1, 1, before, 0.0);
  if (!g.ok({taps}))
    return failure();
  SmallVector<int64_t> split(in.getShape());
  split.insert(split.begin() + 2, size);
  Value sum = g.reduce<kiln::ReduceSumOp>(g.reshape(taps, split), {2}, false);
  Value base = g.add(g.mul(sum, g.scalar(x, alpha / static_cast<double>(size))), g.scalar(x, bias));
  return g.result(g.div(x, g.bin<kiln::PowOp>(base, g.scalar(x, beta))));
}

void registerNNConverters(llvm::StringMap<Converter> &t) {
  t["LRN"] = convertLRN;
  t["Conv"] = convertConv;
  t["Gemm"] = convertGemm;
  t["MatMul"] = convertMatMul;
  t["MaxPool"] = convertPool<kiln::MaxPoolOp>;
  t["AveragePool"] = convertPool<kiln::AvgPoolOp>;
  t["LpPool"] = convertLpPool;
  t["GlobalAveragePool"] = convertGlobalAvgPool;
  t["BatchNormalization"] = convertBatchNorm;
  t["Softmax"] = convertSoftmax;
}

} // namespace kiln::onnx_import
