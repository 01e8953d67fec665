//===- Sgemv.cpp - few-row products on streamed weights -------------------===//
//
// C[M x N] (+)= A[M x K] * B^T for M of 1 to 5 rows (a batch-1 classifier,
// an MLP at batch 1), B given as its N rows of K floats (nn.Linear's
// weight, or a MatMul's transposed at compile time). Every weight is used M
// times, so the product streams the weights once, at memory speed: each
// column is the dot products of its weight row with the M rows of A, and
// the row of the column PF ahead is prefetched into L2 while this one is
// read (the hardware prefetchers stop at every 4 KB page, and a 16 KB row
// crosses four). AVX-512, AVX2+FMA and portable paths, chosen by cpuid
// (KILN_UKERNEL forces one, as for the sgemm ukernels).
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

/// Columns ahead whose weight rows are prefetched (a row is K floats).
constexpr int64_t kAhead = 2;

void sgemvPortable(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *B,
                   int64_t ldb, float *C, int64_t ldc, bool acc) {
  for (int64_t j = 0; j < N; ++j) {
    const float *b = B + j * ldb;
    for (int64_t i = 0; i < M; ++i) {
      const float *a = A + i * lda;
      float s = 0.0f;
      for (int64_t k = 0; k < K; ++k)
        s += a[k] * b[k];
      C[i * ldc + j] = acc ? C[i * ldc + j] + s : s;
    }
  }
}

#if defined(__x86_64__)
/// One column: the M (<= 5) dot products of weight row b with A's rows,
/// 32 k at a time in two accumulators per row; prefetching the lines of
/// `ahead` (the row kAhead columns on) as it goes.
template <int M>
__attribute__((target("avx512f"))) inline void column(int64_t K, const float *A, int64_t lda,
                                                      const float *b, const char *ahead,
                                                      float *out) {
  __m512 s0[M], s1[M];
  for (int i = 0; i < M; ++i)
    s0[i] = s1[i] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    if (ahead) {
      _mm_prefetch(ahead + k * 4, _MM_HINT_T1);
      _mm_prefetch(ahead + k * 4 + 64, _MM_HINT_T1);
    }
    __m512 b0 = _mm512_loadu_ps(b + k), b1 = _mm512_loadu_ps(b + k + 16);
    for (int i = 0; i < M; ++i) {
      s0[i] = _mm512_fmadd_ps(_mm512_loadu_ps(A + i * lda + k), b0, s0[i]);
      s1[i] = _mm512_fmadd_ps(_mm512_loadu_ps(A + i * lda + k + 16), b1, s1[i]);
    }
  }
  for (; k < K; k += 16) {
    __mmask16 m = K - k >= 16 ? 0xffff : static_cast<__mmask16>((1u << (K - k)) - 1);
    __m512 b0 = _mm512_maskz_loadu_ps(m, b + k);
    for (int i = 0; i < M; ++i)
      s0[i] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, A + i * lda + k), b0, s0[i]);
  }
  for (int i = 0; i < M; ++i)
    out[i] = _mm512_reduce_add_ps(_mm512_add_ps(s0[i], s1[i]));
}

template <int M>
__attribute__((target("avx512f"))) void columns(int64_t N, int64_t K, const float *A,
                                                int64_t lda, const float *B, int64_t ldb,
                                                float *C, int64_t ldc, bool acc) {
  for (int64_t j = 0; j < N; ++j) {
    float out[M];
    const char *ahead =
        j + kAhead < N ? reinterpret_cast<const char *>(B + (j + kAhead) * ldb) : nullptr;
    column<M>(K, A, lda, B + j * ldb, ahead, out);
    for (int i = 0; i < M; ++i)
      C[i * ldc + j] = acc ? C[i * ldc + j] + out[i] : out[i];
  }
}

__attribute__((target("avx512f"))) void sgemvAvx512(int64_t M, int64_t N, int64_t K,
                                                    const float *A, int64_t lda,
                                                    const float *B, int64_t ldb, float *C,
                                                    int64_t ldc, bool acc) {
  // Rows in groups of up to 5 (the callers have fewer than 6).
  for (int64_t i = 0; i < M; i += 5) {
    const float *a = A + i * lda;
    float *c = C + i * ldc;
    switch (M - i < 5 ? M - i : 5) {
    case 1: columns<1>(N, K, a, lda, B, ldb, c, ldc, acc); break;
    case 2: columns<2>(N, K, a, lda, B, ldb, c, ldc, acc); break;
    case 3: columns<3>(N, K, a, lda, B, ldb, c, ldc, acc); break;
    case 4: columns<4>(N, K, a, lda, B, ldb, c, ldc, acc); break;
    default: columns<5>(N, K, a, lda, B, ldb, c, ldc, acc); break;
    }
  }
}
#endif

#if defined(__x86_64__)
/// The AVX2+FMA path: as column<M>, 16 k at a time in two ymm per row.
template <int M>
__attribute__((target("avx2,fma"))) void columns2(int64_t N, int64_t K, const float *A,
                                                  int64_t lda, const float *B, int64_t ldb,
                                                  float *C, int64_t ldc, bool acc) {
  for (int64_t j = 0; j < N; ++j) {
    const float *b = B + j * ldb;
    const char *ahead =
        j + kAhead < N ? reinterpret_cast<const char *>(B + (j + kAhead) * ldb) : nullptr;
    __m256 s0[M], s1[M];
    for (int i = 0; i < M; ++i)
      s0[i] = s1[i] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 16 <= K; k += 16) {
      if (ahead)
        _mm_prefetch(ahead + k * 4, _MM_HINT_T1);
      __m256 b0 = _mm256_loadu_ps(b + k), b1 = _mm256_loadu_ps(b + k + 8);
      for (int i = 0; i < M; ++i) {
        s0[i] = _mm256_fmadd_ps(_mm256_loadu_ps(A + i * lda + k), b0, s0[i]);
        s1[i] = _mm256_fmadd_ps(_mm256_loadu_ps(A + i * lda + k + 8), b1, s1[i]);
      }
    }
    for (int i = 0; i < M; ++i) {
      alignas(32) float lanes[8];
      _mm256_store_ps(lanes, _mm256_add_ps(s0[i], s1[i]));
      float s = 0.0f;
      for (float v : lanes)
        s += v;
      for (int64_t kk = k; kk < K; ++kk)
        s += A[i * lda + kk] * b[kk];
      C[i * ldc + j] = acc ? C[i * ldc + j] + s : s;
    }
  }
}

__attribute__((target("avx2,fma"))) void sgemvAvx2(int64_t M, int64_t N, int64_t K,
                                                  const float *A, int64_t lda, const float *B,
                                                  int64_t ldb, float *C, int64_t ldc,
                                                  bool acc) {
  for (int64_t i = 0; i < M; i += 5) {
    const float *a = A + i * lda;
    float *c = C + i * ldc;
    switch (M - i < 5 ? M - i : 5) {
    case 1: columns2<1>(N, K, a, lda, B, ldb, c, ldc, acc); break;
    case 2: columns2<2>(N, K, a, lda, B, ldb, c, ldc, acc); break;
    case 3: columns2<3>(N, K, a, lda, B, ldb, c, ldc, acc); break;
    case 4: columns2<4>(N, K, a, lda, B, ldb, c, ldc, acc); break;
    default: columns2<5>(N, K, a, lda, B, ldb, c, ldc, acc); break;
    }
  }
}
#endif

using SgemvFn = void (*)(int64_t, int64_t, int64_t, const float *, int64_t, const float *,
                         int64_t, float *, int64_t, bool);

SgemvFn selectSgemv() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  bool has512 = __builtin_cpu_supports("avx512f");
  bool has2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (const char *force = std::getenv("KILN_UKERNEL")) {
    if (std::strcmp(force, "portable") == 0)
      return sgemvPortable;
    if (std::strcmp(force, "avx2") == 0 && has2)
      return sgemvAvx2;
  }
  if (has512)
    return sgemvAvx512;
  if (has2)
    return sgemvAvx2;
#endif
  return sgemvPortable;
}

const SgemvFn sgemvChosen = selectSgemv();

} // namespace

extern "C" void kiln_uk_sgemv_t(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                                int64_t b, int64_t ldb, int64_t c, int64_t ldc,
                                int64_t accumulate) {
  if (M <= 0 || N <= 0)
    return;
  sgemvChosen(M, N, K, reinterpret_cast<const float *>(a), lda,
              reinterpret_cast<const float *>(b), ldb, reinterpret_cast<float *>(c), ldc,
              accumulate != 0);
}
