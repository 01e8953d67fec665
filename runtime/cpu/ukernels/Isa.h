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

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

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

/// The deepest k block of the products on packed weights that ask for deep
/// ones (KILN_UK_DEEP_K; the bf16 ones always): 128 bytes per k (f32) or
/// per pair of k (bf16) of a 32-column panel, in a quarter of the core's
/// L2 -- 2048 on 1 MiB, 1 MiB where the size is unknown -- the rest of L2
/// left to A's rows and C's tiles.
inline int64_t deepKCap() {
  static const int64_t cap = [] {
    long l2 = 0;
#if defined(_SC_LEVEL2_CACHE_SIZE)
    l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    if (l2 <= 0)
      l2 = 1 << 20;
    int64_t k = l2 / 4 / 128;
    return k < 256 ? 256 : k > 4096 ? 4096 : k;
  }();
  return cap;
}

/// The depth of the deep k blocks over `depth` (k, or bf16 pairs of k): all
/// of it up to deepKCap, else blocks of equal depth no deeper.
inline int64_t deepBlock(int64_t depth) {
  int64_t cap = deepKCap(), blocks = depth <= cap ? 1 : (depth + cap - 1) / cap;
  return (depth + blocks - 1) / blocks;
}

} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_UKERNELS_ISA_H
