//===- ConvertAttention.cpp - the opset-23 Attention op ---------------------===//
//
// ONNX's Attention as the ops of its reference implementation: 3-D inputs
// split into heads, Q and K each scaled by sqrt(scale), the key/value cache
// concatenated (present_key/value), the bias from the causal rule (aligned
// after the past), a bool or float mask (padded with "masked" up to the
// total length) and the non-padded kv lengths, grouped-query heads repeated,
// softcap, softmax (in softmax_precision), the product with V, and the
// qk_matmul_output selected by its mode. kiln-recognize-patterns may then
// fold the chain into kiln.attention where it matches.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/CompositeBuilder.h"

#include <cmath>
#include <limits>

using namespace mlir;
namespace kiln::onnx_import {
namespace {

/// (B, S, H*D) -> (B, H, S, D).
Value splitHeads(Builder &g, Value x, int64_t heads) {
  if (!g.ok({x}))
    return {};
  auto s = g.shape(x);
  if (heads <= 0 || s[2] % heads != 0) {
    (void)g.ctx.error("a 3-D input's hidden size " + Twine(s[2]) +
                      " does not split into q_num_heads/kv_num_heads heads");
    g.failed = true;
    return {};
  }
  return g.transpose(g.reshape(x, {s[0], s[1], heads, s[2] / heads}), {0, 2, 1, 3});
}

/// Each of x's heads (axis 1) repeated `r` times in place: [h0, h0, h1, h1, ...].
Value repeatHeads(Builder &g, Value x, int64_t r) {
  if (r == 1 || !g.ok({x}))
    return x;
  auto s = g.shape(x);
  SmallVector<int64_t> s5{s[0], s[1], 1, s[2], s[3]}, e5{s[0], s[1], r, s[2], s[3]};
  return g.reshape(g.expand(g.reshape(x, s5), e5), {s[0], s[1] * r, s[2], s[3]});
}

LogicalResult convertAttention(NodeContext &ctx) {
  auto qT = ctx.inputType(0);
  int64_t rank = qT.getRank();
  if ((rank != 3 && rank != 4) || ctx.inputType(1).getRank() != rank ||
      ctx.inputType(2).getRank() != rank)
    return ctx.error("expects Q, K and V all 3-D or all 4-D");
  if (!llvm::isa<FloatType>(qT.getElementType()))
    return ctx.error("expects floating-point Q, K and V");
  Builder g{ctx};
  OpBuilder &b = ctx.builder;
  Value q = ctx.input(0), k = ctx.input(1), v = ctx.input(2);
  int64_t qHeads = ctx.attrInt("q_num_heads", 0), kvHeads = ctx.attrInt("kv_num_heads", 0);
  if (rank == 3) {
    q = splitHeads(g, q, qHeads);
    k = splitHeads(g, k, kvHeads);
    v = splitHeads(g, v, kvHeads);
  }
  if (!g.ok({q, k, v}))
    return failure();
  auto qs = g.shape(q);
  int64_t batch = qs[0], qSeq = qs[2];
  qHeads = qs[1];
  kvHeads = g.shape(k)[1];
  double scale = 1.0 / std::sqrt(static_cast<double>(qs[3]));
  if (ctx.attr("scale"))
    scale = ctx.attrFloat("scale", 1.0f);
  Value sq = g.scalar(q, std::sqrt(scale));
  q = g.mul(q, sq);

  // The key/value cache.
  int64_t past = 0;
  auto cache = [&](Value x, size_t i) -> Value {
    if (!ctx.hasInput(i) || !g.ok({x}))
      return x;
    return g.take(ctx.create<kiln::ConcatOp>(ValueRange{ctx.input(i), x},
                                             b.getI64IntegerAttr(2)));
  };
  if (ctx.hasInput(4) != ctx.hasInput(5))
    return ctx.error("expects past_key and past_value together");
  if (ctx.hasInput(4)) {
    if (ctx.inputType(4).getRank() != 4 || ctx.inputType(5).getRank() != 4)
      return ctx.error("expects 4-D past_key and past_value");
    past = ctx.inputType(4).getDimSize(2);
  }
  Value presentK = cache(k, 4), presentV = cache(v, 5);
  if (!g.ok({presentK, presentV}))
    return failure();
  int64_t total = g.shape(presentK)[2];
  k = g.mul(presentK, sq);
  v = presentV;

  // The additive bias: mask (bool: 0 / -inf; padded with "masked" up to
  // the total length), the causal rule, the non-padded kv lengths.
  const double ninf = -std::numeric_limits<double>::infinity();
  Type et = qT.getElementType();
  Value bias;
  if (ctx.hasInput(3)) {
    Value m = ctx.input(3);
    auto ms = g.shape(m);
    bool isBool = g.elem(m).isInteger(1);
    if (!isBool && g.elem(m) != et)
      m = g.cast(m, et);
    if (!ms.empty() && ms.back() < total) {
      SmallVector<int64_t> padShape(ms.begin(), ms.end());
      padShape.back() = total - ms.back();
      Value fill = isBool ? g.scalar(m, 0.0) : g.scalar(m, ninf);
      Value pad = g.expand(fill, padShape);
      m = g.ok({m, pad}) ? g.take(ctx.create<kiln::ConcatOp>(
                               ValueRange{m, pad}, b.getI64IntegerAttr(ms.size() - 1)))
                         : Value();
    }
    bias = isBool ? g.where(m, g.scalar(q, 0.0), g.scalar(q, ninf)) : m;
  }
  if (ctx.attrInt("is_causal", 0) != 0) {
    HostTensor h;
    h.elementType = et;
    h.shape = {qSeq, total};
    for (int64_t i = 0; i < qSeq; ++i)
      for (int64_t j = 0; j < total; ++j)
        h.values.push_back(j >= past && j - past > i ? ninf : 0.0);
    Value causal = Importer::materialize(b, h, ctx.node.name() + ".causal");
    bias = bias ? g.add(bias, causal) : causal;
  }
  if (ctx.hasInput(6)) { // nonpad_kv_seqlen (B): keys at or past it are padding
    HostTensor iota;
    iota.elementType = b.getIntegerType(64);
    iota.shape = {1, 1, 1, total};
    for (int64_t j = 0; j < total; ++j)
      iota.values.push_back(static_cast<double>(j));
    Value lens = g.reshape(g.cast(ctx.input(6), b.getIntegerType(64)), {batch, 1, 1, 1});
    Value keep = g.cmp("lt", Importer::materialize(b, iota, ctx.node.name() + ".iota"), lens);
    Value pad = g.where(keep, g.scalar(q, 0.0), g.scalar(q, ninf));
    bias = bias ? g.add(bias, pad) : pad;
  }

  // Grouped-query attention: each kv head serves q_heads / kv_heads heads.
  if (qHeads != kvHeads) {
    if (kvHeads <= 0 || qHeads % kvHeads != 0)
      return ctx.error("q heads (" + Twine(qHeads) + ") must be a multiple of kv heads (" +
                       Twine(kvHeads) + ")");
    k = repeatHeads(g, k, qHeads / kvHeads);
    v = repeatHeads(g, v, qHeads / kvHeads);
  }
  Value qk = g.ok({q, k}) ? g.take(ctx.create<kiln::MatMulOp>(q, g.transpose(k, {0, 1, 3, 2})))
                          : Value();
  int64_t mode = ctx.attrInt("qk_matmul_output_mode", 0);
  Value qkOut = qk;
  Value x = bias ? g.add(qk, bias) : qk;
  if (mode == 1)
    qkOut = x;
  float softcap = ctx.attrFloat("softcap", 0.0f);
  if (softcap > 0) {
    x = g.mul(g.un<kiln::TanhOp>(g.div(x, g.scalar(x, softcap))), g.scalar(x, softcap));
    if (mode == 2)
      qkOut = x;
  }
  Type smType = et;
  if (int64_t sp = ctx.attrInt("softmax_precision", 0)) {
    smType = elementTypeOf(b.getContext(), static_cast<int32_t>(sp));
    if (!smType || !llvm::isa<FloatType>(smType))
      return ctx.error("softmax_precision must name a floating-point type");
  }
  Value xs = g.cast(x, smType);
  Value p = g.ok({xs}) ? g.take(ctx.createTyped<kiln::SoftmaxOp>(xs.getType(), xs,
                                                                 b.getI64IntegerAttr(3)))
                       : Value();
  p = g.cast(p, et);
  if (mode == 3)
    qkOut = p;
  Value y = g.ok({p, v}) ? g.take(ctx.create<kiln::MatMulOp>(p, v)) : Value();
  if (rank == 3 && g.ok({y})) {
    auto ys = g.shape(y);
    y = g.reshape(g.transpose(y, {0, 2, 1, 3}), {ys[0], ys[2], ys[1] * ys[3]});
  }
  if (!g.ok({y, qkOut}))
    return failure();
  ctx.setOutput(0, y);
  if (ctx.node.output_size() > 1 && !ctx.node.output(1).empty())
    ctx.setOutput(1, presentK);
  if (ctx.node.output_size() > 2 && !ctx.node.output(2).empty())
    ctx.setOutput(2, presentV);
  if (ctx.node.output_size() > 3 && !ctx.node.output(3).empty())
    ctx.setOutput(3, qkOut);
  return success();
}

} // namespace

void registerAttentionConverters(llvm::StringMap<Converter> &t) {
  t["Attention"] = convertAttention;
}

} // namespace kiln::onnx_import
