//===- Sampler.h - the next token from a step's logits --------------------===//
//
// Greedy choice, or sampling with temperature, top-k and top-p from a
// splitmix64 stream: the same seed gives the same tokens on every machine
// (python/kiln/runtime.py's reference sampler in the tests follows these
// steps exactly).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_GENERATE_SAMPLER_H
#define KILN_RUNTIME_GENERATE_SAMPLER_H

#include <cstdint>
#include <utility>
#include <vector>

namespace kiln::rt {

class Sampler {
public:
  Sampler(float temperature, int32_t topK, float topP, uint64_t seed)
      : temperature(temperature), topK(topK), topP(topP), state(seed) {}

  /// The next token, or -1 when no logit is a number above -inf.
  int64_t next(const float *logits, int64_t vocab);

private:
  /// splitmix64: a uniform double in [0, 1) from the top 53 bits.
  double uniform();

  float temperature;
  int32_t topK;
  float topP;
  uint64_t state;
  std::vector<std::pair<double, int64_t>> candidates;
};

} // namespace kiln::rt

#endif
