// bench/peak: this machine's fp32 FMA peak per core, and the sgemm ukernel's
// rate on hot data for the shapes Kiln's kernels use.
//   build/bin/kiln-peak
#include "kiln/runtime.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>

// 24 independent FMA chains: enough to cover latency x ports on any x86.
__attribute__((target("avx512f"))) static float fmaChains512(long n) {
  __m512 acc[24];
  for (int i = 0; i < 24; ++i)
    acc[i] = _mm512_set1_ps(static_cast<float>(i));
  __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(0.001f);
  for (long k = 0; k < n; ++k) {
#pragma GCC unroll 24
    for (int i = 0; i < 24; ++i)
      acc[i] = _mm512_fmadd_ps(a, acc[i], b);
  }
  __m512 s = acc[0];
  for (int i = 1; i < 24; ++i)
    s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}
#endif

static double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int main() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    long n = 20000000;
    auto t0 = std::chrono::steady_clock::now();
    volatile float sink = fmaChains512(n);
    (void)sink;
    std::printf("fp32 FMA peak (zmm, one core): %.1f GFLOP/s\n", n * 24.0 * 32 / seconds(t0) / 1e9);
  }
#endif
  struct Shape { int M, N, K; } shapes[] = {
      {144, 196, 1152}, {128, 512, 576}, {144, 49, 4608}, {128, 384, 768}, {48, 64, 64}};
  for (Shape s : shapes) {
    std::vector<float> A(size_t(s.M) * s.K, 0.5f), B(size_t(s.K) * s.N, 0.25f),
        C(size_t(s.M) * s.N);
    double best = 1e9;
    for (int r = 0; r < 30; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      kiln_uk_sgemm(s.M, s.N, s.K, reinterpret_cast<int64_t>(A.data()), s.K,
                    reinterpret_cast<int64_t>(B.data()), s.N,
                    reinterpret_cast<int64_t>(C.data()), s.N, 0);
      double t = seconds(t0);
      best = t < best ? t : best;
    }
    std::printf("kiln_uk_sgemm M=%d N=%d K=%d: %.1f GFLOP/s\n", s.M, s.N, s.K,
                2.0 * s.M * s.N * s.K / best / 1e9);
  }
  return 0;
}
