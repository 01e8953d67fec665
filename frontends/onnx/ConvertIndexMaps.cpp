//===- ConvertIndexMaps.cpp - Resize, Upsample, Pad, ConvTranspose as gathers ===//
//
// Ops whose output reads the input at positions that, with static shapes,
// are known at import time: along each axis every output position reads a
// few input positions with fixed weights. Those positions and weights are
// computed here and each axis becomes kiln.gather ops with constant indices
// (times constant weights, summed); positions that read no input (Pad's
// constant border, tf_crop_and_resize outside the crop) take their value
// through a constant mask. kiln-fuse joins the products and sums.
//
// Resize follows the ONNX reference implementation: coordinate
// transformation modes, nearest rounding modes, edge clamping,
// exclude_outside, antialias, tf_crop_and_resize's extrapolation. Pad's
// modes are constant, edge, reflect and wrap; negative pads crop.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/CompositeBuilder.h"
#include "frontends/onnx/DataDependentSizes.h"
#include "frontends/onnx/Resize.h"

#include <cmath>
#include <cstring>
#include <numeric>

using namespace mlir;
namespace kiln::onnx_import {
namespace {

/// How one axis is resized: for every output position, the input positions
/// read (taps) and their weights; `outside[i]` when position i falls outside
/// the crop (tf_crop_and_resize: the extrapolation value).
struct AxisPlan {
  int64_t in = 0, out = 0;
  std::vector<std::vector<int64_t>> idx; // [tap][position]
  std::vector<std::vector<double>> w;    // [tap][position]
  std::vector<bool> outside;
  bool identity() const {
    if (in != out || idx.size() != 1)
      return false;
    for (int64_t i = 0; i < out; ++i)
      if (idx[0][i] != i || w[0][i] != 1.0 || outside[i])
        return false;
    return true;
  }
};

/// The given axes normalized (an `axes` attribute or input), or every axis.
FailureOr<std::vector<int64_t>> axesOrAll(NodeContext &ctx,
                                          const std::optional<std::vector<int64_t>> &given,
                                          int64_t rank) {
  std::vector<int64_t> axes;
  if (!given) {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
    return axes;
  }
  for (int64_t a : *given) {
    auto n = normalizeAxis(ctx, a, rank);
    if (failed(n))
      return failure();
    axes.push_back(*n);
  }
  return axes;
}

double cubicKernel(double x, double A) {
  x = std::fabs(x);
  if (x < 1)
    return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2)
    return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0;
}

AxisPlan planAxis(const ResizeAttrs &a, int64_t in, int64_t out, double scale, double roiStart,
                  double roiEnd) {
  AxisPlan p;
  p.in = in;
  p.out = out;
  p.outside.assign(out, false);
  std::vector<std::vector<std::pair<int64_t, double>>> taps(out);
  for (int64_t i = 0; i < out; ++i) {
    double x = static_cast<double>(i), xo = 0;
    const std::string &c = a.coord;
    if (c == "asymmetric") {
      xo = x / scale;
    } else if (c == "align_corners") {
      // (the reference divides by the unrounded output length, scale * in)
      double length = scale * in;
      xo = length == 1 ? 0 : x * (in - 1) / (length - 1);
    } else if (c == "pytorch_half_pixel") {
      xo = out > 1 ? (x + 0.5) / scale - 0.5 : 0;
    } else if (c == "tf_half_pixel_for_nn") {
      xo = (x + 0.5) / scale;
    } else if (c == "half_pixel_symmetric") {
      double adjustment = out / (scale * in);
      double center = in / 2.0;
      xo = center * (1 - adjustment) + (x + 0.5) / scale - 0.5;
    } else if (c == "tf_crop_and_resize") {
      xo = out > 1 ? roiStart * (in - 1) + x * (roiEnd - roiStart) * (in - 1) / (out - 1)
                   : 0.5 * (roiStart + roiEnd) * (in - 1);
      if (xo < 0 || xo > in - 1)
        p.outside[i] = true;
    } else { // half_pixel
      xo = (x + 0.5) / scale - 0.5;
    }
    // The reference's neighbours: x0 = floor(xo) and ratio in (0, 1] (an
    // integral xo is ratio 1 from the position before it).
    int64_t x0 = static_cast<int64_t>(std::floor(xo));
    double r = xo - static_cast<double>(x0);
    if (r == 0) {
      x0 -= 1;
      r = 1;
    }
    std::vector<double> coeffs;
    if (a.mode == "nearest") {
      bool second;
      if (r == 1)
        second = true;
      else if (a.nearest == "round_prefer_ceil")
        second = r >= 0.5;
      else if (a.nearest == "floor")
        second = false;
      else if (a.nearest == "ceil")
        second = true;
      else // round_prefer_floor
        second = r > 0.5;
      coeffs = second ? std::vector<double>{0, 1} : std::vector<double>{1, 0};
    } else if (a.mode == "linear") {
      if (a.antialias) {
        double s = std::min(scale, 1.0);
        int64_t start = static_cast<int64_t>(std::floor(-1 / s)) + 1;
        int64_t n = 2 - 2 * start;
        for (int64_t k = 0; k < n; ++k)
          coeffs.push_back(std::clamp(1 - std::fabs((start + k - r) * s), 0.0, 1.0));
      } else {
        coeffs = {1 - r, r};
      }
    } else { // cubic
      if (a.antialias) {
        double s = std::min(scale, 1.0);
        int64_t start = static_cast<int64_t>(std::floor(-2 / s)) + 1;
        int64_t n = 2 - 2 * start;
        for (int64_t k = 0; k < n; ++k)
          coeffs.push_back(cubicKernel(s * (start + k - r), a.cubicA));
      } else {
        for (int64_t k = 0; k < 4; ++k)
          coeffs.push_back(cubicKernel(k - 1 - r, a.cubicA));
      }
    }
    if (a.antialias) {
      double sum = std::accumulate(coeffs.begin(), coeffs.end(), 0.0);
      for (double &v : coeffs)
        v /= sum;
    }
    int64_t n = static_cast<int64_t>(coeffs.size());
    int64_t first = x0 - n / 2 + 1;
    if (a.excludeOutside) {
      double sum = 0;
      for (int64_t k = 0; k < n; ++k) {
        if (first + k < 0 || first + k >= in)
          coeffs[k] = 0;
        sum += coeffs[k];
      }
      if (sum != 0)
        for (double &v : coeffs)
          v /= sum;
    }
    for (int64_t k = 0; k < n; ++k) { // edge padding: clamp into the input
      if (a.mode == "nearest" && coeffs[k] == 0)
        continue; // nearest reads one position
      taps[i].push_back({std::clamp<int64_t>(first + k, 0, in - 1), coeffs[k]});
    }
  }
  // Taps as [tap][position], dropping taps whose weight is 0 everywhere.
  size_t n = taps.empty() ? 0 : taps[0].size();
  for (size_t k = 0; k < n; ++k) {
    std::vector<int64_t> idx(out);
    std::vector<double> w(out);
    bool any = false;
    for (int64_t i = 0; i < out; ++i) {
      idx[i] = taps[i][k].first;
      w[i] = taps[i][k].second;
      any = any || w[i] != 0;
    }
    if (any) {
      p.idx.push_back(std::move(idx));
      p.w.push_back(std::move(w));
    }
  }
  return p;
}

Value hostConstant(Builder &g, Type et, std::vector<int64_t> shape, std::vector<double> values,
                   const Twine &what) {
  HostTensor h;
  h.elementType = et;
  h.shape = std::move(shape);
  h.values = std::move(values);
  return Importer::materialize(g.ctx.builder, h, g.ctx.node.name() + "." + what.str());
}

/// x resized along `axis` by the plan.
Value applyPlan(Builder &g, Value x, int64_t axis, const AxisPlan &p, bool weighted) {
  OpBuilder &b = g.ctx.builder;
  int64_t rank = static_cast<int64_t>(g.shape(x).size());
  std::vector<int64_t> wShape(rank, 1);
  wShape[axis] = p.out;
  Value acc;
  for (size_t k = 0; k < p.idx.size(); ++k) {
    std::vector<double> iv(p.idx[k].begin(), p.idx[k].end());
    Value idx = hostConstant(g, b.getIntegerType(64), {p.out}, iv, "idx" + Twine(axis));
    Value t = g.ok({x}) ? g.take(g.ctx.create<kiln::GatherOp>(x, idx, b.getI64IntegerAttr(axis)))
                        : Value();
    if (weighted) {
      bool ones = llvm::all_of(p.w[k], [](double v) { return v == 1.0; });
      if (!ones)
        t = g.mul(t, hostConstant(g, g.elem(x), wShape, p.w[k], "w" + Twine(axis)));
    }
    acc = acc ? g.add(acc, t) : t;
  }
  return acc;
}

/// Ors into `outside` a mask of the positions along `axis` that the plan
/// reads from no input position (nothing when there are none).
void orOutsideMask(Builder &g, int64_t rank, int64_t axis, const AxisPlan &p, const Twine &what,
                   Value &outside) {
  if (!llvm::is_contained(p.outside, true))
    return;
  std::vector<int64_t> shape(rank, 1);
  shape[axis] = p.out;
  std::vector<double> m(p.outside.begin(), p.outside.end());
  Value mask = hostConstant(g, g.ctx.builder.getI1Type(), shape, m, what);
  outside = outside ? g.bin<kiln::OrOp>(outside, mask) : mask;
}

LogicalResult convertResize(NodeContext &ctx, bool upsample) {
  auto in = ctx.inputType(0);
  int64_t rank = in.getRank();
  ResizeAttrs a;
  a.mode = ctx.attrString("mode", "nearest");
  if (a.mode != "nearest" && a.mode != "linear" && a.mode != "cubic")
    return ctx.error("mode must be nearest, linear or cubic, not '" + a.mode + "'");
  if (upsample || ctx.opset < 11) {
    // Upsample and Resize-10: asymmetric coordinates, nearest rounds down.
    a.coord = "asymmetric";
    a.nearest = "floor";
  } else {
    a.coord = ctx.attrString("coordinate_transformation_mode", "half_pixel");
    a.nearest = ctx.attrString("nearest_mode", "round_prefer_floor");
  }
  static const char *coords[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                                 "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                                 "tf_crop_and_resize"};
  if (!llvm::is_contained(coords, a.coord))
    return ctx.error("unknown coordinate_transformation_mode '" + a.coord + "'");
  a.cubicA = ctx.attrFloat("cubic_coeff_a", -0.75f);
  a.excludeOutside = ctx.attrInt("exclude_outside", 0) != 0;
  a.antialias = ctx.attrInt("antialias", 0) != 0 && a.mode != "nearest";
  a.extrapolation = ctx.attrFloat("extrapolation_value", 0.0f);
  if (a.mode != "nearest" && !llvm::isa<FloatType>(in.getElementType()))
    return ctx.error("linear and cubic modes need a floating-point input");

  // The resized axes (opset 18: `axes`), and their scales and sizes.
  auto axesOr = axesOrAll(ctx, ctx.attrInts("axes"), rank);
  if (failed(axesOr))
    return failure();
  std::vector<int64_t> axes = *axesOr;
  int64_t nAxes = static_cast<int64_t>(axes.size());
  // Scales, sizes or a roi that arrive at run time: the graph computes the
  // taps (RunTimeResize.cpp).
  if (!upsample || ctx.opset >= 9) {
    int64_t scalesAt = upsample || ctx.opset < 11 ? 1 : 2;
    bool hasScales = ctx.hasInput(scalesAt) && ctx.inputType(scalesAt).getNumElements() > 0;
    int64_t sizesAt = !upsample && !hasScales && ctx.opset >= 11 && ctx.hasInput(3) ? 3 : -1;
    int64_t at = hasScales ? scalesAt : sizesAt;
    bool roiAtRunTime = a.coord == "tf_crop_and_resize" && ctx.hasInput(1) && !ctx.hostInput(1);
    if (at >= 0 && (!ctx.hostInput(at) || roiAtRunTime))
      return resizeAtRunTime(ctx, a, axes, hasScales ? scalesAt : -1, hasScales ? -1 : sizesAt);
  }
  std::vector<double> scales(nAxes, 1.0);
  std::vector<int64_t> sizes(nAxes);
  for (int64_t i = 0; i < nAxes; ++i)
    sizes[i] = in.getDimSize(axes[i]);
  auto hostValues = [&](size_t i, const char *what) -> FailureOr<const HostTensor *> {
    const HostTensor *h = ctx.hostInput(i);
    if (!h)
      return ctx.error(Twine(what) + " must be known at compile time");
    return h;
  };
  const HostTensor *scalesT = nullptr, *sizesT = nullptr;
  if (upsample) {
    if (ctx.opset < 9) {
      auto s = ctx.attr("scales");
      if (!s)
        return ctx.error("expects a scales attribute");
      scales.assign(s->floats().begin(), s->floats().end());
      if (static_cast<int64_t>(scales.size()) != nAxes)
        return ctx.error("expects one scale per input dimension");
    } else {
      auto h = hostValues(1, "scales");
      if (failed(h))
        return failure();
      scalesT = *h;
    }
  } else {
    size_t scalesAt = ctx.opset < 11 ? 1 : 2;
    if (ctx.hasInput(scalesAt) && ctx.inputType(scalesAt).getNumElements() > 0) {
      auto h = hostValues(scalesAt, "scales");
      if (failed(h))
        return failure();
      scalesT = *h;
    } else if (ctx.opset >= 11 && ctx.hasInput(3)) {
      auto h = hostValues(3, "sizes");
      if (failed(h))
        return failure();
      sizesT = *h;
    } else {
      return ctx.error("expects scales or sizes");
    }
  }
  if (scalesT) {
    if (scalesT->numElements() != nAxes)
      return ctx.error("expects " + Twine(nAxes) + " scales, got " +
                       Twine(scalesT->numElements()));
    scales = scalesT->values;
  }
  if (scalesT || upsample) {
    for (int64_t i = 0; i < nAxes; ++i) {
      if (!(scales[i] > 0))
        return ctx.error("scales must be positive");
      // The scale as stored (float32), times the size, rounded down.
      sizes[i] = hostInt(std::floor(
          static_cast<double>(static_cast<float>(scales[i])) * in.getDimSize(axes[i])));
      scales[i] = static_cast<float>(scales[i]);
    }
  } else {
    if (sizesT->numElements() != nAxes)
      return ctx.error("expects " + Twine(nAxes) + " sizes, got " +
                       Twine(sizesT->numElements()));
    // `sizes` resizing a dynamic axis to 1 (a batch the model was exported
    // with): the symbol is taken to be 1 (the import restarts with it fixed,
    // warning), rather than interpolating positions of a padded axis.
    if (!ctx.hostInput(0))
      for (int64_t i = 0; i < nAxes; ++i)
        if (sizesT->values[i] == 1 && ctx.imp.symbols.of(ctx.input(0))[axes[i]] >= 0 &&
            ctx.requireSize(ctx.input(0), axes[i], 1))
          return failure();
    std::string policy = ctx.attrString("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
      return ctx.error("unknown keep_aspect_ratio_policy '" + policy + "'");
    for (int64_t i = 0; i < nAxes; ++i)
      scales[i] = sizesT->values[i] / static_cast<double>(in.getDimSize(axes[i]));
    if (policy == "stretch") {
      for (int64_t i = 0; i < nAxes; ++i)
        sizes[i] = hostInt(sizesT->values[i]);
    } else {
      double s = policy == "not_larger" ? *std::min_element(scales.begin(), scales.end())
                                        : *std::max_element(scales.begin(), scales.end());
      for (int64_t i = 0; i < nAxes; ++i) {
        scales[i] = s;
        sizes[i] = hostInt(std::nearbyint(s * in.getDimSize(axes[i])));
      }
    }
  }
  std::vector<double> roi;
  if (a.coord == "tf_crop_and_resize") {
    auto h = hostValues(1, "roi");
    if (failed(h))
      return failure();
    roi = (*h)->values;
    if (static_cast<int64_t>(roi.size()) != 2 * nAxes)
      return ctx.error("roi must hold a start and an end per resized axis");
  }
  for (int64_t i = 0; i < nAxes; ++i) {
    if (sizes[i] < 0)
      return ctx.error("the output dimension " + Twine(axes[i]) + " would be negative (" +
                       Twine(sizes[i]) + ")");
    if (failed(ctx.checkConstantSize(sizes[i], "the index map of axis " + Twine(axes[i]))))
      return failure();
  }
  // An empty input or an axis resized to nothing: an empty result (nothing
  // to interpolate from, or to).
  SmallVector<int64_t> outShape(in.getShape());
  for (int64_t i = 0; i < nAxes; ++i)
    outShape[axes[i]] = sizes[i];
  if (llvm::is_contained(in.getShape(), 0) || llvm::is_contained(outShape, 0)) {
    HostTensor empty{in.getElementType(), std::vector<int64_t>(outShape.begin(), outShape.end()),
                     {}, {}};
    ctx.setOutput(0, Importer::materialize(ctx.builder, empty, ctx.node.name() + ".empty"));
    return success();
  }

  Builder g{ctx};
  Value x = ctx.input(0);
  Value outside;
  for (int64_t i = 0; i < nAxes; ++i) {
    int64_t d = axes[i];
    AxisPlan p = planAxis(a, in.getDimSize(d), sizes[i], scales[i],
                          roi.empty() ? 0.0 : roi[i], roi.empty() ? 1.0 : roi[nAxes + i]);
    if (p.identity())
      continue;
    x = applyPlan(g, x, d, p, a.mode != "nearest");
    orOutsideMask(g, rank, d, p, "outside" + Twine(d), outside);
  }
  if (outside)
    x = g.where(outside, g.scalar(x, a.extrapolation), x);
  return g.result(x);
}

/// x (the node's input 0) padded along each axis by lo/hi positions (negative
/// ones crop) in `mode`; constant borders take `value` or `runtimeValue`.
LogicalResult padAxes(NodeContext &ctx, ArrayRef<int64_t> axes, ArrayRef<int64_t> los,
                      ArrayRef<int64_t> his, StringRef mode, double value, Value runtimeValue) {
  auto in = ctx.inputType(0);
  int64_t rank = in.getRank();
  Builder g{ctx};
  Value x = ctx.input(0);
  Value outside;
  // The result's shape first: an empty result is an empty constant; an
  // empty input has nothing to read, its result is the pad value throughout
  // (constant mode).
  SmallVector<int64_t> outShape(in.getShape());
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t d = axes[i], lo = los[i], hi = his[i];
    if (lo < -kMaxTensorElements || lo > kMaxTensorElements || hi < -kMaxTensorElements ||
        hi > kMaxTensorElements)
      return ctx.error("pads of axis " + Twine(d) + " (" + Twine(lo) + ", " + Twine(hi) +
                       ") pass 2^40");
    outShape[d] += lo + hi;
    if (outShape[d] < 0)
      return ctx.error("pads remove more than dimension " + Twine(d) + " holds");
  }
  int64_t total = 1; // (saturating past 2^40: checkConstantSize refuses it)
  for (int64_t d : outShape)
    total = d == 0 || total == 0       ? 0
            : total > kMaxTensorElements / d ? kMaxTensorElements + 1
                                             : total * d;
  if (total == 0 || llvm::is_contained(in.getShape(), 0)) {
    if (total > 0 && mode != "constant")
      return ctx.error("cannot pad an empty dimension in " + mode.str() +
                       " mode (there is nothing to repeat)");
    if (failed(ctx.checkConstantSize(total, "the padded result")))
      return failure();
    if (total > 0 && runtimeValue) {
      Value v = g.reshape(runtimeValue, SmallVector<int64_t>(rank, 1));
      x = g.expand(v, outShape);
    } else {
      HostTensor fill{in.getElementType(), std::vector<int64_t>(outShape.begin(), outShape.end()),
                      std::vector<double>(total, value), {}};
      x = Importer::materialize(ctx.builder, fill, ctx.node.name() + ".fill");
    }
    if (!g.ok({x}))
      return failure();
    ctx.setOutput(0, x);
    return success();
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t d = axes[i], lo = los[i], hi = his[i], n = in.getDimSize(d);
    if (lo == 0 && hi == 0)
      continue;
    int64_t out = n + lo + hi;
    if (mode == "reflect" && n > 1 && (lo >= n || hi >= n))
      return ctx.error("reflect pads must be smaller than the dimension (" + Twine(n) + ")");
    if (failed(ctx.checkConstantSize(out, "the index map of axis " + Twine(d))))
      return failure();
    AxisPlan p;
    p.in = n;
    p.out = out;
    p.outside.assign(out, false);
    p.idx.assign(1, std::vector<int64_t>(out));
    p.w.assign(1, std::vector<double>(out, 1.0));
    for (int64_t j = 0; j < out; ++j) {
      int64_t src = j - lo;
      if (src < 0 || src >= n) {
        if (mode == "constant") {
          p.outside[j] = true;
          src = std::clamp<int64_t>(src, 0, n - 1);
        } else if (mode == "edge") {
          src = std::clamp<int64_t>(src, 0, n - 1);
        } else if (mode == "wrap") {
          src = ((src % n) + n) % n;
        } else { // reflect: period 2(n-1), the edge not repeated
          int64_t period = std::max<int64_t>(2 * (n - 1), 1);
          src = ((src % period) + period) % period;
          if (src >= n)
            src = period - src;
        }
      }
      p.idx[0][j] = src;
    }
    x = applyPlan(g, x, d, p, false);
    orOutsideMask(g, rank, d, p, "border" + Twine(d), outside);
  }
  if (outside) {
    Value v = runtimeValue ? g.reshape(runtimeValue, {}) : g.scalar(x, value);
    x = g.where(outside, v, x);
  }
  if (!g.ok({x}))
    return failure();
  ctx.setOutput(0, x);
  return success();
}

/// Pad: per padded axis, a gather whose indices map each output position
/// to its source (edge: clamped, reflect: mirrored without the edge, wrap:
/// periodic, constant: clamped and masked).
LogicalResult convertPad(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  int64_t rank = in.getRank();
  std::string mode = ctx.attrString("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
    return ctx.error("mode must be constant, edge, reflect or wrap, not '" + mode + "'");
  std::vector<int64_t> pads;
  double value = 0;
  Value runtimeValue;
  if (ctx.opset < 11) {
    pads = ctx.attrInts("pads").value_or(std::vector<int64_t>{});
    value = ctx.attrFloat("value", 0.0f);
  } else {
    if (const HostTensor *p = ctx.hostInput(1))
      for (double v : p->values)
        pads.push_back(hostInt(v));
    if (ctx.hasInput(2)) {
      if (ctx.inputType(2).getNumElements() != 1)
        return ctx.error("constant_value must be a scalar");
      if (const HostTensor *c = ctx.hostInput(2))
        value = c->values.empty() ? 0.0 : c->values[0];
      else
        runtimeValue = ctx.input(2);
    }
  }
  std::optional<std::vector<int64_t>> given;
  if (ctx.opset >= 18 && ctx.hasInput(3)) {
    if (const HostTensor *a = ctx.hostInput(3)) {
      given.emplace();
      for (double v : a->values)
        given->push_back(hostInt(v));
    }
  }
  auto axesOr = axesOrAll(ctx, given, rank);
  if (failed(axesOr))
    return failure();
  std::vector<int64_t> axes = *axesOr;
  int64_t nAxes = static_cast<int64_t>(axes.size());
  // (Axes at run time: every axis a candidate.)
  if (ctx.opset >= 11 && (!ctx.hostInput(1) || (ctx.opset >= 18 && ctx.hasInput(3) && !given)))
    return padAtRunTime(ctx, axes, mode, value, runtimeValue); // (data-dependent sizes)
  if (static_cast<int64_t>(pads.size()) != 2 * nAxes)
    return ctx.error("expects " + Twine(2 * nAxes) + " pads (a begin and an end per axis), got " +
                     Twine(pads.size()));
  std::vector<int64_t> lo(pads.begin(), pads.begin() + nAxes), hi(pads.begin() + nAxes, pads.end());
  return padAxes(ctx, axes, lo, hi, mode, value, runtimeValue);
}

/// CenterCropPad: each listed axis cropped or zero-padded to its target
/// size around the centre (the extra element, if any, at the end).
LogicalResult convertCenterCropPad(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  const HostTensor *shapeT = ctx.hostInput(1);
  auto axesOr = axesOrAll(ctx, ctx.attrInts("axes"), in.getRank());
  if (failed(axesOr))
    return failure();
  std::vector<int64_t> axes = *axesOr;
  if (!shapeT)
    return centerCropPadAtRunTime(ctx, axes); // (data-dependent sizes)
  if (static_cast<int64_t>(shapeT->values.size()) != static_cast<int64_t>(axes.size()))
    return ctx.error("expects one target size per axis");
  std::vector<int64_t> lo, hi;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t n = in.getDimSize(axes[i]), want = hostInt(shapeT->values[i]);
    if (want <= 0)
      return ctx.error("target sizes must be positive");
    // crop: begin at (n - want) / 2 (a negative pad); pad: (want - n) / 2 before
    int64_t begin = want < n ? -((n - want) / 2) : (want - n) / 2;
    lo.push_back(begin);
    hi.push_back(want - n - begin);
  }
  return padAxes(ctx, axes, lo, hi, "constant", 0.0, Value());
}

} // namespace

/// ConvTranspose with stride = kernel (2-D, one group, no pads, dilation or
/// output padding) as a 1x1 convolution to M*kh*kw channels -- channel
/// (m, a, b) holds tap (a, b) of output channel m -- and a pixel shuffle.
/// The weight [C, M, kh, kw] becomes [M*kh*kw, C, 1, 1] (on the host when
/// it is an initializer), the bias repeats per tap.
static LogicalResult convTransposeAsShuffle(NodeContext &ctx, Builder &g, int64_t C,
                                            int64_t M, ArrayRef<int64_t> kernel) {
  auto in = ctx.inputType(0);
  int64_t N = in.getDimSize(0), H = in.getDimSize(2), W = in.getDimSize(3);
  int64_t kh = kernel[0], kw = kernel[1], taps = kh * kw;
  OpBuilder &b = ctx.builder;
  Value w;
  const HostTensor *hw = ctx.hostInput(1);
  if (hw && !hw->fromSymbolicShape && hw->evaluable()) {
    HostTensor t = *hw;
    t.shape = {M * taps, C, 1, 1};
    int64_t n = hw->numElements();
    size_t es = hw->raw.empty() || n == 0 ? 0 : hw->raw.size() / n;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < taps; ++k) {
          int64_t src = (c * M + m) * taps + k, dst = (m * taps + k) * C + c;
          if (es)
            std::memcpy(&t.raw[dst * es], &hw->raw[src * es], es);
          else if (!hw->values.empty())
            t.values[dst] = hw->values[src];
        }
    w = Importer::materialize(b, t, ctx.node.name() + ".weight_taps");
  } else {
    w = g.reshape(g.transpose(g.reshape(ctx.input(1), {C, M * taps}), {1, 0}),
                  {M * taps, C, 1, 1});
  }
  // The bias per (m, tap): repeated on the host, or added after the shuffle.
  Value bias, lateBias;
  if (ctx.hasInput(2)) {
    const HostTensor *hb = ctx.hostInput(2);
    if (hb && !hb->fromSymbolicShape && hb->evaluable() && hb->numElements() == M) {
      HostTensor t = *hb;
      t.shape = {M * taps};
      size_t es = hb->raw.empty() || M == 0 ? 0 : hb->raw.size() / M;
      if (es)
        t.raw.assign(M * taps * es, 0);
      else
        t.values.assign(M * taps, 0.0);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t k = 0; k < taps; ++k) {
          if (es)
            std::memcpy(&t.raw[(m * taps + k) * es], &hb->raw[m * es], es);
          else if (!hb->values.empty())
            t.values[m * taps + k] = hb->values[m];
        }
      bias = Importer::materialize(b, t, ctx.node.name() + ".bias_taps");
    } else {
      lateBias = ctx.input(2);
    }
  }
  Value x = ctx.input(0);
  if (!g.ok({x, w}))
    return failure();
  Value y = g.take(ctx.create<kiln::ConvOp>(
      x, w, bias, b.getDenseI64ArrayAttr({1, 1}), b.getDenseI64ArrayAttr({0, 0, 0, 0}),
      b.getDenseI64ArrayAttr({1, 1}), b.getI64IntegerAttr(1)));
  // [N, M, kh, kw, H, W] -> [N, M, H, kh, W, kw] -> [N, M, H*kh, W*kw].
  y = g.reshape(g.transpose(g.reshape(y, {N, M, kh, kw, H, W}), {0, 1, 4, 2, 5, 3}),
                {N, M, H * kh, W * kw});
  if (lateBias)
    y = g.add(y, g.reshape(lateBias, {1, M, 1, 1}));
  return g.result(y);
}

/// ConvTranspose: the input spread out along each spatial axis (every
/// stride-th position of a zero tensor, shifted by the padding: a gather with
/// constant indices and a zero mask), then a stride-1 convolution with the
/// weight's in/out channels swapped per group and its taps reversed.
/// out[o] = sum over i, k with i*s + k*d - padBegin = o of x[i] * w[k], so
/// with z[j] = x[(j - P) / s] where that divides (P = (K-1)*d - padBegin),
/// out[o] = sum over k' of z[o + k'*d] * w[K-1-k'].
LogicalResult convertConvTranspose(NodeContext &ctx) {
  auto in = ctx.inputType(0), wt = ctx.inputType(1);
  int64_t rank = in.getRank();
  if (rank < 3 || rank > 5 || wt.getRank() != rank)
    return ctx.error("only 1-D, 2-D and 3-D transposed convolution (rank-3, 4 or 5 input "
                     "and weight) is supported; the input has rank " + Twine(rank));
  if (!llvm::isa<FloatType>(in.getElementType()))
    return ctx.error("expects a floating-point input");
  size_t nsp = rank - 2;
  int64_t group = ctx.attrInt("group", 1);
  int64_t C = in.getDimSize(1), Mg = wt.getDimSize(1);
  if (!ctx.hostInput(0) && !ctx.hostInput(1) &&
      ctx.requireEqual(ctx.input(1), 0, ctx.input(0), 1))
    return failure(); // the import restarts with the symbol fixed
  if (group < 1 || C % group || wt.getDimSize(0) != C)
    return ctx.error("the weight has " + Twine(wt.getDimSize(0)) + " input channels; the "
                     "input has " + Twine(C) + " in " + Twine(group) + " group(s)");
  std::vector<int64_t> kernel(wt.getShape().begin() + 2, wt.getShape().end());
  if (auto k = ctx.attrInts("kernel_shape"); k && *k != kernel)
    return ctx.error("kernel_shape does not match the weight's shape");
  auto strides = spatialInts(ctx, "strides", nsp), dil = spatialInts(ctx, "dilations", nsp),
       outPad = spatialInts(ctx, "output_padding", nsp, 0);
  if (failed(strides) || failed(dil) || failed(outPad))
    return failure();
  for (size_t i = 0; i < nsp; ++i)
    if (in.getDimSize(2 + i) == 0)
      return ctx.error("the input's spatial dimensions must not be empty");
  for (size_t i = 0; i < nsp; ++i)
    if ((*strides)[i] < 1 || (*dil)[i] < 1 || (*outPad)[i] < 0 || kernel[i] < 1)
      return ctx.error("strides, dilations and kernel sizes must be positive, "
                       "output_padding not negative");
  std::string autoPad = ctx.attrString("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER")
    return ctx.error("unknown auto_pad '" + autoPad + "'");
  auto givenPads = ctx.attrInts("pads");
  auto outShape = ctx.attrInts("output_shape");
  if (outShape && outShape->size() == static_cast<size_t>(rank))
    outShape->erase(outShape->begin(), outShape->begin() + 2); // N and C given too
  if (outShape && outShape->size() != nsp)
    return ctx.error("output_shape has " + Twine(outShape->size()) + " values for " +
                     Twine(nsp) + " spatial dimension(s)");
  // Pads and output sizes as the ONNX reference computes them.
  std::vector<int64_t> lo(nsp, 0), hi(nsp, 0), out(nsp);
  for (size_t i = 0; i < nsp; ++i) {
    int64_t n = in.getDimSize(2 + i), s = (*strides)[i];
    int64_t natural = s * (n - 1) + (*outPad)[i] + (kernel[i] - 1) * (*dil)[i] + 1;
    bool derive = !givenPads && (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER" || outShape);
    if (derive) {
      out[i] = outShape ? (*outShape)[i] : n * s;
      int64_t total = natural - out[i];
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2); // floor division
      if (autoPad == "SAME_UPPER") {
        lo[i] = half;
        hi[i] = total - half;
      } else {
        lo[i] = total - half;
        hi[i] = half;
      }
    } else {
      if (givenPads) {
        if (givenPads->size() != 2 * nsp)
          return ctx.error("expects " + Twine(2 * nsp) + " pads, got " +
                           Twine(givenPads->size()));
        lo[i] = (*givenPads)[i];
        hi[i] = (*givenPads)[nsp + i];
      }
      out[i] = outShape ? (*outShape)[i] : natural - lo[i] - hi[i];
    }
    if (out[i] < 1 || checkedElements({out[i], (kernel[i] - 1) * (*dil)[i] + 1}) < 0)
      return ctx.error("spatial dimension " + Twine(i) + " of the output would be " +
                       Twine(out[i]));
  }

  Builder g{ctx};
  OpBuilder &b = ctx.builder;
  if (nsp == 2 && group == 1) {
    // Stride = kernel, no pads or dilation (U-Nets' 2x2 stride-2 up
    // convolutions): output pixel (i*kh + a, j*kw + b) is x[:, :, i, j] . w[:,
    // :, a, b], so one 1x1 convolution to M*kh*kw channels, then the taps
    // moved into place (a pixel shuffle) -- no spread input, 1/(kh*kw) of
    // its flops.
    bool tiles = true;
    for (size_t i = 0; i < nsp; ++i)
      tiles = tiles && (*strides)[i] == kernel[i] && (*dil)[i] == 1 && lo[i] == 0 &&
              hi[i] == 0 && out[i] == in.getDimSize(2 + i) * kernel[i];
    if (tiles)
      return convTransposeAsShuffle(ctx, g, C, Mg, kernel);
  }
  Value x = ctx.input(0), w;
  // The input spread out: z[j] = x[(j - P) / s], zero elsewhere.
  Value zero;
  for (size_t i = 0; i < nsp; ++i) {
    int64_t n = in.getDimSize(2 + i), s = (*strides)[i], span = (kernel[i] - 1) * (*dil)[i];
    int64_t P = span - lo[i], len = out[i] + span;
    if (failed(ctx.checkConstantSize(len, "the spread input's axis " + Twine(2 + i))))
      return failure();
    AxisPlan p;
    p.in = n;
    p.out = len;
    p.idx.assign(1, std::vector<int64_t>(len, 0));
    p.w.assign(1, std::vector<double>(len, 1.0));
    p.outside.assign(len, true);
    for (int64_t j = 0; j < len; ++j) {
      int64_t t = j - P;
      if (t >= 0 && t % s == 0 && t / s < n) {
        p.idx[0][j] = t / s;
        p.outside[j] = false;
      }
    }
    if (p.identity())
      continue;
    x = applyPlan(g, x, 2 + i, p, false);
    orOutsideMask(g, rank, 2 + i, p, "spread" + Twine(i), zero);
  }
  if (zero)
    x = g.where(zero, g.scalar(x, 0.0), x);
  // The weight [C, M/G, k...] as [M, C/G, k...] with reversed taps: on the
  // host when it is known at import (an initializer: no kernels, no arena),
  // else as run-time ops.
  int64_t Cg = C / group;
  SmallVector<int64_t> split{group, Cg, Mg}, oihw{group * Mg, Cg};
  split.append(kernel.begin(), kernel.end());
  oihw.append(kernel.begin(), kernel.end());
  const HostTensor *hw = ctx.hostInput(1);
  bool hostWeight = hw && !hw->fromSymbolicShape && hw->evaluable();
  if (hostWeight) {
    // Reversing every tap axis of a row-major [k...] block reverses its
    // flat index.
    int64_t taps = 1;
    for (int64_t k : kernel)
      taps *= k;
    HostTensor t = *hw;
    t.shape.assign(oihw.begin(), oihw.end());
    int64_t n = hw->numElements();
    size_t es = hw->raw.empty() || n == 0 ? 0 : hw->raw.size() / n;
    for (int64_t gi = 0; gi < group; ++gi)
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t m = 0; m < Mg; ++m)
          for (int64_t k = 0; k < taps; ++k) {
            int64_t src = ((gi * Cg + c) * Mg + m) * taps + k;
            int64_t dst = ((gi * Mg + m) * Cg + c) * taps + (taps - 1 - k);
            if (es)
              std::memcpy(&t.raw[dst * es], &hw->raw[src * es], es);
            else if (!hw->values.empty())
              t.values[dst] = hw->values[src];
          }
    w = Importer::materialize(b, t, ctx.node.name() + ".weight_flipped");
  }
  SmallVector<int64_t> perm{0, 2, 1};
  for (size_t i = 0; i < nsp; ++i)
    perm.push_back(3 + i);
  if (!hostWeight)
    w = g.reshape(g.transpose(g.reshape(ctx.input(1), split), perm), oihw);
  for (size_t i = 0; i < nsp && !hostWeight; ++i) {
    if (kernel[i] == 1)
      continue;
    std::vector<double> rev(kernel[i]);
    for (int64_t k = 0; k < kernel[i]; ++k)
      rev[k] = static_cast<double>(kernel[i] - 1 - k);
    Value idx = hostConstant(g, b.getIntegerType(64), {kernel[i]}, rev, "flip" + Twine(i));
    w = g.ok({w}) ? g.take(ctx.create<kiln::GatherOp>(w, idx, b.getI64IntegerAttr(2 + i)))
                  : Value();
  }
  if (nsp == 3) {
    if (!g.ok({x, w}))
      return failure();
    return ctx.setResult(buildConv3d(ctx, x, w, ctx.input(2), {1, 1, 1}, {0, 0, 0, 0, 0, 0},
                                     *dil, group));
  }
  std::vector<int64_t> st(2, 1), pads(4, 0), dl(2, 1);
  if (nsp == 1) { // 1-D as 2-D of height 1
    auto unit = [&](Value v) {
      if (!g.ok({v}))
        return Value();
      SmallVector<int64_t> sh(g.shape(v));
      sh.insert(sh.begin() + 2, 1);
      return g.reshape(v, sh);
    };
    x = unit(x);
    w = unit(w);
    dl[1] = (*dil)[0];
  } else {
    dl = *dil;
  }
  if (!g.ok({x, w}))
    return failure();
  Value y = g.take(ctx.create<kiln::ConvOp>(x, w, ctx.input(2), b.getDenseI64ArrayAttr(st),
                                            b.getDenseI64ArrayAttr(pads),
                                            b.getDenseI64ArrayAttr(dl),
                                            b.getI64IntegerAttr(group)));
  if (nsp == 1 && g.ok({y})) {
    SmallVector<int64_t> sh(g.shape(y));
    sh.erase(sh.begin() + 2);
    y = g.reshape(y, sh);
  }
  return g.result(y);
}

/// GridSample: every output point reads the input at the position its grid
/// entry names (normalized to [-1, 1], x first), found at run time: per
/// spatial axis the denormalized coordinate (rounded for nearest; outside
/// the borders clamped or reflected by padding_mode), then its taps (1, 2 or
/// 4: nearest, linear, cubic with Keys' A = -0.75) with weights; every
/// combination of taps is one kiln.gather_elements over the flattened
/// spatial dimensions, weighted and summed. Taps outside the input read 0
/// (zeros), the edge (border) or their mirror image (reflection), as the
/// ONNX reference does.
LogicalResult convertGridSample(NodeContext &ctx) {
  auto xT = ctx.inputType(0), gT = ctx.inputType(1);
  int64_t rank = xT.getRank(), nsp = rank - 2;
  if ((rank != 4 && rank != 5) || gT.getRank() != rank || gT.getDimSize(0) != xT.getDimSize(0) ||
      gT.getDimSize(rank - 1) != nsp)
    return ctx.error("expects an (N, C, H, W) or (N, C, D, H, W) input and an (N, ..., " +
                     Twine(nsp) + ") grid");
  if (!llvm::isa<FloatType>(xT.getElementType()) || !llvm::isa<FloatType>(gT.getElementType()))
    return ctx.error("expects floating-point input and grid");
  std::string mode = ctx.attrString("mode", ctx.opset >= 20 ? "linear" : "bilinear");
  if (mode == "bilinear")
    mode = "linear";
  if (mode == "bicubic")
    mode = "cubic";
  if (mode != "linear" && mode != "nearest" && mode != "cubic")
    return ctx.error("unknown mode '" + mode + "'");
  if (mode == "cubic" && nsp == 3)
    return ctx.error("cubic mode takes a 4-D input");
  std::string pad = ctx.attrString("padding_mode", "zeros");
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    return ctx.error("unknown padding_mode '" + pad + "'");
  bool align = ctx.attrInt("align_corners", 0) != 0;

  Builder g{ctx};
  OpBuilder &b = ctx.builder;
  int64_t N = xT.getDimSize(0), C = xT.getDimSize(1), P = 1, S = 1;
  SmallVector<int64_t> outShape{N, C};
  for (int64_t i = 1; i < rank - 1; ++i) {
    P *= gT.getDimSize(i);
    outShape.push_back(gT.getDimSize(i));
  }
  for (int64_t i = 2; i < rank; ++i) {
    if (xT.getDimSize(i) == 0)
      return ctx.error("the input's spatial dimensions must not be empty");
    S *= xT.getDimSize(i);
  }
  // Coordinate arithmetic in f32 (f64 for f64 models).
  Type ft = xT.getElementType().isF64() ? Type(b.getF64Type()) : Type(b.getF32Type());
  Type i64 = b.getIntegerType(64);
  Value grid = g.cast(ctx.input(1), ft);
  auto c = [&](Value like, double v) { return g.scalar(like, v); };
  auto clampTo = [&](Value v, double lo, double hi) {
    return g.bin<kiln::MinOp>(g.bin<kiln::MaxOp>(v, c(v, lo)), c(v, hi));
  };
  // Mirror v into [lo, hi] (reflection padding; the reference's rule).
  auto reflect = [&](Value v, double lo, double hi) {
    double range = hi - lo;
    if (range <= 0)
      return clampTo(v, lo, hi);
    Value below = g.cmp("lt", v, c(v, lo));
    Value d = g.where(below, g.sub(c(v, lo), v), g.sub(v, c(v, hi)));
    Value n = g.un<kiln::FloorOp>(g.div(d, c(d, range)));
    Value r = g.sub(d, g.mul(n, c(n, range)));
    Value half = g.un<kiln::FloorOp>(g.mul(n, c(n, 0.5)));
    Value even = g.cmp("eq", g.sub(n, g.mul(half, c(half, 2.0))), c(n, 0.0));
    Value fromLo = g.add(c(r, lo), r), fromHi = g.sub(c(r, hi), r);
    Value inBelow = g.where(even, fromLo, fromHi), inAbove = g.where(even, fromHi, fromLo);
    Value out = g.bin<kiln::OrOp>(below, g.cmp("gt", v, c(v, hi)));
    return g.where(out, g.where(below, inBelow, inAbove), v);
  };

  struct Tap {
    Value index;  // i64 [N, P], inside the input
    Value weight; // ft [N, P], null for 1
  };
  std::vector<std::vector<Tap>> taps(nsp);
  for (int64_t i = 0; i < nsp; ++i) {
    int64_t L = xT.getDimSize(2 + i);
    double lo = align ? 0.0 : -0.5, hi = align ? L - 1.0 : L - 0.5;
    SmallVector<int64_t> off(rank, 0), sizes(gT.getShape()), ones(rank, 1);
    off[rank - 1] = nsp - 1 - i; // the grid lists x (the last axis) first
    sizes[rank - 1] = 1;
    Value n = g.reshape(g.slice(grid, off, sizes, ones), {N, P});
    Value x = align ? g.mul(g.add(n, c(n, 1.0)), c(n, (L - 1) / 2.0))
                    : g.sub(g.mul(g.add(n, c(n, 1.0)), c(n, L / 2.0)), c(n, 0.5));
    if (mode == "nearest")
      x = g.un<kiln::RoundOp>(x);
    if (pad != "zeros") {
      Value out = g.bin<kiln::OrOp>(g.cmp("lt", x, c(x, lo)), g.cmp("gt", x, c(x, hi)));
      x = g.where(out, pad == "border" ? clampTo(x, 0.0, L - 1.0) : reflect(x, lo, hi), x);
    }
    // A tap at (integral) position t with weight w.
    auto addTap = [&](Value t, Value w) {
      Value valid;
      if (pad == "zeros")
        valid = g.bin<kiln::AndOp>(g.cmp("ge", t, c(t, 0.0)), g.cmp("lt", t, c(t, L)));
      else if (pad == "reflection")
        t = g.un<kiln::FloorOp>(reflect(t, lo, hi)); // the reference truncates (>= 0 here)
      Value idx = g.cast(clampTo(t, 0.0, L - 1.0), i64);
      if (valid) {
        Value v = g.cast(valid, ft);
        w = w ? g.mul(w, v) : v;
      }
      taps[i].push_back({idx, w});
    };
    if (mode == "nearest") {
      // (the reference truncates toward zero: x is integral unless reflected)
      Value t = g.where(g.cmp("lt", x, c(x, 0.0)), g.un<kiln::CeilOp>(x), g.un<kiln::FloorOp>(x));
      addTap(t, Value());
      continue;
    }
    Value x0 = g.un<kiln::FloorOp>(x), f = g.sub(x, x0);
    if (mode == "linear") {
      addTap(x0, g.sub(c(f, 1.0), f));
      addTap(g.add(x0, c(x0, 1.0)), f);
      continue;
    }
    const double A = -0.75;
    auto far = [&](Value t) { // ((A t - 5A) t + 8A) t - 4A, for 1 <= t <= 2
      return g.sub(g.mul(g.add(g.mul(g.sub(g.mul(t, c(t, A)), c(t, 5 * A)), t), c(t, 8 * A)), t),
                   c(t, 4 * A));
    };
    auto near = [&](Value t) { // ((A + 2) t - (A + 3)) t t + 1, for 0 <= t <= 1
      return g.add(g.mul(g.mul(g.sub(g.mul(t, c(t, A + 2)), c(t, A + 3)), t), t), c(t, 1.0));
    };
    Value oneMinus = g.sub(c(f, 1.0), f);
    Value w[4] = {far(g.add(f, c(f, 1.0))), near(f), near(oneMinus),
                  far(g.sub(c(f, 2.0), f))};
    for (int k = 0; k < 4; ++k)
      addTap(g.add(x0, c(x0, k - 1.0)), w[k]);
  }

  // Every combination of taps: a gather over the flattened spatial axes.
  Value xf = g.reshape(ctx.input(0), {N, C, S});
  Value acc;
  std::vector<size_t> pick(nsp, 0);
  while (true) {
    Value flat, w;
    int64_t stride = S;
    for (int64_t i = 0; i < nsp; ++i) {
      stride /= xT.getDimSize(2 + i);
      const Tap &t = taps[i][pick[i]];
      Value part = stride == 1 ? t.index : g.mul(t.index, c(t.index, stride));
      flat = flat ? g.add(flat, part) : part;
      if (t.weight)
        w = w ? g.mul(w, t.weight) : t.weight;
    }
    Value idx = g.expand(g.reshape(flat, {N, 1, P}), {N, C, P});
    Value v = g.ok({xf, idx}) ? g.take(ctx.create<kiln::GatherElementsOp>(
                                    xf, idx, b.getI64IntegerAttr(2)))
                              : Value();
    if (w)
      v = g.mul(v, g.cast(g.reshape(w, {N, 1, P}), xT.getElementType()));
    acc = acc ? g.add(acc, v) : v;
    int64_t i = nsp - 1;
    for (; i >= 0; --i) {
      if (++pick[i] < taps[i].size())
        break;
      pick[i] = 0;
    }
    if (i < 0)
      break;
  }
  return g.result(g.reshape(acc, outShape));
}

void registerIndexMapConverters(llvm::StringMap<Converter> &t) {
  t["GridSample"] = convertGridSample;
  t["Pad"] = convertPad;
  t["CenterCropPad"] = convertCenterCropPad;
  t["Resize"] = [](NodeContext &c) { return convertResize(c, false); };
  t["Upsample"] = [](NodeContext &c) { return convertResize(c, true); };
  t["ConvTranspose"] = convertConvTranspose;
}

} // namespace kiln::onnx_import
