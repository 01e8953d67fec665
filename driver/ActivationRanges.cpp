//===- ActivationRanges.cpp - an activation's int8 range from samples -----===//
#include "driver/ActivationRanges.h"

#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace kiln::calibrate {

std::optional<RangeMethod> parseRangeMethod(const std::string &text, std::string &error) {
  llvm::StringRef t(text);
  RangeMethod m;
  if (t == "minmax")
    return m;
  if (t == "entropy") {
    m.kind = RangeMethod::Entropy;
    return m;
  }
  if (t.consume_front("percentile")) {
    m.kind = RangeMethod::Percentile;
    if (t.empty())
      return m;
    double p = 0;
    if (t.consume_front(":") && !t.getAsDouble(p) && p > 50 && p <= 100) {
      m.percentile = p;
      return m;
    }
  }
  error = "--calibrate-method: '" + text +
          "' is not minmax, percentile, percentile:P (50 < P <= 100) or entropy";
  return std::nullopt;
}

std::string rangeMethodName(const RangeMethod &m) {
  switch (m.kind) {
  case RangeMethod::MinMax:
    return "minmax";
  case RangeMethod::Entropy:
    return "entropy";
  case RangeMethod::Percentile: {
    std::string p = std::to_string(m.percentile);
    p.erase(p.find_last_not_of('0') + 1);
    if (!p.empty() && p.back() == '.')
      p.pop_back();
    return "percentile:" + p;
  }
  }
  return "minmax";
}

namespace {

/// The threshold on |x| whose 128-level quantization of the magnitudes'
/// histogram is closest (least KL divergence) to the clipped histogram.
float entropyThreshold(const std::vector<float> &values, float amax) {
  constexpr int kBins = 2048, kLevels = 128;
  std::vector<double> hist(kBins, 0.0);
  double width = amax / kBins;
  for (float v : values)
    hist[std::min<int>(kBins - 1, static_cast<int>(std::fabs(v) / width))] += 1;
  double bestKl = std::numeric_limits<double>::infinity();
  int best = kBins;
  std::vector<double> p(kBins), q(kBins), beyond(kBins + 1, 0.0);
  for (int b = kBins - 1; b >= 0; --b)
    beyond[b] = beyond[b + 1] + hist[b];
  for (int i = kLevels; i <= kBins; ++i) {
    // P: the first i bins, the mass beyond clipped into the last.
    std::copy(hist.begin(), hist.begin() + i, p.begin());
    p[i - 1] += beyond[i];
    // Q: the first i bins (without the clipped mass) merged into kLevels
    // levels of i / kLevels bins (the last takes the rest), each level's
    // count spread evenly over the bins where P is not zero.
    int merged = i / kLevels;
    for (int level = 0; level < kLevels; ++level) {
      int b0 = level * merged, b1 = level == kLevels - 1 ? i : b0 + merged;
      double sum = 0;
      int used = 0;
      for (int b = b0; b < b1; ++b) {
        sum += hist[b];
        used += p[b] > 0;
      }
      for (int b = b0; b < b1; ++b)
        q[b] = p[b] > 0 ? sum / used : 0.0;
    }
    double ps = 0, qs = 0;
    for (int b = 0; b < i; ++b)
      ps += p[b], qs += q[b];
    if (ps <= 0 || qs <= 0)
      continue;
    double kl = 0;
    for (int b = 0; b < i; ++b) {
      if (p[b] <= 0)
        continue;
      double pp = p[b] / ps, qq = q[b] / qs;
      kl += pp * std::log(pp / std::max(qq, 1e-6)); // (Q smoothed where it is 0)
    }
    if (kl < bestKl) {
      bestKl = kl;
      best = i;
    }
  }
  return static_cast<float>(std::min<double>(amax, best * width));
}

} // namespace

std::pair<float, float> activationRange(std::vector<float> &values, const RangeMethod &m) {
  values.erase(std::remove_if(values.begin(), values.end(),
                              [](float v) { return !std::isfinite(v); }),
               values.end());
  if (values.empty())
    return {INFINITY, -INFINITY};
  auto [mn, mx] = std::minmax_element(values.begin(), values.end());
  float lo = *mn, hi = *mx;
  if (m.kind == RangeMethod::Percentile) {
    size_t n = values.size();
    double f = m.percentile / 100.0;
    auto at = [&](size_t rank) {
      std::nth_element(values.begin(), values.begin() + rank, values.end());
      return values[rank];
    };
    hi = at(std::min(n - 1, static_cast<size_t>(std::ceil(f * (n - 1)))));
    lo = at(static_cast<size_t>(std::floor((1.0 - f) * (n - 1))));
  } else if (m.kind == RangeMethod::Entropy) {
    float amax = std::max(std::fabs(lo), std::fabs(hi));
    if (amax > 0) {
      float t = entropyThreshold(values, amax);
      lo = std::max(lo, -t);
      hi = std::min(hi, t);
    }
  }
  return {lo, hi};
}

} // namespace kiln::calibrate
