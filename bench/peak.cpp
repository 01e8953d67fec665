// bench/peak: this machine's fp32 FMA peak per core, and the f32 and bf16
// ukernels' rates on hot data for the shapes Kiln's kernels use (one thread;
// the best of 30 calls).
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
      {144, 196, 1152}, {144, 512, 576}, {96, 49, 4608}, {144, 3136, 64},
      {128, 256, 768}, {48, 64, 64}};
  std::printf("ukernels: f32 %s, bf16 %s\n", kiln_uk_sgemm_impl(), kiln_uk_sbgemm_impl());
  for (Shape s : shapes) {
    // Operands of ones (bf16 0x3f80): the rate does not depend on values.
    int64_t Kp = (s.K + 1) / 2 * 2;
    std::vector<float> A(size_t(s.M) * s.K, 1.0f), B(size_t(s.K) * s.N, 1.0f),
        C(size_t(s.M) * s.N);
    std::vector<uint16_t> Ap(size_t(s.M) * Kp, 0x3f80),
        Bp(size_t(s.N + 31) / 32 * 32 * Kp, 0x3f80);
    auto rate = [&](auto call) {
      double best = 1e9;
      for (int r = 0; r < 30; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        call();
        double t = seconds(t0);
        best = t < best ? t : best;
      }
      return 2.0 * s.M * s.N * s.K / best / 1e9;
    };
    auto p = [](const void *x) { return reinterpret_cast<int64_t>(x); };
    double f32 = rate([&] {
      kiln_uk_sgemm(s.M, s.N, s.K, p(A.data()), s.K, p(B.data()), s.N, p(C.data()), s.N, 0);
    });
    double pa = rate([&] {
      kiln_uk_sbgemm_pa(s.M, s.N, s.K, p(Ap.data()), Kp, p(B.data()), s.N, p(C.data()),
                        s.N, 0);
    });
    double pb = rate([&] {
      kiln_uk_sbgemm_pb(s.M, s.N, s.K, p(A.data()), s.K, p(Bp.data()), 32 * Kp, p(C.data()),
                        s.N, 0);
    });
    std::printf("M=%d N=%d K=%d: kiln_uk_sgemm %.1f, kiln_uk_sbgemm_pa %.1f, "
                "kiln_uk_sbgemm_pb %.1f GFLOP/s\n", s.M, s.N, s.K, f32, pa, pb);
  }
  return 0;
}
