//===- Sbgemm.cpp - bf16 matrix-product ukernels, f32 accumulation --------===//
//
// C[M x N] (+)= A[M x K] * B[K x N] where one operand is bf16 weights packed
// at compile time and the other f32 activations, rounded to bf16 (nearest
// even) as they are packed here; products accumulate in f32. The bf16
// contractions of --precision=bf16 call these (kiln-lower-precision).
//
//   kiln_uk_sbgemm_pa: A packed (conv weights, NCHW: out = W x im2col),
//                      B f32 row-major.
//   kiln_uk_sbgemm_pb: A f32 row-major, B packed (matmul/gemm weights and
//                      NHWC conv weights: out = im2col x W).
//
// Implementations, chosen from cpuid on first use (KILN_UKERNEL=portable,
// avx2, avx512 or avx512bf16 forces one the CPU has; kiln_uk_sbgemm_impl()
// names it):
//   avx512bf16  VDPBF16PS on a 6 x 32 tile of C in 12 zmm: each instruction
//               multiplies 16 pairs of k, twice the MACs of an f32 FMA, from
//               half the bytes of weights;
//   avx512      the same tile and packing on AVX-512F alone: each pair split
//               into two f32 (a bf16 is an f32's top half) and two FMAs;
//   otherwise   the f32 fallback: the packed bf16 block widened to f32, the
//               other operand's block rounded to bf16 values, and the f32
//               ukernel (kiln_uk_sgemm) on them.
// All compute the same exact products; only the order of the f32 sums
// differs.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

/// f32 -> bf16 bits, round to nearest even (a NaN stays a quiet NaN).
inline uint32_t toBf16(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  if ((b & 0x7fffffffu) > 0x7f800000u)
    return (b >> 16) | 0x40u;
  return (b + 0x7fffu + ((b >> 16) & 1u)) >> 16;
}

inline float fromBf16(uint32_t h) {
  uint32_t b = h << 16;
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

inline float roundBf16(float x) { return fromBf16(toBf16(x)); }

// The f32 fallback works a block of k (and, for B, of columns) at a time,
// in scratch that each thread keeps: the packed bf16 block widened to f32,
// the other operand's block rounded to bf16 values, then the f32 ukernel.
constexpr int64_t kFallbackK = 256, kFallbackN = 512;
thread_local std::vector<float> scratchA, scratchB;

void sbgemmFallbackPa(int64_t M, int64_t N, int64_t K, const uint16_t *A, int64_t lda,
                      const float *B, int64_t ldb, float *C, int64_t ldc, bool acc) {
  int64_t groups = (M + 5) / 6;
  scratchA.resize(groups * 6 * kFallbackK);
  scratchB.resize(kFallbackK * kFallbackN);
  for (int64_t k0 = 0; k0 < K; k0 += kFallbackK) {
    int64_t kc = K - k0 < kFallbackK ? K - k0 : kFallbackK, kp = (kc + 1) / 2;
    // A's block straight into kiln_uk_sgemm_pa's layout (6-row groups,
    // k-major): pair p of row r holds k = 2p and 2p + 1.
    for (int64_t g = 0; g < groups; ++g) {
      const uint16_t *src = A + g * lda + k0 * 6;
      float *dst = scratchA.data() + g * 12 * kp;
      for (int64_t p = 0; p < kp; ++p)
        for (int r = 0; r < 6; ++r) {
          dst[p * 12 + r] = fromBf16(src[p * 12 + r * 2]);
          dst[p * 12 + 6 + r] = fromBf16(src[p * 12 + r * 2 + 1]);
        }
    }
    for (int64_t j0 = 0; j0 < N; j0 += kFallbackN) {
      int64_t nc = N - j0 < kFallbackN ? N - j0 : kFallbackN;
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t j = 0; j < nc; ++j)
          scratchB[k * nc + j] = roundBf16(B[(k0 + k) * ldb + j0 + j]);
      kiln_uk_sgemm_pa(M, nc, kc, reinterpret_cast<int64_t>(scratchA.data()), 12 * kp,
                       reinterpret_cast<int64_t>(scratchB.data()), nc,
                       reinterpret_cast<int64_t>(C + j0), ldc, acc || k0 > 0);
    }
  }
}

void sbgemmFallbackPb(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                      const uint16_t *B, int64_t ldb, float *C, int64_t ldc, bool acc) {
  scratchA.resize(M * kFallbackK);
  scratchB.resize(kFallbackK * kFallbackN);
  for (int64_t k0 = 0; k0 < K; k0 += kFallbackK) {
    int64_t kc = K - k0 < kFallbackK ? K - k0 : kFallbackK;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < kc; ++k)
        scratchA[i * kc + k] = roundBf16(A[i * lda + k0 + k]);
    for (int64_t j0 = 0; j0 < N; j0 += kFallbackN) { // (j0: a whole number of panels)
      int64_t nc = N - j0 < kFallbackN ? N - j0 : kFallbackN;
      // B's block row-major: panel q's pair p holds rows 2p and 2p + 1 of its
      // 32 columns.
      for (int64_t q = 0; q * 32 < nc; ++q) {
        const uint16_t *panel = B + (j0 / 32 + q) * ldb + k0 * 32;
        int64_t cols = nc - q * 32 < 32 ? nc - q * 32 : 32;
        for (int64_t k = 0; k < kc; ++k) {
          const uint16_t *pair = panel + (k / 2) * 64 + (k & 1);
          float *dst = scratchB.data() + k * nc + q * 32;
          for (int64_t j = 0; j < cols; ++j)
            dst[j] = fromBf16(pair[j * 2]);
        }
      }
      kiln_uk_sgemm(M, nc, kc, reinterpret_cast<int64_t>(scratchA.data()), kc,
                    reinterpret_cast<int64_t>(scratchB.data()), nc,
                    reinterpret_cast<int64_t>(C + j0), ldc, acc || k0 > 0);
    }
  }
}

#if defined(__x86_64__)
#define KILN_AVX512 __attribute__((target("avx512f")))

/// 16 f32 -> 16 bf16 bit patterns in the low halves of 32-bit lanes
/// (nearest even; NaNs stay quiet NaNs).
KILN_AVX512 inline __m512i toBf16x16(__m512 x) {
  __m512i b = _mm512_castps_si512(x);
  __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(
      _mm512_add_epi32(b, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  return _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(b, 16), _mm512_set1_epi32(0x40));
}

#define KILN_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define KILN_INIT(r)                                                           \
  __m512 x##r = acc ? _mm512_maskz_loadu_ps(m0, c[r]) : _mm512_setzero_ps();   \
  __m512 y##r = acc ? _mm512_maskz_loadu_ps(m1, c[r] + 16) : _mm512_setzero_ps();
#define KILN_STORE(r)                                                          \
  _mm512_mask_storeu_ps(c[r], m0, x##r);                                       \
  _mm512_mask_storeu_ps(c[r] + 16, m1, y##r);

/// One 6 x 32 tile: C rows c[0..5] (+)= the A pairs (a[r][kp * S]: row r,
/// k = 2kp and 2kp + 1) times the B panel (b[kp * 32 + j]: column j, the
/// same two k), for kp in [0, KP), with VDPBF16PS (AVX512-BF16). S is 6 for
/// packed A (rows interleaved) and 1 for rows packed apart. Tail rows write
/// to a discard row. (Called, not inlined: only this function needs
/// AVX512-BF16.)
template <int S>
__attribute__((target("avx512f,avx512bf16"), noinline)) void
tileDot(int64_t KP, const uint32_t *const a[6], const uint32_t *b, float *const c[6], bool acc,
        __mmask16 m0, __mmask16 m1) {
  KILN_ROWS(KILN_INIT)
  const uint32_t *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
  for (int64_t kp = 0; kp < KP; ++kp) {
    __m512bh b0 = (__m512bh)_mm512_loadu_si512(b + kp * 32);
    __m512bh b1 = (__m512bh)_mm512_loadu_si512(b + kp * 32 + 16);
#define KILN_DOT(r)                                                            \
  {                                                                            \
    __m512bh s = (__m512bh)_mm512_set1_epi32(static_cast<int>(a##r[kp * S]));  \
    x##r = _mm512_dpbf16_ps(x##r, s, b0);                                      \
    y##r = _mm512_dpbf16_ps(y##r, s, b1);                                      \
  }
    KILN_ROWS(KILN_DOT)
#undef KILN_DOT
  }
  KILN_ROWS(KILN_STORE)
}

/// The same tile on AVX-512F alone: each pair split into its two f32 values
/// (a bf16 is the top half of an f32), two FMAs where VDPBF16PS does one;
/// the products are exact either way, the sums round in f32.
template <int S>
KILN_AVX512 inline void tileSplit(int64_t KP, const uint32_t *const a[6], const uint32_t *b,
                                  float *const c[6], bool acc, __mmask16 m0, __mmask16 m1) {
  KILN_ROWS(KILN_INIT)
  const uint32_t *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4], *a5 = a[5];
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  for (int64_t kp = 0; kp < KP; ++kp) {
    __m512i p0 = _mm512_loadu_si512(b + kp * 32), p1 = _mm512_loadu_si512(b + kp * 32 + 16);
    __m512 b0e = _mm512_castsi512_ps(_mm512_slli_epi32(p0, 16));
    __m512 b0o = _mm512_castsi512_ps(_mm512_and_si512(p0, high));
    __m512 b1e = _mm512_castsi512_ps(_mm512_slli_epi32(p1, 16));
    __m512 b1o = _mm512_castsi512_ps(_mm512_and_si512(p1, high));
#define KILN_SPLIT(r)                                                          \
  {                                                                            \
    __m512i s = _mm512_set1_epi32(static_cast<int>(a##r[kp * S]));             \
    __m512 se = _mm512_castsi512_ps(_mm512_slli_epi32(s, 16));                 \
    __m512 so = _mm512_castsi512_ps(_mm512_and_si512(s, high));                \
    x##r = _mm512_fmadd_ps(so, b0o, _mm512_fmadd_ps(se, b0e, x##r));           \
    y##r = _mm512_fmadd_ps(so, b1o, _mm512_fmadd_ps(se, b1e, y##r));           \
  }
    KILN_ROWS(KILN_SPLIT)
#undef KILN_SPLIT
  }
  KILN_ROWS(KILN_STORE)
}
#undef KILN_ROWS
#undef KILN_INIT
#undef KILN_STORE

inline __mmask16 laneMask16(int64_t n) {
  return n >= 16 ? 0xffff : n <= 0 ? 0 : static_cast<__mmask16>((1u << n) - 1);
}

// Pairs of k per block: the B panel (KP x 32 pairs, 16 KiB) stays in L1.
constexpr int64_t kPairs = 128;

template <bool Dot>
KILN_AVX512 void sbgemm512Pa(int64_t M, int64_t N, int64_t K, const uint16_t *A, int64_t lda,
                             const float *B, int64_t ldb, float *C, int64_t ldc, bool acc) {
  alignas(64) uint32_t panel[kPairs * 32];
  alignas(64) float discard[32];
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t k0 = 0; k0 < K; k0 += 2 * kPairs) {
    int64_t kc = K - k0 < 2 * kPairs ? K - k0 : 2 * kPairs, kp = (kc + 1) / 2;
    bool accBlock = acc || k0 > 0;
    for (int64_t j = 0; j < N; j += 32) {
      int64_t n = N - j < 32 ? N - j : 32;
      __mmask16 m0 = laneMask16(n), m1 = laneMask16(n - 16);
      // Rows 2p and 2p + 1 of B (zero past K), rounded and interleaved.
      for (int64_t p = 0; p < kp; ++p) {
        const float *r0 = B + (k0 + 2 * p) * ldb + j;
        bool second = 2 * p + 1 < kc;
        for (int h = 0; h < 2; ++h) {
          __mmask16 m = h ? m1 : m0;
          __m512i lo = toBf16x16(_mm512_maskz_loadu_ps(m, r0 + 16 * h));
          __m512i hi = toBf16x16(second ? _mm512_maskz_loadu_ps(m, r0 + ldb + 16 * h) : zero);
          _mm512_store_si512(panel + p * 32 + 16 * h,
                             _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
        }
      }
      for (int64_t i = 0; i < M; i += 6) {
        float *c[6];
        const uint32_t *a[6];
        const uint32_t *group = reinterpret_cast<const uint32_t *>(A + (i / 6) * lda) + (k0 / 2) * 6;
        for (int r = 0; r < 6; ++r) {
          c[r] = i + r < M ? C + (i + r) * ldc + j : discard;
          a[r] = group + r;
        }
        if (Dot)
          tileDot<6>(kp, a, panel, c, accBlock, m0, m1);
        else
          tileSplit<6>(kp, a, panel, c, accBlock, m0, m1);
      }
    }
  }
}

thread_local std::vector<uint32_t> packedRows;

template <bool Dot>
KILN_AVX512 void sbgemm512Pb(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                             const uint16_t *B, int64_t ldb, float *C, int64_t ldc, bool acc) {
  alignas(64) float discard[32];
  // A's block as rows of bf16 pairs (kPairs apart), rounded: once per
  // block, read by every panel.
  packedRows.resize(M * kPairs + 16);
  uint32_t *ap = packedRows.data();
  for (int64_t k0 = 0; k0 < K; k0 += 2 * kPairs) {
    int64_t kc = K - k0 < 2 * kPairs ? K - k0 : 2 * kPairs, kp = (kc + 1) / 2;
    bool accBlock = acc || k0 > 0;
    for (int64_t i = 0; i < M; ++i) {
      const float *row = A + i * lda + k0;
      uint32_t *dst = ap + i * kPairs;
      // 16 floats (8 pairs) at a time: rounded into the low halves of 32-bit
      // lanes, narrowed to 16 bits in order (zero past the block).
      for (int64_t k = 0; k < kc; k += 16) {
        __m512 x = _mm512_maskz_loadu_ps(laneMask16(kc - k), row + k);
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst + k / 2),
                            _mm512_cvtepi32_epi16(toBf16x16(x)));
      }
    }
    for (int64_t j = 0; j < N; j += 32) {
      int64_t n = N - j < 32 ? N - j : 32;
      __mmask16 m0 = laneMask16(n), m1 = laneMask16(n - 16);
      const uint32_t *panel = reinterpret_cast<const uint32_t *>(B + (j / 32) * ldb) +
                              (k0 / 2) * 32;
      for (int64_t i = 0; i < M; i += 6) {
        float *c[6];
        const uint32_t *a[6];
        for (int r = 0; r < 6; ++r) {
          bool real = i + r < M;
          c[r] = real ? C + (i + r) * ldc + j : discard;
          a[r] = ap + (real ? i + r : i) * kPairs;
        }
        if (Dot)
          tileDot<1>(kp, a, panel, c, accBlock, m0, m1);
        else
          tileSplit<1>(kp, a, panel, c, accBlock, m0, m1);
      }
    }
  }
}
#undef KILN_AVX512
#endif

using PaFn = void (*)(int64_t, int64_t, int64_t, const uint16_t *, int64_t, const float *,
                      int64_t, float *, int64_t, bool);
using PbFn = void (*)(int64_t, int64_t, int64_t, const float *, int64_t, const uint16_t *,
                      int64_t, float *, int64_t, bool);

struct Impl {
  PaFn pa;
  PbFn pb;
  const char *name;
};

Impl selectSbgemm() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  bool has512 = __builtin_cpu_supports("avx512f");
  bool dot = has512 && __builtin_cpu_supports("avx512bf16");
  // KILN_UKERNEL forces a path the CPU has: avx512 the split pairs on
  // AVX-512F, portable or avx2 the f32 fallback on that f32 ukernel (tests
  // cover each).
  const char *force = std::getenv("KILN_UKERNEL");
  auto forced = [&](const char *name) { return force && std::strcmp(force, name) == 0; };
  bool f32Forced = forced("portable") || forced("avx2");
  if (dot && !f32Forced && !forced("avx512"))
    return {sbgemm512Pa<true>, sbgemm512Pb<true>, "avx512bf16"};
  if (has512 && !f32Forced)
    return {sbgemm512Pa<false>, sbgemm512Pb<false>, "avx512"};
#endif
  // The fallback runs on whichever f32 ukernel this process chose.
  const char *f32 = kiln_uk_sgemm_impl();
  const char *name = std::strcmp(f32, "avx512") == 0 ? "f32-avx512"
                     : std::strcmp(f32, "avx2") == 0 ? "f32-avx2"
                                                     : "f32-portable";
  return {sbgemmFallbackPa, sbgemmFallbackPb, name};
}

const Impl &chosen() {
  // On first use, not at load: the fallback names the f32 ukernel, which
  // another translation unit chooses at load.
  static const Impl impl = selectSbgemm();
  return impl;
}

/// An empty product: nothing to do, or C zeroed when K is 0. True when
/// there is nothing left for the ukernel.
bool empty(int64_t M, int64_t N, int64_t K, int64_t c, int64_t ldc, int64_t accumulate) {
  if (M <= 0 || N <= 0)
    return true;
  if (K > 0)
    return false;
  if (!accumulate)
    for (int64_t i = 0; i < M; ++i)
      std::memset(reinterpret_cast<float *>(c) + i * ldc, 0, N * sizeof(float));
  return true;
}

} // namespace

extern "C" void kiln_uk_sbgemm_pa(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                                  int64_t b, int64_t ldb, int64_t c, int64_t ldc,
                                  int64_t accumulate) {
  if (!empty(M, N, K, c, ldc, accumulate))
    chosen().pa(M, N, K, reinterpret_cast<const uint16_t *>(a), lda,
                reinterpret_cast<const float *>(b), ldb, reinterpret_cast<float *>(c), ldc,
                accumulate != 0);
}

extern "C" void kiln_uk_sbgemm_pb(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                                  int64_t b, int64_t ldb, int64_t c, int64_t ldc,
                                  int64_t accumulate) {
  if (!empty(M, N, K, c, ldc, accumulate))
    chosen().pb(M, N, K, reinterpret_cast<const float *>(a), lda,
                reinterpret_cast<const uint16_t *>(b), ldb, reinterpret_cast<float *>(c), ldc,
                accumulate != 0);
}

extern "C" const char *kiln_uk_sbgemm_impl() { return chosen().name; }
