//===- HostEval.h - evaluating ops on import-time tensors -------*- C++ -*-===//
#ifndef KILN_FRONTENDS_ONNX_HOSTEVAL_H
#define KILN_FRONTENDS_ONNX_HOSTEVAL_H

#include "frontends/onnx/NodeContext.h"

#include <cmath>
#include <optional>

namespace kiln::onnx_import {

/// Row-major strides of `shape`.
inline std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/// Elementwise `fn` with numpy broadcasting; integer results truncate.
inline std::optional<HostTensor> hostBinary(const HostTensor &a,
                                            const HostTensor &b,
                                            double (*fn)(double, double)) {
  size_t rank = std::max(a.shape.size(), b.shape.size());
  std::vector<int64_t> out(rank), sa(rank, 0), sb(rank, 0);
  auto as = stridesOf(a.shape), bs = stridesOf(b.shape);
  for (size_t i = 0; i < rank; ++i) {
    int64_t ia = static_cast<int64_t>(i) - (rank - a.shape.size());
    int64_t ib = static_cast<int64_t>(i) - (rank - b.shape.size());
    int64_t da = ia < 0 ? 1 : a.shape[ia], db = ib < 0 ? 1 : b.shape[ib];
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[i] = da == 1 ? db : da;
    if (ia >= 0 && da != 1) sa[i] = as[ia];
    if (ib >= 0 && db != 1) sb[i] = bs[ib];
  }
  HostTensor r;
  r.elementType = a.elementType;
  r.shape = out;
  if (!r.evaluable())
    return std::nullopt;
  int64_t n = r.numElements();
  r.values.resize(n);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t oa = 0, ob = 0;
    for (size_t i = 0; i < rank; ++i) {
      oa += idx[i] * sa[i];
      ob += idx[i] * sb[i];
    }
    double v = fn(a.values[oa], b.values[ob]);
    r.values[e] = r.isInteger() ? std::trunc(v) : v;
    for (int64_t i = static_cast<int64_t>(rank) - 1; i >= 0; --i) {
      if (++idx[i] < out[i])
        break;
      idx[i] = 0;
    }
  }
  return r;
}

/// Elementwise `fn` of one tensor; integer results truncate.
inline HostTensor hostUnary(const HostTensor &a, double (*fn)(double)) {
  HostTensor r;
  r.elementType = a.elementType;
  r.shape = a.shape;
  r.values.reserve(a.values.size());
  for (double v : a.values)
    r.values.push_back(r.isInteger() ? std::trunc(fn(v)) : fn(v));
  return r;
}

/// How hostReduce combines the elements it reduces.
enum class HostReduction { Sum, Mean, Max, Min, Prod };

/// `a` reduced over `axes` (sorted, distinct), kept as size 1 with `keep`;
/// integer results truncate. (Shape arithmetic: the ReduceMax of a
/// constant list of sizes.)
inline HostTensor hostReduce(const HostTensor &a, const std::vector<int64_t> &axes, bool keep,
                             HostReduction how) {
  std::vector<bool> reduced(a.shape.size(), false);
  for (int64_t d : axes)
    reduced[d] = true;
  std::vector<int64_t> kept(a.shape.size()); // the result's shape with keepdims
  for (size_t d = 0; d < a.shape.size(); ++d)
    kept[d] = reduced[d] ? 1 : a.shape[d];
  HostTensor r;
  r.elementType = a.elementType;
  for (size_t d = 0; d < a.shape.size(); ++d)
    if (keep || !reduced[d])
      r.shape.push_back(kept[d]);
  int64_t n = 1, count = 1;
  for (size_t d = 0; d < kept.size(); ++d) {
    n *= kept[d];
    if (reduced[d])
      count *= a.shape[d];
  }
  double init = how == HostReduction::Max    ? -INFINITY
                : how == HostReduction::Min  ? INFINITY
                : how == HostReduction::Prod ? 1.0
                                             : 0.0;
  r.values.assign(n, init);
  auto inStrides = stridesOf(a.shape), outStrides = stridesOf(kept);
  for (size_t i = 0; i < a.values.size(); ++i) {
    int64_t at = 0, rest = static_cast<int64_t>(i);
    for (size_t d = 0; d < a.shape.size(); ++d) {
      int64_t c = rest / inStrides[d];
      rest %= inStrides[d];
      if (!reduced[d])
        at += c * outStrides[d];
    }
    double &acc = r.values[at];
    double v = a.values[i];
    switch (how) {
    case HostReduction::Sum:
    case HostReduction::Mean:
      acc += v;
      break;
    case HostReduction::Prod:
      acc *= v;
      break;
    case HostReduction::Max:
      acc = std::isnan(v) || v > acc ? v : acc;
      break;
    case HostReduction::Min:
      acc = std::isnan(v) || v < acc ? v : acc;
      break;
    }
  }
  for (double &v : r.values) {
    if (how == HostReduction::Mean)
      v = count ? v / double(count) : NAN;
    if (r.isInteger())
      v = std::trunc(v);
  }
  return r;
}

} // namespace kiln::onnx_import

#endif // KILN_FRONTENDS_ONNX_HOSTEVAL_H
