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
#include "runtime/cpu/ukernels/Isa.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

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

/// A's rows in groups of up to 5 (the callers have fewer than 6), each
/// through each(rows as a std::integral_constant, A's group, C's group).
template <typename Each>
inline void byRowGroups(int64_t M, const float *A, int64_t lda, float *C, int64_t ldc,
                        Each each) {
  for (int64_t i = 0; i < M; i += 5) {
    const float *a = A + i * lda;
    float *c = C + i * ldc;
    switch (M - i < 5 ? M - i : 5) {
    case 1: each(std::integral_constant<int, 1>{}, a, c); break;
    case 2: each(std::integral_constant<int, 2>{}, a, c); break;
    case 3: each(std::integral_constant<int, 3>{}, a, c); break;
    case 4: each(std::integral_constant<int, 4>{}, a, c); break;
    default: each(std::integral_constant<int, 5>{}, a, c); break;
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
  byRowGroups(M, A, lda, C, ldc, [&](auto rows, const float *a, float *c) {
    columns<decltype(rows)::value>(N, K, a, lda, B, ldb, c, ldc, acc);
  });
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
  byRowGroups(M, A, lda, C, ldc, [&](auto rows, const float *a, float *c) {
    columns2<decltype(rows)::value>(N, K, a, lda, B, ldb, c, ldc, acc);
  });
}
#endif

using SgemvFn = void (*)(int64_t, int64_t, int64_t, const float *, int64_t, const float *,
                         int64_t, float *, int64_t, bool);

SgemvFn selectSgemv() {
#if defined(__x86_64__)
  switch (kiln::rt::chooseIsa()) {
  case kiln::rt::Isa::Avx512:
    return sgemvAvx512;
  case kiln::rt::Isa::Avx2:
    return sgemvAvx2;
  case kiln::rt::Isa::Portable:
    break;
  }
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
