//===- RunTimeResize.cpp - Resize by run-time scales or sizes -------------===//
//
// Resize and Upsample whose scales, sizes or roi arrive at run time: the
// taps ConvertIndexMaps.cpp computes at import for each output position
// (the ONNX reference's coordinate transformation, nearest rounding,
// linear and cubic weights, exclude_outside, tf_crop_and_resize's
// extrapolation) are computed by f64 graph ops over the positions of the
// resized axis instead, then read by the same gathers and weighted sums.
// Each resized axis is a data-dependent size (floor(scale x size), or the
// size given), bounded as RunTimeGenerators.cpp's are: --max-shape for the
// output, else the larger of 64 and the input's size. Antialiasing is
// refused: its number of taps depends on the scale.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/DataDependentSizes.h"
#include "frontends/onnx/Resize.h"
#include "frontends/onnx/SizeMath.h"

using namespace mlir;

namespace kiln::onnx_import {

namespace {

/// The reference's cubic convolution kernel of coefficient A at t (f64).
Value cubicWeight(Builder &g, Value t, double A) {
  Value u = g.un<kiln::AbsOp>(t);
  auto c = [&](double v) { return g.scalar(u, v); };
  Value inner = g.add(g.mul(g.mul(g.sub(g.mul(c(A + 2), u), c(A + 3)), u), u), c(1));
  Value outer =
      g.sub(g.mul(g.add(g.mul(g.sub(g.mul(c(A), u), c(5 * A)), u), c(8 * A)), u), c(4 * A));
  return g.where(g.cmp("lt", u, c(1)), inner, g.where(g.cmp("lt", u, c(2)), outer, c(0)));
}

} // namespace

LogicalResult resizeAtRunTime(NodeContext &ctx, const ResizeAttrs &a, ArrayRef<int64_t> axes,
                              int64_t scalesAt, int64_t sizesAt) {
  Builder g{ctx};
  Sizes m{g};
  OpBuilder &b = ctx.builder;
  Value x = ctx.input(0);
  if (!x || failed(requireStatic(ctx, x, "the data")))
    return failure();
  if (a.antialias)
    return ctx.error("with antialias the scales or sizes must be known at compile time (its "
                     "number of taps depends on them)");
  auto xt = ctx.inputType(0);
  int64_t rank = xt.getRank(), n = axes.size(), at = scalesAt >= 0 ? scalesAt : sizesAt;
  if (xt.getNumElements() == 0)
    return ctx.error("scales and sizes must be known at compile time when the data is empty");
  if (ctx.inputType(at).getNumElements() != n)
    return ctx.error("expects " + Twine(n) + (scalesAt >= 0 ? " scales" : " sizes") + ", got " +
                     Twine(ctx.inputType(at).getNumElements()));
  if (failed(requireStatic(ctx, ctx.input(at), scalesAt >= 0 ? "scales" : "sizes")))
    return failure();
  Type f64 = b.getF64Type(), i64 = b.getIntegerType(64);
  Value arg = g.cast(g.reshape(ctx.input(at), {n}), f64);
  auto fc = [&](double v) { return g.reshape(g.scalar(arg, v), {1}); };
  // Per axis: the scale (f64[1]) and the output size (i64[1]).
  SmallVector<Value> scale, out;
  Value invalid;
  auto in = [&](int64_t i) { return double(xt.getDimSize(axes[i])); };
  if (scalesAt >= 0) {
    for (int64_t i = 0; i < n; ++i) {
      Value s = g.slice(arg, {i}, {1}, {1});
      invalid = m.any(invalid, g.un<kiln::NotOp>(g.cmp("gt", s, fc(0))));
      scale.push_back(s);
      out.push_back(g.cast(g.un<kiln::FloorOp>(g.mul(s, fc(in(i)))), i64));
    }
  } else {
    std::string policy = ctx.attrString("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
      return ctx.error("unknown keep_aspect_ratio_policy '" + policy + "'");
    Value common;
    for (int64_t i = 0; i < n; ++i) {
      Value s = g.slice(arg, {i}, {1}, {1});
      invalid = m.any(invalid, g.cmp("lt", s, fc(0)));
      Value ratio = g.div(s, fc(in(i)));
      scale.push_back(ratio);
      out.push_back(g.cast(s, i64));
      common = !common                  ? ratio
               : policy == "not_larger" ? g.bin<kiln::MinOp>(common, ratio)
                                        : g.bin<kiln::MaxOp>(common, ratio);
    }
    if (policy != "stretch")
      for (int64_t i = 0; i < n; ++i) {
        scale[i] = common;
        out[i] = g.cast(g.un<kiln::RoundOp>(g.mul(common, fc(in(i)))), i64);
      }
  }
  Value roi;
  if (a.coord == "tf_crop_and_resize") {
    if (!ctx.hasInput(1) || ctx.inputType(1).getNumElements() != 2 * n)
      return ctx.error("roi must hold a start and an end per resized axis");
    roi = g.cast(g.reshape(ctx.input(1), {2 * n}), f64);
  }
  auto bounds = unboundedBounds(ctx, 0, xt.getShape());
  if (failed(bounds))
    return failure();
  SmallVector<Value> stated = orInvalid(g, out, invalid);
  for (Value s : stated)
    if (!g.ok({s}))
      return failure();

  Value y = x, outside;
  Type et = xt.getElementType();
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = axes[i], bound = (*bounds)[d];
    double len = in(i);
    Value s = scale[i], o = g.cast(out[i], f64);
    auto c = [&](double v) { return fc(v); };
    Value pos = g.cast(clampedIota(g, bound, 0, 1, out[i]), f64);
    // The input coordinate of each output position.
    Value half = g.add(pos, c(0.5)), xo;
    const std::string &mode = a.coord;
    if (mode == "asymmetric") {
      xo = g.div(pos, s);
    } else if (mode == "align_corners") {
      Value length = g.mul(s, c(len));
      Value one = g.cmp("eq", length, c(1));
      Value den = g.where(one, c(1), g.sub(length, c(1)));
      xo = g.where(one, c(0), g.div(g.mul(pos, c(len - 1)), den));
    } else if (mode == "pytorch_half_pixel") {
      xo = g.where(g.cmp("gt", o, c(1)), g.sub(g.div(half, s), c(0.5)), c(0));
    } else if (mode == "tf_half_pixel_for_nn") {
      xo = g.div(half, s);
    } else if (mode == "half_pixel_symmetric") {
      Value adjustment = g.div(o, g.mul(s, c(len)));
      Value center = g.mul(c(len / 2), g.sub(c(1), adjustment));
      xo = g.add(center, g.sub(g.div(half, s), c(0.5)));
    } else if (mode == "tf_crop_and_resize") {
      Value lo = g.slice(roi, {i}, {1}, {1}), hi = g.slice(roi, {n + i}, {1}, {1});
      Value many = g.cmp("gt", o, c(1));
      Value den = g.where(many, g.sub(o, c(1)), c(1));
      Value spread =
          g.add(g.mul(lo, c(len - 1)), g.div(g.mul(g.mul(pos, g.sub(hi, lo)), c(len - 1)), den));
      xo = g.where(many, spread, g.mul(g.mul(c(0.5), g.add(lo, hi)), c(len - 1)));
      Value off = g.bin<kiln::OrOp>(g.cmp("lt", xo, c(0)), g.cmp("gt", xo, c(len - 1)));
      SmallVector<int64_t> shape(rank, 1);
      shape[d] = bound;
      off = g.reshape(off, shape);
      outside = outside ? g.bin<kiln::OrOp>(outside, off) : off;
    } else { // half_pixel
      xo = g.sub(g.div(half, s), c(0.5));
    }
    // The reference's neighbours: x0 = floor(xo), ratio r in (0, 1].
    Value x0 = g.un<kiln::FloorOp>(xo);
    Value r = g.sub(xo, x0);
    Value whole = g.cmp("eq", r, c(0));
    x0 = g.where(whole, g.sub(x0, c(1)), x0);
    r = g.where(whole, c(1), r);
    SmallVector<std::pair<Value, Value>> taps; // (position, weight or null)
    if (a.mode == "nearest") {
      Value second;
      if (a.nearest == "round_prefer_ceil")
        second = g.cmp("ge", r, c(0.5));
      else if (a.nearest == "floor")
        second = g.cmp("eq", r, c(1));
      else if (a.nearest == "ceil")
        second = g.cmp("ge", r, c(0)); // (always)
      else                             // round_prefer_floor
        second = g.cmp("gt", r, c(0.5));
      second = g.bin<kiln::OrOp>(second, g.cmp("eq", r, c(1)));
      taps.push_back({g.add(x0, g.cast(second, f64)), Value()});
    } else if (a.mode == "linear") {
      taps.push_back({x0, g.sub(c(1), r)});
      taps.push_back({g.add(x0, c(1)), r});
    } else { // cubic
      for (int64_t k = 0; k < 4; ++k)
        taps.push_back(
            {g.add(x0, c(double(k - 1))), cubicWeight(g, g.sub(c(double(k - 1)), r), a.cubicA)});
    }
    if (a.excludeOutside && a.mode != "nearest") {
      Value sum;
      for (auto &[p, w] : taps) {
        Value inside = g.bin<kiln::AndOp>(g.cmp("ge", p, c(0)), g.cmp("le", p, c(len - 1)));
        w = g.where(inside, w, c(0));
        sum = sum ? g.add(sum, w) : w;
      }
      Value nonzero = g.un<kiln::NotOp>(g.cmp("eq", sum, c(0)));
      Value safe = g.where(nonzero, sum, c(1));
      for (auto &[p, w] : taps)
        w = g.div(w, safe);
    }
    // Each tap: the input clamped into the axis (edge padding), weighted.
    SmallVector<int64_t> wShape(rank, 1);
    wShape[d] = bound;
    Value acc;
    for (auto &[p, w] : taps) {
      Value idx = g.cast(g.bin<kiln::MinOp>(g.bin<kiln::MaxOp>(p, c(0)), c(len - 1)), i64);
      if (!g.ok({y, idx}))
        return failure();
      Value t = g.take(ctx.create<kiln::GatherOp>(y, idx, b.getI64IntegerAttr(d)));
      if (w)
        t = g.mul(t, g.reshape(g.cast(w, et), wShape));
      acc = acc ? g.add(acc, t) : t;
    }
    y = acc;
  }
  if (outside)
    y = g.where(outside, g.scalar(y, a.extrapolation), y);
  if (g.ok({y}) && y == x)
    return ctx.error("internal: the resize has no op of its own");
  return g.result(stateSizes(g, y, axes, stated, resultName(ctx)));
}

} // namespace kiln::onnx_import
