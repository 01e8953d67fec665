/* The runtime checks' random operands: xorshift64, floats uniform in
 * [-1, 1), reproducible (uniform_seed picks another sequence). */
#ifndef KILN_TEST_RUNTIME_UNIFORM_H
#define KILN_TEST_RUNTIME_UNIFORM_H

#include <stdint.h>

static uint64_t uniform_state = 88172645463325252ull;

static inline void uniform_seed(uint64_t seed) { uniform_state = seed; }

static inline float uniform(void) {
  uniform_state ^= uniform_state << 13;
  uniform_state ^= uniform_state >> 7;
  uniform_state ^= uniform_state << 17;
  return (float)((uniform_state >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

#endif
