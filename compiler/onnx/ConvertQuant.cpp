//===- ConvertQuant.cpp - QuantizeLinear, DequantizeLinear -----------------===//
//
// Linear (de)quantization as kiln ops, per tensor, per axis or per block:
//   QuantizeLinear:   y = clamp(round_half_even(x / scale) + zero_point, qmin, qmax)
//   DequantizeLinear: y = (x - zero_point) * scale
// computed in f32 (f64 for f64 inputs). The scale and zero point are brought
// to x's rank first: a per-axis vector becomes (1, .., C, .., 1); a blocked
// scale is repeated block_size times along the axis. The integer types are
// 8 and 16 bits (Dequantize also reads int32); float8 and 4/2-bit types are
// not tensors Kiln holds.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/CompositeBuilder.h"

#include <limits>

using namespace mlir;
namespace kiln::onnx_import {
namespace {

/// `p` (scale or zero point) brought to a shape that broadcasts against x.
Value alignParam(Builder &g, Value p, RankedTensorType x, int64_t axis, int64_t block) {
  if (!g.ok({p}))
    return {};
  auto ps = g.shape(p);
  int64_t rank = x.getRank();
  if (block > 0) {
    if (static_cast<int64_t>(ps.size()) != rank) {
      (void)g.ctx.error("a blocked scale must have the input's rank");
      g.failed = true;
      return {};
    }
    int64_t D = x.getDimSize(axis), Sa = ps[axis];
    if (Sa != (D + block - 1) / block) {
      (void)g.ctx.error("a blocked scale needs ceil(" + Twine(D) + " / block_size " + Twine(block) +
                  ") entries along the axis, not " + Twine(Sa));
      g.failed = true;
      return {};
    }
    SmallVector<int64_t> s1(ps.begin(), ps.end()), s2, s3(ps.begin(), ps.end());
    s1.insert(s1.begin() + axis + 1, 1);
    s2 = s1;
    s2[axis + 1] = block;
    s3[axis] = Sa * block;
    Value v = g.reshape(g.expand(g.reshape(p, s1), s2), s3);
    if (Sa * block != D) {
      SmallVector<int64_t> off(rank, 0), sizes(s3), strides(rank, 1);
      sizes[axis] = D;
      v = g.slice(v, off, sizes, strides);
    }
    return v;
  }
  int64_t n = 1;
  for (int64_t d : ps)
    n *= d;
  if (n == 1)
    return ps.empty() ? p : g.reshape(p, {});
  if (ps.size() != 1 || ps[0] != x.getDimSize(axis)) {
    (void)g.ctx.error("a per-axis scale or zero point must be 1-D with " +
                Twine(x.getDimSize(axis)) + " entries (the input's axis " + Twine(axis) + ")");
    g.failed = true;
    return {};
  }
  SmallVector<int64_t> s(rank, 1);
  s[axis] = ps[0];
  return g.reshape(p, s);
}

/// qmin, qmax of an integer type Kiln quantizes to, or failure.
FailureOr<std::pair<double, double>> intRange(NodeContext &ctx, Type t) {
  auto it = llvm::dyn_cast<IntegerType>(t);
  // (ONNX quantizes to 8 and 16 bits here; a 32-bit range would not survive
  // the f32 clamp: 2^31 - 1 rounds to 2^31.)
  if (!it || it.getWidth() < 8 || it.getWidth() > 16)
    return ctx.error("quantizes to int8/uint8/int16/uint16, not this element type");
  unsigned w = it.getWidth();
  if (it.isUnsigned())
    return std::make_pair(0.0, std::ldexp(1.0, w) - 1);
  return std::make_pair(-std::ldexp(1.0, w - 1), std::ldexp(1.0, w - 1) - 1);
}

/// The axis of per-axis or blocked parameters (0 when the scale is one
/// value: the axis is then unused, and may exceed a rank-1 input's rank).
FailureOr<int64_t> paramAxis(NodeContext &ctx, RankedTensorType x, int64_t block) {
  if (block <= 0 && ctx.inputType(1).getNumElements() == 1)
    return 0;
  return normalizeAxis(ctx, ctx.attrInt("axis", 1), x.getRank());
}

Type computeFloat(Builder &g, Type t) {
  return t.isF64() ? t : g.ctx.builder.getF32Type();
}

LogicalResult convertQuantize(NodeContext &ctx) {
  auto x = ctx.inputType(0);
  if (!llvm::isa<FloatType>(x.getElementType()) && !x.getElementType().isInteger(32))
    return ctx.error("expects a floating-point or int32 input");
  int64_t block = ctx.attrInt("block_size", 0);
  auto axis = paramAxis(ctx, x, block);
  if (failed(axis))
    return failure();
  Type out;
  if (ctx.hasInput(2))
    out = ctx.inputType(2).getElementType();
  else if (int64_t dt = ctx.attrInt("output_dtype", 0))
    out = elementTypeOf(ctx.builder.getContext(), static_cast<int32_t>(dt));
  else
    out = ctx.builder.getIntegerType(8, false);
  if (!out)
    return ctx.error("output_dtype is not an element type Kiln holds");
  auto range = intRange(ctx, out);
  if (failed(range))
    return failure();
  Builder g{ctx};
  Type ft = computeFloat(g, x.getElementType());
  Value v = g.cast(ctx.input(0), ft);
  Value scale = g.cast(alignParam(g, ctx.input(1), x, *axis, block), ft);
  v = g.un<kiln::RoundOp>(g.div(v, scale));
  if (ctx.hasInput(2))
    v = g.add(v, g.cast(alignParam(g, ctx.input(2), x, *axis, block), ft));
  v = g.bin<kiln::MaxOp>(v, g.scalar(v, range->first));
  v = g.bin<kiln::MinOp>(v, g.scalar(v, range->second));
  return g.result(g.cast(v, out));
}

LogicalResult convertDequantize(NodeContext &ctx) {
  auto x = ctx.inputType(0);
  if (!x.getElementType().isInteger() || x.getElementType().getIntOrFloatBitWidth() < 8)
    return ctx.error("expects an 8-, 16- or 32-bit integer input");
  int64_t block = ctx.attrInt("block_size", 0);
  auto axis = paramAxis(ctx, x, block);
  if (failed(axis))
    return failure();
  Type out = ctx.inputType(1).getElementType();
  if (int64_t dt = ctx.attrInt("output_dtype", 0))
    out = elementTypeOf(ctx.builder.getContext(), static_cast<int32_t>(dt));
  if (!out || !llvm::isa<FloatType>(out))
    return ctx.error("the scale (or output_dtype) must be a floating-point type");
  Builder g{ctx};
  Type ft = computeFloat(g, out);
  Value v = g.cast(ctx.input(0), ft);
  if (ctx.hasInput(2))
    v = g.sub(v, g.cast(alignParam(g, ctx.input(2), x, *axis, block), ft));
  v = g.mul(v, g.cast(alignParam(g, ctx.input(1), x, *axis, block), ft));
  return g.result(g.cast(v, out));
}

/// DynamicQuantizeLinear: uint8 with the scale and zero point of the
/// input's range widened to hold 0 (the ONNX function body).
LogicalResult convertDynamicQuantize(NodeContext &ctx) {
  auto x = ctx.inputType(0);
  if (!x.getElementType().isF32())
    return ctx.error("expects a float32 input");
  Builder g{ctx};
  Value in = ctx.input(0);
  SmallVector<int64_t> all;
  for (int64_t d = 0; d < x.getRank(); ++d)
    all.push_back(d);
  Value zero = g.scalar(in, 0.0);
  Value hi = g.bin<kiln::MaxOp>(g.reduce<kiln::ReduceMaxOp>(in, all, false), zero);
  Value lo = g.bin<kiln::MinOp>(g.reduce<kiln::ReduceMinOp>(in, all, false), zero);
  Value scale = g.div(g.sub(hi, lo), g.scalar(in, 255.0));
  auto clamp255 = [&](Value v) {
    return g.bin<kiln::MinOp>(g.bin<kiln::MaxOp>(v, zero), g.scalar(in, 255.0));
  };
  Value zpF = g.un<kiln::RoundOp>(clamp255(g.div(g.sub(zero, lo), scale)));
  Value y = clamp255(g.add(g.un<kiln::RoundOp>(g.div(in, scale)), zpF));
  Type u8 = ctx.builder.getIntegerType(8, false);
  Value yq = g.cast(y, u8), zp = g.cast(zpF, u8);
  if (!g.ok({yq, scale, zp}))
    return failure();
  ctx.setOutput(0, yq);
  ctx.setOutput(1, scale);
  ctx.setOutput(2, zp);
  return success();
}

} // namespace

void registerQuantConverters(llvm::StringMap<Converter> &t) {
  t["QuantizeLinear"] = convertQuantize;
  t["DequantizeLinear"] = convertDequantize;
  t["DynamicQuantizeLinear"] = convertDynamicQuantize;
}

} // namespace kiln::onnx_import
