// bench/peak: this machine's fp32 FMA peak per core, and the f32, bf16 and
// 8-bit ukernels' rates on hot data for the shapes Kiln's kernels use (one
// thread; the best of 30 calls); where the bf16 ukernels run on AMX, its
// TDPBF16PS peak too; on AVX512-VNNI, the VPDPBUSD peak; and the thread
// pool's cost per kernel launch.
//   build/bin/kiln-peak
#include "kiln/runtime.h"
#include "runtime/cpu/ThreadPool.h"

#include <algorithm>
#include <thread>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

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
  alignas(64) float t[16];
  __m512 s = acc[0];
  for (int i = 1; i < 24; ++i)
    s = _mm512_add_ps(s, acc[i]);
  _mm512_store_ps(t, s); // (GCC 12's _mm512_reduce_add_ps warns)
  float sum = 0;
  for (float v : t)
    sum += v;
  return sum;
}

// 24 independent VPDPBUSD chains on zmm8-31: the 8-bit peak (64
// multiply-adds each). (In asm: from intrinsics GCC copies each accumulator
// before its instruction, halving the rate.)
__attribute__((target("avx512f,avx512vnni"))) static float vnniChains(long n) {
  __m512i a = _mm512_set1_epi32(0x01020304), b = _mm512_set1_epi32(0x01ff01ff);
  for (long k = 0; k < n; ++k)
    __asm__ volatile(
#define KILN_DP(r) "vpdpbusd %[b], %[a], %%zmm" #r "\n\t"
        KILN_DP(8) KILN_DP(9) KILN_DP(10) KILN_DP(11) KILN_DP(12) KILN_DP(13) KILN_DP(14)
        KILN_DP(15) KILN_DP(16) KILN_DP(17) KILN_DP(18) KILN_DP(19) KILN_DP(20) KILN_DP(21)
        KILN_DP(22) KILN_DP(23) KILN_DP(24) KILN_DP(25) KILN_DP(26) KILN_DP(27) KILN_DP(28)
        KILN_DP(29) KILN_DP(30) KILN_DP(31)
#undef KILN_DP
        :
        : [a] "x"(a), [b] "x"(b)
        : "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16",
          "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25",
          "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31");
  return 0.0f;
}

/// The same on AVX2 + FMA (12 chains of 8 lanes), for machines without
/// AVX-512.
__attribute__((target("avx2,fma"))) static float fmaChains256(long n) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i)
    acc[i] = _mm256_set1_ps(static_cast<float>(i));
  __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
  for (long k = 0; k < n; ++k) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i)
      acc[i] = _mm256_fmadd_ps(a, acc[i], b);
  }
  alignas(32) float t[8];
  __m256 s = acc[0];
  for (int i = 1; i < 12; ++i)
    s = _mm256_add_ps(s, acc[i]);
  _mm256_store_ps(t, s);
  float sum = 0;
  for (float v : t)
    sum += v;
  return sum;
}
#endif

#if defined(__x86_64__) && defined(__linux__)
// The AMX bf16 peak: four independent TDPBF16PS chains on tmm0-3 (A and B
// tiles loaded once), each 16 x 16 x 32 multiply-adds. Only called where
// the bf16 ukernels chose AMX (so the tile state is granted).
static double amxPeak(long n) {
  struct alignas(64) {
    uint8_t palette = 1, start = 0, reserved[14] = {};
    uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
    uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
  } cfg;
  alignas(64) static uint16_t ones[16 * 32];
  for (auto &x : ones)
    x = 0x3f80;
  __asm__ volatile("ldtilecfg %0" ::"m"(cfg) : "memory");
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm4" ::"r"(ones), "r"(64L) : "memory");
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm6" ::"r"(ones), "r"(64L) : "memory");
  __asm__ volatile("tilezero %%tmm0\n\ttilezero %%tmm1\n\ttilezero %%tmm2\n\ttilezero %%tmm3" ::);
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i)
    __asm__ volatile("tdpbf16ps %%tmm6, %%tmm4, %%tmm0\n\t"
                     "tdpbf16ps %%tmm6, %%tmm4, %%tmm1\n\t"
                     "tdpbf16ps %%tmm6, %%tmm4, %%tmm2\n\t"
                     "tdpbf16ps %%tmm6, %%tmm4, %%tmm3" ::);
  double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  __asm__ volatile("tilerelease" ::: "memory");
  return n * 4.0 * 16 * 16 * 32 * 2 / t / 1e9;
}
#endif

/// 64-byte aligned storage, as Kiln's arena, constants and stack scratch
/// are: AMX tile rows that straddle two cache lines cost two loads (a third
/// of the ukernel's rate).
template <typename T> struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <typename U> Aligned64(const Aligned64<U> &) {}
  T *allocate(size_t n) {
    return static_cast<T *>(::operator new(n * sizeof(T), std::align_val_t(64)));
  }
  void deallocate(T *p, size_t) { ::operator delete(p, std::align_val_t(64)); }
  template <typename U> bool operator==(const Aligned64<U> &) const { return true; }
  template <typename U> bool operator!=(const Aligned64<U> &) const { return false; }
};
template <typename T> using AlignedVector = std::vector<T, Aligned64<T>>;

static double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int main() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  // The best of three (a VM's core can be preempted during one).
  auto best = [](auto chains, long n, double flopsPerStep) {
    double t = 1e9;
    for (int r = 0; r < 3; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      volatile float sink = chains(n);
      (void)sink;
      t = std::min(t, seconds(t0));
    }
    return n * flopsPerStep / t / 1e9;
  };
  if (__builtin_cpu_supports("avx512f"))
    std::printf("fp32 FMA peak (zmm, one core): %.1f GFLOP/s\n",
                best(fmaChains512, 10000000, 24.0 * 32));
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    std::printf("fp32 FMA peak (ymm, one core): %.1f GFLOP/s\n",
                best(fmaChains256, 20000000, 12.0 * 16));
  if (__builtin_cpu_supports("avx512vnni"))
    std::printf("int8 VPDPBUSD peak (zmm, one core): %.1f GOP/s\n",
                best(vnniChains, 5000000, 24.0 * 128));
#endif
  struct Shape { int M, N, K; } shapes[] = {
      {144, 196, 1152}, {144, 512, 576}, {96, 49, 4608}, {144, 3136, 64},
      {128, 256, 768}, {48, 64, 64}, {49, 64, 1024}, {144, 64, 256}};
  std::printf("ukernels: f32 %s, bf16 %s, 8-bit %s\n", kiln_uk_sgemm_impl(),
              kiln_uk_sbgemm_impl(), kiln_uk_q8gemm_impl());
#if defined(__x86_64__) && defined(__linux__)
  if (std::strcmp(kiln_uk_sbgemm_impl(), "amx") == 0)
    std::printf("AMX bf16 peak (TDPBF16PS, one core): %.1f GFLOP/s\n", amxPeak(2000000));
#endif
  for (Shape s : shapes) {
    // Operands of ones (bf16 0x3f80). (AMX's rate depends a little on the
    // values: mostly-zero tiles run faster than these.)
    int64_t Kp = (s.K + 1) / 2 * 2;
    AlignedVector<float> A(size_t(s.M) * s.K, 1.0f), B(size_t(s.K) * s.N, 1.0f),
        C(size_t(s.M) * s.N);
    AlignedVector<uint16_t> Ap(size_t(s.M) * Kp, 0x3f80),
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
    // 8-bit: u8 activations with a zero point, packed s8 weights (zeros:
    // the rate does not depend on the values).
    int64_t ldq = 64 * ((s.K + 3) / 4) + 64;
    AlignedVector<uint8_t> A8(size_t(s.M) * s.K, 3);
    AlignedVector<int8_t> B8(size_t(s.N + 15) / 16 * ldq, 0);
    AlignedVector<int32_t> C32(size_t(s.M) * s.N);
    double q8 = rate([&] {
      kiln_uk_q8gemm_pq(s.M, s.N, s.K, p(A8.data()), s.K, 128, p(B8.data()), ldq, 0,
                        p(C32.data()), s.N, 0);
    });
    std::printf("M=%d N=%d K=%d: kiln_uk_sgemm %.1f, kiln_uk_sbgemm_pa %.1f, "
                "kiln_uk_sbgemm_pb %.1f GFLOP/s, kiln_uk_q8gemm_pq %.1f GOP/s\n", s.M, s.N,
                s.K, f32, pa, pb, q8);
  }
  // The thread pool's cost per kernel launch: 8 empty workgroups on every
  // core (what a model's kernel pays beyond its work), median of 10 rounds.
  {
    int threads = static_cast<int>(std::thread::hardware_concurrency());
    kiln::rt::ThreadPool pool(threads < 1 ? 1 : threads);
    auto noop = [](void *const *, int64_t) {};
    for (int i = 0; i < 20000; ++i)
      pool.parallelFor(noop, nullptr, 8);
    std::vector<double> us;
    for (int r = 0; r < 10; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 20000; ++i)
        pool.parallelFor(noop, nullptr, 8);
      us.push_back(seconds(t0) / 20000 * 1e6);
    }
    std::sort(us.begin(), us.end());
    std::printf("thread pool: %.2f us per launch of 8 empty workgroups on %d threads\n", us[5],
                threads < 1 ? 1 : threads);
  }
  return 0;
}
