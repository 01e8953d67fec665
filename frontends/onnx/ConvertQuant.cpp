//===- ConvertQuant.cpp - QuantizeLinear, DequantizeLinear -----------------===//
//
// Linear (de)quantization as kiln ops, per tensor, per axis or per block:
//   QuantizeLinear:   y = clamp(round_half_even(x / scale) + zero_point, qmin, qmax)
//   DequantizeLinear: y = (x - zero_point) * scale
// computed in f32 (f64 for f64 inputs); and the integer products
//   MatMulInteger, ConvInteger: y = (a - a_zero) (*) (b - b_zero)   (int32)
//   QLinearMatMul, QLinearConv: y = saturate(round(that (+ bias)
//                                  * a_scale * b_scale / y_scale) + y_zero)
// computed in f64, where the integer sums are exact (8-bit operands: up to
// 2^37 terms), then converted. The scale and zero point are brought
// to x's rank first: a per-axis vector becomes (1, .., C, .., 1); a blocked
// scale is repeated block_size times along the axis. The integer types are
// 2, 4, 8 and 16 bits (Dequantize also reads int32); float8 and float4
// targets take x / scale + zero point rounded to the type (float8
// saturating unless `saturate` is 0).
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/CompositeBuilder.h"

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
  if (ps.size() == 1 && ps[0] != x.getDimSize(axis) &&
      g.ctx.requireSize(p, 0, x.getDimSize(axis))) {
    g.failed = true; // a dynamic parameter length is the axis's: fixed, imported again
    return {};
  }
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
  // (ONNX quantizes to 2, 4, 8 and 16 bits here; a 32-bit range would not
  // survive the f32 clamp: 2^31 - 1 rounds to 2^31.)
  if (!it || it.getWidth() > 16 || it.getWidth() == 1)
    return ctx.error("quantizes to 2-, 4-, 8- or 16-bit integers or float8/float4, not this "
                     "element type");
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
  Builder g{ctx};
  Type ft = computeFloat(g, x.getElementType());
  Value v = g.cast(ctx.input(0), ft);
  Value scale = g.cast(alignParam(g, ctx.input(1), x, *axis, block), ft);
  if (llvm::isa<FloatType>(out) && kiln::narrowDtype(out)) {
    // float8 / float4: x / scale + zero point, rounded to the type
    // (float8 saturating unless `saturate` is 0).
    v = g.div(v, scale);
    if (ctx.hasInput(2))
      v = g.add(v, g.cast(alignParam(g, ctx.input(2), x, *axis, block), ft));
    if (!g.ok({v}))
      return failure();
    auto q = ctx.createTyped<kiln::CastOp>(
        llvm::cast<RankedTensorType>(v.getType()).clone(out), v,
        ctx.builder.getBoolAttr(ctx.attrInt("saturate", 1) != 0),
        ctx.builder.getStringAttr("up"));
    return ctx.setResult(q);
  }
  auto range = intRange(ctx, out);
  if (failed(range))
    return failure();
  v = g.un<kiln::RoundOp>(g.div(v, scale));
  if (ctx.hasInput(2))
    v = g.add(v, g.cast(alignParam(g, ctx.input(2), x, *axis, block), ft));
  v = g.bin<kiln::MaxOp>(v, g.scalar(v, range->first));
  v = g.bin<kiln::MinOp>(v, g.scalar(v, range->second));
  return g.result(g.cast(v, out));
}

LogicalResult convertDequantize(NodeContext &ctx) {
  auto x = ctx.inputType(0);
  Type xt = x.getElementType();
  if (!(xt.isInteger() && !xt.isInteger(1)) && !kiln::narrowDtype(xt))
    return ctx.error("expects an integer, float8 or float4 input");
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

/// Whether a quantization parameter (a scale or zero point) read as a graph
/// input carries a dynamic dimension other than the symbol of axis `axis`
/// of `of` (then it is one value per index there): it is taken as one value
/// (per tensor) and its symbol fixed to 1 (true: the import restarts).
/// Scales and zero points are constants in real models.
bool pinParamToOne(NodeContext &ctx, Value p, Value of = {}, int64_t axis = -1) {
  if (!p || ctx.imp.symbols.empty())
    return false;
  auto syms = ctx.imp.symbols.of(p);
  if (syms.size() == 1 && syms[0] >= 0 && of && axis >= 0) {
    auto os = ctx.imp.symbols.of(of);
    if (axis < static_cast<int64_t>(os.size()) && os[axis] == syms[0])
      return false;
  }
  for (size_t d = 0; d < syms.size(); ++d)
    if (syms[d] >= 0 && ctx.requireSize(p, static_cast<int64_t>(d), 1))
      return true;
  return false;
}

/// An 8-bit integer operand of an integer product, in f32 less its zero
/// point (input `zpIdx`, absent: 0): integers of magnitude at most 255. A
/// zero point of one value applies to all; a 1-D one to each index of
/// `axis` (rows of a matmul's A, columns of its B, output channels of a
/// conv weight); one of `v`'s rank broadcasts.
Value integerOperand(Builder &g, Value v, int zpIdx, int64_t axis, StringRef what) {
  if (!g.ok({v}))
    return {};
  NodeContext &ctx = g.ctx;
  Type elt = g.elem(v);
  if (!elt.isInteger(8)) {
    (void)ctx.error(what + " must be int8 or uint8");
    g.failed = true;
    return {};
  }
  Type f32 = ctx.builder.getF32Type();
  Value x = g.cast(v, f32);
  if (!ctx.hasInput(zpIdx))
    return x;
  Value zp = ctx.input(zpIdx);
  if (!g.ok({zp}))
    return {};
  if (g.elem(zp) != elt) {
    (void)ctx.error("the zero point of " + what + " must have its element type");
    g.failed = true;
    return {};
  }
  auto vs = g.shape(v);
  auto zs = g.shape(zp);
  int64_t n = 1;
  for (int64_t d : zs)
    n *= d;
  int64_t rank = vs.size();
  if (axis < 0)
    axis += rank;
  if (pinParamToOne(ctx, zp, v, axis)) {
    g.failed = true; // the import restarts with the symbol fixed
    return {};
  }
  if (n != 1 && zs.size() == 1 && rank >= 1) {
    if (axis < 0 || axis >= rank || zs[0] != vs[axis]) {
      (void)ctx.error("a 1-D zero point of " + what + " needs one value per index of its "
                      "axis " + Twine(axis));
      g.failed = true;
      return {};
    }
    SmallVector<int64_t> s(rank - axis, 1);
    s[0] = zs[0];
    zp = g.reshape(zp, s);
  } else if (n == 1) {
    zp = g.reshape(zp, {});
  } else if (static_cast<int64_t>(zs.size()) > rank) {
    (void)ctx.error("the zero point of " + what + " has a higher rank than it");
    g.failed = true;
    return {};
  }
  return g.sub(x, g.cast(zp, f32));
}

/// The exact int32 value of `product(x, w)`, a sum of `terms` products of
/// integers of magnitude at most 255 each, computed by f32 kernels. f32
/// sums integers exactly below 2^24, in any order: when 255 * 255 * terms
/// might pass that, x is split into 16 * hi + lo (lo in [0, 15], |hi| <=
/// 16), and past 16 * 255 * terms w too, so that every f32 product sums
/// exactly; the parts are combined in int32.
Value exactIntegerProduct(Builder &g, Value x, Value w, int64_t terms,
                          llvm::function_ref<Value(Value, Value)> product) {
  if (!g.ok({x, w}))
    return {};
  Type i32 = g.ctx.builder.getIntegerType(32);
  constexpr double kExact = 16777216.0; // 2^24
  auto split = [&](Value v) -> std::pair<Value, Value> {
    Value hi = g.un<kiln::FloorOp>(g.div(v, g.scalar(v, 16.0)));
    return {hi, g.sub(v, g.mul(hi, g.scalar(v, 16.0)))};
  };
  auto scaled = [&](Value v, double k) {
    Value r = g.cast(v, i32);
    return k == 1.0 ? r : g.mul(r, g.scalar(r, k));
  };
  double t = static_cast<double>(std::max<int64_t>(terms, 1));
  if (255.0 * 255.0 * t < kExact)
    return g.cast(product(x, w), i32);
  auto [xh, xl] = split(x);
  if (16.0 * 255.0 * t < kExact)
    return g.add(scaled(product(xh, w), 16.0), scaled(product(xl, w), 1.0));
  if (16.0 * 16.0 * t >= kExact) {
    (void)g.ctx.error("sums " + Twine(terms) + " products per output: more than Kiln's "
                      "exact integer products hold (65,535)");
    g.failed = true;
    return {};
  }
  auto [wh, wl] = split(w);
  Value hh = scaled(product(xh, wh), 256.0), hl = scaled(product(xh, wl), 16.0);
  Value lh = scaled(product(xl, wh), 16.0), ll = scaled(product(xl, wl), 1.0);
  return g.add(g.add(hh, hl), g.add(lh, ll));
}

/// The rescale of QLinear*: round(acc * (sa * sb / sy)) + zy, saturated to
/// the output type (y_zero_point's, else a's; as the spec and onnxruntime,
/// where ONNX's reference wraps int8). The multiplier is computed in the
/// scales' type as the reference does, the rest in f64. `sa` may be one
/// value per index of acc's axis `aAxis` (a matmul's rows), `sb` of
/// `bAxis` (its columns, a conv's output channels); -1: one value only.
LogicalResult requantize(Builder &g, Value acc, int saIdx, int sbIdx, int syIdx, int zyIdx,
                         Type aType, int64_t aAxis, int64_t bAxis) {
  NodeContext &ctx = g.ctx;
  Value sa = ctx.input(saIdx), sb = ctx.input(sbIdx), sy = ctx.input(syIdx);
  Value zy = ctx.hasInput(zyIdx) ? ctx.input(zyIdx) : Value();
  if (!g.ok({acc, sa, sb, sy}) || (ctx.hasInput(zyIdx) && !g.ok({zy})))
    return failure();
  if (pinParamToOne(ctx, sa, acc, aAxis) || pinParamToOne(ctx, sb, acc, bAxis) ||
      pinParamToOne(ctx, sy) || pinParamToOne(ctx, zy))
    return failure(); // the import restarts with the symbol fixed
  Type st = g.elem(sa);
  if (!llvm::isa<FloatType>(st) || g.elem(sb) != st || g.elem(sy) != st)
    return ctx.error("the scales must share one floating-point type");
  auto accShape = g.shape(acc);
  int64_t rank = accShape.size();
  // One value, or (axis >= 0) a 1-D one per index of acc's axis.
  auto param = [&](Value v, StringRef what, int64_t axis) -> Value {
    auto ps = g.shape(v);
    int64_t n = 1;
    for (int64_t d : ps)
      n *= d;
    if (n == 1)
      return g.reshape(v, {});
    if (axis < 0 || axis >= rank || ps.size() != 1 || ps[0] != accShape[axis]) {
      (void)ctx.error("'" + what + "' must be one value" +
                      (axis >= 0 && axis < rank
                           ? " or one per index of the result's axis " + Twine(axis) + " (" +
                                 Twine(accShape[axis]) + ")"
                           : Twine()));
      g.failed = true;
      return {};
    }
    SmallVector<int64_t> s(rank - axis, 1);
    s[0] = ps[0];
    return g.reshape(v, s);
  };
  sa = param(sa, ctx.node.input(saIdx), aAxis);
  sb = param(sb, ctx.node.input(sbIdx), bAxis);
  sy = param(sy, ctx.node.input(syIdx), -1);
  Value m = g.div(g.mul(sa, sb), sy);
  Type f64 = ctx.builder.getF64Type();
  Value r = g.un<kiln::RoundOp>(g.mul(g.cast(acc, f64), g.cast(m, f64)));
  Type out = aType;
  if (zy) {
    out = g.elem(zy);
    r = g.add(r, g.cast(param(zy, ctx.node.input(zyIdx), -1), f64));
  }
  auto range = intRange(ctx, out);
  if (failed(range))
    return failure();
  r = g.bin<kiln::MaxOp>(r, g.scalar(r, range->first));
  r = g.bin<kiln::MinOp>(r, g.scalar(r, range->second));
  return g.result(g.cast(r, out));
}

/// Input `zpIdx` as the scalar zero point of 8-bit `v` (0 when absent), or
/// null when it has one value per row or column.
Value scalarZeroPoint(Builder &g, Value v, int zpIdx) {
  NodeContext &ctx = g.ctx;
  if (!ctx.hasInput(zpIdx))
    return g.scalar(v, 0.0);
  Value zp = ctx.input(zpIdx);
  if (!g.ok({zp}) || g.elem(zp) != g.elem(v) || ctx.inputType(zpIdx).getNumElements() != 1 ||
      pinParamToOne(ctx, zp))
    return {};
  return g.reshape(zp, {});
}

/// kiln.matmul_integer for A [.., M, K] (or a vector) times a 2-D B with
/// scalar zero points (the CPU's 8-bit kernels; other targets expand it:
/// kiln-expand-integer-products), or null for what it does not cover.
Value matmulIntegerOp(Builder &g, int aIdx, int azIdx, int bIdx, int bzIdx) {
  NodeContext &ctx = g.ctx;
  Value a = ctx.input(aIdx), b = ctx.input(bIdx);
  if (!g.ok({a, b}) || !g.elem(a).isInteger(8) || !g.elem(b).isInteger(8) ||
      g.shape(b).size() != 2 || g.shape(a).empty())
    return {};
  // (Weights with a dynamic dimension take the f32 products.)
  if (!ctx.imp.symbols.empty() && llvm::any_of(ctx.imp.symbols.of(b), [](auto s) { return s >= 0; }))
    return {};
  Value az = scalarZeroPoint(g, a, azIdx), bz = scalarZeroPoint(g, b, bzIdx);
  if (g.failed || !az || !bz)
    return {};
  auto as = g.shape(a);
  bool vec = as.size() == 1;
  Value rows = vec ? g.reshape(a, {1, as[0]}) : a;
  Value y = g.take(ctx.create<kiln::MatMulIntegerOp>(rows, b, az, bz));
  return vec ? g.reshape(y, {g.shape(b)[1]}) : y;
}

/// The exact int32 matmul of two 8-bit operands less their zero points
/// (A's per row: axis -2, or 0 for a vector; B's per column: axis -1).
Value integerMatMul(Builder &g, int aIdx, int azIdx, int bIdx, int bzIdx) {
  NodeContext &ctx = g.ctx;
  Value a = ctx.input(aIdx), b = ctx.input(bIdx);
  if (!g.ok({a, b}))
    return {};
  if (Value y = matmulIntegerOp(g, aIdx, azIdx, bIdx, bzIdx))
    return y;
  if (g.failed)
    return {};
  auto as = g.shape(a);
  Value af = integerOperand(g, a, azIdx, as.size() >= 2 ? -2 : 0, "A");
  Value bf = integerOperand(g, b, bzIdx, -1, "B");
  int64_t terms = as.empty() ? 1 : as.back();
  return exactIntegerProduct(g, af, bf, terms, [&](Value x, Value y) {
    return g.ok({x, y}) ? g.take(ctx.create<kiln::MatMulOp>(x, y)) : Value();
  });
}

/// The exact int32 convolution of 8-bit x and w less their zero points (x's
/// one value; w's one or one per output channel), under the node's Conv
/// attributes.
Value integerConv(Builder &g, int xIdx, int xzIdx, int wIdx, int wzIdx) {
  NodeContext &ctx = g.ctx;
  Value x = integerOperand(g, ctx.input(xIdx), xzIdx, 0, "x");
  Value w = integerOperand(g, ctx.input(wIdx), wzIdx, 0, "w");
  if (!g.ok({x, w}))
    return {};
  auto ws = g.shape(w);
  int64_t terms = 1;
  for (size_t d = 1; d < ws.size(); ++d)
    terms *= ws[d];
  return exactIntegerProduct(g, x, w, terms, [&](Value a, Value b) {
    return g.ok({a, b}) ? g.take(buildConv(ctx, a, b, Value())) : Value();
  });
}

LogicalResult convertMatMulInteger(NodeContext &ctx) {
  Builder g{ctx};
  return g.result(integerMatMul(g, 0, 2, 1, 3));
}

LogicalResult convertQLinearMatMul(NodeContext &ctx) {
  Builder g{ctx};
  Value acc = integerMatMul(g, 0, 2, 3, 5);
  if (!g.ok({acc}))
    return failure();
  int64_t rank = g.shape(acc).size();
  return requantize(g, acc, 1, 4, 6, 7, ctx.inputType(0).getElementType(),
                    ctx.inputType(0).getRank() >= 2 ? rank - 2 : -1,
                    ctx.inputType(3).getRank() >= 2 ? rank - 1 : -1);
}

LogicalResult convertConvInteger(NodeContext &ctx) {
  Builder g{ctx};
  return g.result(integerConv(g, 0, 2, 1, 3));
}

LogicalResult convertQLinearConv(NodeContext &ctx) {
  Builder g{ctx};
  Value acc = integerConv(g, 0, 2, 3, 5);
  if (!g.ok({acc}))
    return failure();
  if (ctx.hasInput(8)) {
    // The int32 bias (scale x_scale * w_scale), per output channel.
    auto bt = ctx.inputType(8);
    int64_t rank = g.shape(acc).size();
    if (!bt.getElementType().isInteger(32) || bt.getRank() != 1)
      return ctx.error("the bias B must be a 1-D int32 tensor");
    if (ctx.requireEqual(ctx.input(8), 0, acc, 1))
      return failure(); // the import restarts with the symbol fixed
    if (bt.getDimSize(0) != g.shape(acc)[1])
      return ctx.error("the bias B needs one value per output channel (" +
                       Twine(g.shape(acc)[1]) + ")");
    SmallVector<int64_t> s(rank - 1, 1);
    s[0] = bt.getDimSize(0);
    acc = g.add(acc, g.reshape(ctx.input(8), s));
  }
  return requantize(g, acc, 1, 4, 6, 7, ctx.inputType(0).getElementType(), -1, 1);
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
  t["MatMulInteger"] = convertMatMulInteger;
  t["ConvInteger"] = convertConvInteger;
  t["QLinearMatMul"] = convertQLinearMatMul;
  t["QLinearConv"] = convertQLinearConv;
}

} // namespace kiln::onnx_import
