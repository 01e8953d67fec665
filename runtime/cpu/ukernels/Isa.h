//===- Isa.h - which vector path the ukernels run --------------*- C++ -*-===//
//
// Every ukernel file has a portable path and, on x86-64, AVX2+FMA and
// AVX-512 ones; each picks one at load time with chooseIsa(): the widest
// the CPU has, or the one KILN_UKERNEL names (portable, avx2, avx512) where
// the CPU has it, so the tests run every path this machine can.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_UKERNELS_ISA_H
#define KILN_RUNTIME_CPU_UKERNELS_ISA_H

#include <cstdlib>
#include <cstring>

namespace kiln::rt {

enum class Isa { Portable, Avx2, Avx512 };

/// The path to run; `avx2Needs16c`: the AVX2 path also converts halves
/// (F16C).
inline Isa chooseIsa(bool avx2NeedsF16c = false) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  bool has512 = __builtin_cpu_supports("avx512f");
  bool has2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
              (!avx2NeedsF16c || __builtin_cpu_supports("f16c"));
  if (const char *force = std::getenv("KILN_UKERNEL")) {
    if (std::strcmp(force, "portable") == 0)
      return Isa::Portable;
    if (std::strcmp(force, "avx2") == 0 && has2)
      return Isa::Avx2;
    if (std::strcmp(force, "avx512") == 0 && has512)
      return Isa::Avx512;
  }
  if (has512)
    return Isa::Avx512;
  if (has2)
    return Isa::Avx2;
#else
  (void)avx2NeedsF16c;
#endif
  return Isa::Portable;
}

} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_UKERNELS_ISA_H
