//===- ConvertGenerators.cpp - tensors generated at import ----------------===//
//
// Generators whose inputs are known at import time, evaluated here into
// host tensors: Size, ConstantOfShape, Range, EyeLike, the Hann, Hamming and
// Blackman windows, and NonZero and Unique of constants.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/CompositeBuilder.h"
#include "frontends/onnx/DataDependentSizes.h"
#include "frontends/onnx/HostEval.h"
#include "frontends/onnx/ImporterImpl.h"
#include "frontends/onnx/NodeContext.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
namespace kiln::onnx_import {
namespace {

LogicalResult convertSize(NodeContext &ctx) {
  HostTensor h;
  h.elementType = ctx.builder.getIntegerType(64);
  h.values = {static_cast<double>(ctx.inputType(0).getNumElements())};
  ctx.setHostOutput(0, std::move(h));
  return success();
}

LogicalResult convertConstantOfShape(NodeContext &ctx) {
  const HostTensor *shape = ctx.hostInput(0);
  HostTensor h;
  h.elementType = ctx.builder.getF32Type();
  double value = 0;
  if (const auto *a = ctx.attr("value")) {
    auto t = ctx.imp.hostTensorFromProto(a->t(), "ConstantOfShape '" + ctx.node.name() + "'");
    if (failed(t))
      return failure();
    if (t->numElements() != 1)
      return ctx.error("value must hold exactly one element");
    h.elementType = t->elementType;
    value = t->values[0];
  }
  if (!shape) { // (data-dependent sizes)
    HostTensor one = h;
    one.values = {value};
    return constantOfShapeAtRunTime(ctx, one);
  }
  for (double d : shape->values) {
    if (d < 0)
      return ctx.error("the shape has a negative dimension");
    h.shape.push_back(hostInt(d));
  }
  if (failed(ctx.checkConstantSize(h.numElements(), "the output")))
    return failure();
  h.values.assign(h.numElements(), value);
  ctx.setHostOutput(0, std::move(h));
  return success();
}

LogicalResult convertRange(NodeContext &ctx) {
  const HostTensor *s = ctx.hostInput(0), *l = ctx.hostInput(1), *d = ctx.hostInput(2);
  if (!s || !l || !d)
    return rangeAtRunTime(ctx); // (a data-dependent length)
  if (s->numElements() != 1 || l->numElements() != 1 || d->numElements() != 1)
    return ctx.error("start, limit and delta must be scalars");
  double start = s->values[0], limit = l->values[0], delta = d->values[0];
  if (delta == 0)
    return ctx.error("delta must not be 0");
  double count = std::ceil((limit - start) / delta);
  if (std::isnan(count))
    return ctx.error("start, limit and delta give no length");
  count = std::max(count, 0.0);
  if (count > static_cast<double>(maxConstantElements()))
    return ctx.error("the range would have " + Twine(static_cast<uint64_t>(std::min(count, 1e19))) + " elements, past " +
                     constantLimitText());
  HostTensor h;
  h.elementType = s->elementType;
  h.shape = {hostInt(count)};
  for (int64_t i = 0; i < h.shape[0]; ++i)
    h.values.push_back(start + static_cast<double>(i) * delta);
  ctx.setHostOutput(0, std::move(h));
  return success();
}

/// NonZero of a compile-time tensor: the indices of its non-zero elements,
/// [rank, count], row-major order (a run-time input has a data-dependent
/// output size: refused).
LogicalResult convertNonZero(NodeContext &ctx) {
  const HostTensor *x = ctx.hostInput(0);
  if (!x || x->fromSymbolicShape)
    return nonZeroAtRunTime(ctx); // (a data-dependent count)
  int64_t rank = x->shape.size();
  std::vector<std::vector<double>> coords(std::max<int64_t>(rank, 1));
  for (size_t i = 0; i < x->values.size(); ++i) {
    if (x->values[i] == 0)
      continue;
    int64_t rest = static_cast<int64_t>(i);
    for (int64_t d = rank - 1; d >= 0; --d) {
      coords[d].push_back(static_cast<double>(rest % x->shape[d]));
      rest /= x->shape[d];
    }
    if (rank == 0)
      coords[0].push_back(0.0);
  }
  HostTensor h{ctx.builder.getIntegerType(64),
               {std::max<int64_t>(rank, 1), static_cast<int64_t>(coords[0].size())}, {}, {}};
  for (auto &c : coords)
    h.values.insert(h.values.end(), c.begin(), c.end());
  if (h.shape[1] == 0)
    return ctx.error("the input has no non-zero element (an empty result)");
  ctx.setHostOutput(0, std::move(h));
  return success();
}

/// Unique of a compile-time tensor, folded (of a run-time one:
/// uniqueAtRunTime): the distinct elements (or slices along `axis`), sorted
/// or in order of first occurrence, with the first-occurrence indices, the
/// inverse indices and the counts.
LogicalResult convertUnique(NodeContext &ctx) {
  const HostTensor *x = ctx.hostInput(0);
  if (!x || x->fromSymbolicShape)
    return uniqueAtRunTime(ctx);
  bool sorted = ctx.attrInt("sorted", 1) != 0;
  std::vector<int64_t> shape = x->shape;
  int64_t axis = -1;
  if (ctx.attr("axis")) {
    auto a = normalizeAxis(ctx, ctx.attrInt("axis", 0), static_cast<int64_t>(shape.size()));
    if (failed(a))
      return failure();
    axis = *a;
  } else {
    shape = {static_cast<int64_t>(x->values.size())};
    axis = 0;
  }
  int64_t outer = 1, inner = 1, n = shape[axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  if (n == 0)
    return ctx.error("the input is empty");
  // Slice k along the axis, as a vector of values.
  auto slice = [&](int64_t k) {
    std::vector<double> v;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        v.push_back(x->values[(o * n + k) * inner + i]);
    return v;
  };
  std::vector<std::vector<double>> slices;
  for (int64_t k = 0; k < n; ++k)
    slices.push_back(slice(k));
  std::vector<int64_t> firsts; // first occurrence of each distinct slice
  for (int64_t k = 0; k < n; ++k) {
    bool seen = false;
    for (int64_t f : firsts)
      seen = seen || slices[f] == slices[k];
    if (!seen)
      firsts.push_back(k);
  }
  if (sorted)
    std::stable_sort(firsts.begin(), firsts.end(),
                     [&](int64_t a, int64_t b) { return slices[a] < slices[b]; });
  int64_t u = static_cast<int64_t>(firsts.size());
  Type i64 = ctx.builder.getIntegerType(64);
  HostTensor y{x->elementType, shape, {}, {}};
  y.shape[axis] = u;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t f : firsts)
      for (int64_t i = 0; i < inner; ++i)
        y.values.push_back(x->values[(o * n + f) * inner + i]);
  HostTensor idx{i64, {u}, {}, {}}, inv{i64, {n}, {}, {}}, counts{i64, {u}, {}, {}};
  for (int64_t f : firsts) {
    idx.values.push_back(static_cast<double>(f));
    counts.values.push_back(0.0);
  }
  for (int64_t k = 0; k < n; ++k)
    for (int64_t j = 0; j < u; ++j)
      if (slices[firsts[j]] == slices[k]) {
        inv.values.push_back(static_cast<double>(j));
        counts.values[j] += 1;
        break;
      }
  ctx.setHostOutput(0, std::move(y));
  HostTensor *outs[] = {&idx, &inv, &counts};
  for (int o = 1; o < ctx.node.output_size() && o <= 3; ++o)
    if (!ctx.node.output(o).empty())
      ctx.setHostOutput(o, std::move(*outs[o - 1]));
  return success();
}

LogicalResult convertEyeLike(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  if (in.getRank() != 2)
    return ctx.error("expects a rank-2 input");
  Type et = in.getElementType();
  if (ctx.attr("dtype")) {
    et = elementTypeOf(ctx.builder.getContext(), ctx.attrInt("dtype", 1));
    if (!et)
      return ctx.error("unsupported dtype " + Twine(ctx.attrInt("dtype", 1)));
  }
  int64_t k = ctx.attrInt("k", 0);
  HostTensor h;
  h.elementType = et;
  h.shape = {in.getDimSize(0), in.getDimSize(1)};
  for (int64_t i = 0; i < h.shape[0]; ++i)
    for (int64_t j = 0; j < h.shape[1]; ++j)
      h.values.push_back(j - i == k ? 1.0 : 0.0);
  ctx.setHostOutput(0, std::move(h));
  return success();
}

/// Hann, Hamming and Blackman windows (opset 17): a compile-time constant
/// of `size` values, w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N)
/// with N = size (periodic) or size - 1 (symmetric).
LogicalResult convertWindow(NodeContext &ctx, double a0, double a1, double a2) {
  const HostTensor *sizeT = ctx.hostInput(0);
  HostTensor h;
  h.elementType = elementTypeOf(ctx.builder.getContext(),
                                static_cast<int32_t>(ctx.attrInt("output_datatype", 1)));
  if (!h.elementType)
    return ctx.error("unsupported output_datatype " + Twine(ctx.attrInt("output_datatype", 1)));
  if (!sizeT)
    return windowAtRunTime(ctx, h.elementType, a0, a1, a2); // (a data-dependent length)
  if (sizeT->values.size() != 1)
    return ctx.error("size must be a scalar");
  int64_t size = hostInt(sizeT->values[0]);
  if (size < 0)
    return ctx.error("size " + Twine(size) + " is negative");
  if (failed(ctx.checkConstantSize(size, "the window")))
    return failure();
  h.shape = {size};
  double n1 = static_cast<double>(ctx.attrInt("periodic", 1) != 0 ? size : size - 1);
  for (int64_t i = 0; i < size; ++i) {
    double x = 2.0 * M_PI * static_cast<double>(i) / n1;
    double v = a0 - a1 * std::cos(x) + a2 * std::cos(2.0 * x);
    h.values.push_back(h.isInteger() ? std::trunc(v) : v);
  }
  ctx.setHostOutput(0, std::move(h));
  return success();
}

} // namespace

void registerGeneratorConverters(llvm::StringMap<Converter> &t) {
  t["HannWindow"] = [](NodeContext &c) { return convertWindow(c, 0.5, 0.5, 0.0); };
  t["HammingWindow"] = [](NodeContext &c) {
    return convertWindow(c, 25.0 / 46.0, 21.0 / 46.0, 0.0);
  };
  t["BlackmanWindow"] = [](NodeContext &c) { return convertWindow(c, 0.42, 0.5, 0.08); };
  t["EyeLike"] = convertEyeLike;
  t["NonZero"] = convertNonZero;
  t["Unique"] = convertUnique;
  t["Size"] = convertSize;
  t["ConstantOfShape"] = convertConstantOfShape;
  t["Range"] = convertRange;
}

} // namespace kiln::onnx_import
