//===- Sampler.cpp - the next token from a step's logits ------------------===//
#include "Sampler.h"

#include <algorithm>
#include <cmath>

namespace kiln::rt {

double Sampler::uniform() {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

int64_t Sampler::next(const float *logits, int64_t vocab) {
  if (temperature <= 0.0f) {
    // Greedy: the first largest (NaN never wins).
    int64_t best = -1;
    for (int64_t v = 0; v < vocab; ++v)
      if (logits[v] > -INFINITY && (best < 0 || logits[v] > logits[best]))
        best = v;
    return best;
  }
  // Candidates by scaled logit, largest first (ties: the lower token).
  candidates.clear();
  for (int64_t v = 0; v < vocab; ++v)
    if (logits[v] > -INFINITY)
      candidates.push_back({static_cast<double>(logits[v]) / temperature, v});
  if (candidates.empty())
    return -1;
  auto larger = [](const std::pair<double, int64_t> &a, const std::pair<double, int64_t> &b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  size_t keep = candidates.size();
  if (topK > 0 && static_cast<size_t>(topK) < keep) {
    keep = static_cast<size_t>(topK);
    std::partial_sort(candidates.begin(), candidates.begin() + keep, candidates.end(), larger);
    candidates.resize(keep);
  } else {
    std::sort(candidates.begin(), candidates.end(), larger);
  }
  // Softmax weights (relative to the largest), then the nucleus: the fewest
  // leading candidates whose probabilities reach top_p.
  double top = candidates[0].first, sum = 0.0;
  for (auto &c : candidates) {
    c.first = std::exp(c.first - top);
    sum += c.first;
  }
  if (topP > 0.0f && topP < 1.0f) {
    double reach = static_cast<double>(topP) * sum, run = 0.0;
    size_t n = 0;
    while (n < keep && run < reach)
      run += candidates[n++].first;
    keep = std::max<size_t>(n, 1);
    sum = 0.0;
    for (size_t k = 0; k < keep; ++k)
      sum += candidates[k].first;
  }
  double u = uniform() * sum, run = 0.0;
  for (size_t k = 0; k < keep; ++k) {
    run += candidates[k].first;
    if (u < run)
      return candidates[k].second;
  }
  return candidates[keep - 1].second;
}

} // namespace kiln::rt
