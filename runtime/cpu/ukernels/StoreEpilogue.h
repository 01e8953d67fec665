//===- StoreEpilogue.h - what a ukernel applies as it stores --*- C++ -*-===//
//
// kiln_uk_sgemm_pb_ep, kiln_uk_sgemm_pbr_ep and kiln_uk_winograd_f23 take a
// convolution's simple epilogue with their arguments -- the bias's address
// (0: none), lo and hi (-inf and +inf: no clamp) -- and apply it to each
// output as they store it: min(max(y + bias[o], lo), hi), a NaN kept (as
// the code generator's maximumf/minimumf would).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_UKERNELS_STOREEPILOGUE_H
#define KILN_RUNTIME_CPU_UKERNELS_STOREEPILOGUE_H

#include <cmath>
#include <cstdint>

namespace kiln::rt {

struct StoreEpilogue {
  const float *bias = nullptr;
  float lo = 0, hi = 0;
  bool clamp = false;
  // Which bounds clamp (a ReLU: lo only), so that vector code skips the
  // other's VMINPS or VMAXPS.
  bool clampLo = false, clampHi = false;

  /// From a ukernel's arguments.
  static StoreEpilogue fromArgs(int64_t bias, float lo, float hi) {
    StoreEpilogue ep;
    ep.bias = reinterpret_cast<const float *>(bias);
    ep.lo = lo, ep.hi = hi;
    ep.clampLo = !(lo == -INFINITY);
    ep.clampHi = !(hi == INFINITY);
    ep.clamp = ep.clampLo || ep.clampHi;
    return ep;
  }
  bool on() const { return bias || clamp; }
  /// Output y of column (channel) o, finished.
  float apply(float y, int64_t o) const {
    if (bias)
      y += bias[o];
    if (clamp) {
      y = y < lo ? lo : y; // (a NaN compares false: kept)
      y = y > hi ? hi : y;
    }
    return y;
  }
};

} // namespace kiln::rt

#endif
