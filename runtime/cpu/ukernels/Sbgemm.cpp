//===- Sbgemm.cpp - bf16 matrix-product ukernels, f32 accumulation --------===//
//
// C[M x N] (+)= A[M x K] * B[K x N] where one operand is bf16 weights packed
// at compile time and the other f32 activations, rounded to bf16 (nearest
// even) as they are packed here; products accumulate in f32. The bf16
// contractions of --precision=bf16 call these (kiln-lower-precision).
//
//   kiln_uk_sbgemm_pa: A packed as bf16 rows (conv weights, NCHW: out =
//                      W x im2col), B f32 row-major.
//   kiln_uk_sbgemm_pb: A f32 row-major, B packed (matmul/gemm weights and
//                      NHWC conv weights: out = im2col x W).
//   kiln_uk_sbgemm_pb_a16: as _pb with A already bf16 rows (the NHWC
//                      conv's im2col rows, rounded as they are gathered).
//
// Implementations, chosen from cpuid on first use (KILN_UKERNEL=portable,
// avx2, avx512, avx512bf16 or amx forces one the CPU has;
// kiln_uk_sbgemm_impl() names it):
//   amx         TDPBF16PS on AMX tiles (Linux grants the tile state through
//               arch_prctl): C in 32 x 32 blocks of four 16 x 16 f32 tiles,
//               32 k per instruction; the f32 operand rounded straight into
//               tile layout, the packed one read in place;
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
#include "runtime/cpu/ukernels/Isa.h"
#include "runtime/cpu/ukernels/Scratch.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define KILN_HAVE_AMX 1
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
thread_local kiln::rt::ScratchBuffer scratchBufA, scratchBufB;

void sbgemmFallbackPa(int64_t M, int64_t N, int64_t K, const uint16_t *A, int64_t lda,
                      const float *B, int64_t ldb, float *C, int64_t ldc, bool acc) {
  int64_t groups = (M + 5) / 6;
  float *scratchA = scratchBufA.get<float>(groups * 6 * kFallbackK);
  float *scratchB = scratchBufB.get<float>(kFallbackK * kFallbackN);
  if (!scratchA || !scratchB)
    return; // (the run fails: Scratch.h)
  for (int64_t k0 = 0; k0 < K; k0 += kFallbackK) {
    int64_t kc = K - k0 < kFallbackK ? K - k0 : kFallbackK;
    // A's block widened into kiln_uk_sgemm_pa's layout (6-row groups,
    // k-major, rows past M zero).
    for (int64_t g = 0; g < groups; ++g) {
      float *dst = scratchA + g * 6 * kc;
      for (int r = 0; r < 6; ++r) {
        int64_t i = g * 6 + r;
        const uint16_t *src = A + i * lda + k0;
        for (int64_t k = 0; k < kc; ++k)
          dst[k * 6 + r] = i < M ? fromBf16(src[k]) : 0.0f;
      }
    }
    for (int64_t j0 = 0; j0 < N; j0 += kFallbackN) {
      int64_t nc = N - j0 < kFallbackN ? N - j0 : kFallbackN;
      for (int64_t k = 0; k < kc; ++k)
        for (int64_t j = 0; j < nc; ++j)
          scratchB[k * nc + j] = roundBf16(B[(k0 + k) * ldb + j0 + j]);
      kiln_uk_sgemm_pa(M, nc, kc, reinterpret_cast<int64_t>(scratchA), 6 * kc,
                       reinterpret_cast<int64_t>(scratchB), nc,
                       reinterpret_cast<int64_t>(C + j0), ldc, acc || k0 > 0);
    }
  }
}

/// The f32 fallback with B packed: A's rows of each k block written into
/// scratch as f32 bf16 values by rowsA(k0, kc, scratch), B's panels widened.
template <typename RowsA>
void fallbackPb(int64_t M, int64_t N, int64_t K, RowsA rowsA, const uint16_t *B, int64_t ldb,
                float *C, int64_t ldc, bool acc) {
  float *scratchA = scratchBufA.get<float>(M * kFallbackK);
  float *scratchB = scratchBufB.get<float>(kFallbackK * kFallbackN);
  if (!scratchA || !scratchB)
    return; // (the run fails: Scratch.h)
  for (int64_t k0 = 0; k0 < K; k0 += kFallbackK) {
    int64_t kc = K - k0 < kFallbackK ? K - k0 : kFallbackK;
    rowsA(k0, kc, scratchA);
    for (int64_t j0 = 0; j0 < N; j0 += kFallbackN) { // (j0: a whole number of panels)
      int64_t nc = N - j0 < kFallbackN ? N - j0 : kFallbackN;
      // B's block row-major: panel q's pair p holds rows 2p and 2p + 1 of its
      // 32 columns.
      for (int64_t q = 0; q * 32 < nc; ++q) {
        const uint16_t *panel = B + (j0 / 32 + q) * ldb + k0 * 32;
        int64_t cols = nc - q * 32 < 32 ? nc - q * 32 : 32;
        for (int64_t k = 0; k < kc; ++k) {
          const uint16_t *pair = panel + (k / 2) * 64 + (k & 1);
          float *dst = scratchB + k * nc + q * 32;
          for (int64_t j = 0; j < cols; ++j)
            dst[j] = fromBf16(pair[j * 2]);
        }
      }
      kiln_uk_sgemm(M, nc, kc, reinterpret_cast<int64_t>(scratchA), kc,
                    reinterpret_cast<int64_t>(scratchB), nc,
                    reinterpret_cast<int64_t>(C + j0), ldc, acc || k0 > 0);
    }
  }
}

void sbgemmFallbackPb(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                      const uint16_t *B, int64_t ldb, float *C, int64_t ldc, bool acc) {
  auto rounded = [&](int64_t k0, int64_t kc, float *dst) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < kc; ++k)
        dst[i * kc + k] = roundBf16(A[i * lda + k0 + k]);
  };
  fallbackPb(M, N, K, rounded, B, ldb, C, ldc, acc);
}

void sbgemmFallbackPbA16(int64_t M, int64_t N, int64_t K, const uint16_t *A, int64_t lda,
                         const uint16_t *B, int64_t ldb, float *C, int64_t ldc, bool acc) {
  auto widened = [&](int64_t k0, int64_t kc, float *dst) {
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < kc; ++k)
        dst[i * kc + k] = fromBf16(A[i * lda + k0 + k]);
  };
  fallbackPb(M, N, K, widened, B, ldb, C, ldc, acc);
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

/// One 6 x 32 tile: C rows c[0..5] (+)= the A pairs (a[r][kp]: row r,
/// k = 2kp and 2kp + 1) times the B panel (b[kp * 32 + j]: column j, the
/// same two k), for kp in [0, KP), with VDPBF16PS (AVX512-BF16). Tail rows
/// write to a discard row. (Called, not inlined: only this function needs
/// AVX512-BF16.)
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
    __m512bh s = (__m512bh)_mm512_set1_epi32(static_cast<int>(a##r[kp]));  \
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
    __m512i s = _mm512_set1_epi32(static_cast<int>(a##r[kp]));             \
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

/// C's 32 columns at C (+)= rows of A pairs (row i at a0 + i * stride 32-bit
/// words) times one 32-column panel, kp pairs deep, in 6 x 32 tiles (rows
/// past M write to a discard row; m0, m1 mask the columns past N).
template <bool Dot>
KILN_AVX512 void panelRows(int64_t M, int64_t kp, const uint32_t *a0, int64_t stride,
                           const uint32_t *panel, float *C, int64_t ldc, bool acc, __mmask16 m0,
                           __mmask16 m1) {
  alignas(64) float discard[32];
  for (int64_t i = 0; i < M; i += 6) {
    float *c[6];
    const uint32_t *a[6];
    for (int r = 0; r < 6; ++r) {
      bool real = i + r < M;
      c[r] = real ? C + (i + r) * ldc : discard;
      a[r] = a0 + (real ? i + r : i) * stride;
    }
    if (Dot)
      tileDot(kp, a, panel, c, acc, m0, m1);
    else
      tileSplit(kp, a, panel, c, acc, m0, m1);
  }
}

// Pairs of k per block where B's panel is copied (kiln_uk_sbgemm_pa: KP x
// 32 pairs, 16 KiB, in L1).
constexpr int64_t kPairs = 128;

/// Pairs of k per block where the packed panels are read in place (_pb,
/// _pb_a16): as deep as L2 holds (kiln::rt::deepKCap), in blocks of equal
/// depth, as the f32 kernel's KILN_UK_DEEP_K blocks: each tile's C loaded
/// and stored once (BERT layer, ResNet-50 at --precision=bf16: see
/// docs/performance-history.md).
inline int64_t deepPairs(int64_t K) { return kiln::rt::deepBlock((K + 1) / 2); }

template <bool Dot>
KILN_AVX512 void sbgemm512Pa(int64_t M, int64_t N, int64_t K, const uint16_t *A, int64_t lda,
                             const float *B, int64_t ldb, float *C, int64_t ldc, bool acc) {
  alignas(64) uint32_t panel[kPairs * 32];
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
      panelRows<Dot>(M, kp, reinterpret_cast<const uint32_t *>(A + k0), lda / 2, panel, C + j,
                     ldc, accBlock, m0, m1);
    }
  }
}

/// One k block of C (+)= rows of A pairs (row i at a + i * stride 32-bit
/// words, kp pairs) times B's 32-column panels (from pair k0 / 2 on), in
/// 6 x 32 tiles.
template <bool Dot>
KILN_AVX512 void panels512(int64_t M, int64_t N, int64_t kp, const uint32_t *a0, int64_t stride,
                           const uint16_t *B, int64_t ldb, int64_t k0, float *C, int64_t ldc,
                           bool acc) {
  for (int64_t j = 0; j < N; j += 32) {
    int64_t n = N - j < 32 ? N - j : 32;
    __mmask16 m0 = laneMask16(n), m1 = laneMask16(n - 16);
    const uint32_t *panel = reinterpret_cast<const uint32_t *>(B + (j / 32) * ldb) + (k0 / 2) * 32;
    panelRows<Dot>(M, kp, a0, stride, panel, C + j, ldc, acc, m0, m1);
  }
}

thread_local kiln::rt::ScratchBuffer packedRows;

template <bool Dot>
KILN_AVX512 void sbgemm512Pb(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                             const uint16_t *B, int64_t ldb, float *C, int64_t ldc, bool acc) {
  // A's block as rows of bf16 pairs (`stride` apart, whole 8-pair stores),
  // rounded: once per block, read by every panel.
  int64_t bp = deepPairs(K), stride = (bp + 7) / 8 * 8;
  uint32_t *ap = packedRows.get<uint32_t>(M * stride + 16);
  if (!ap)
    return; // (the run fails: Scratch.h)
  for (int64_t k0 = 0; k0 < K; k0 += 2 * bp) {
    int64_t kc = K - k0 < 2 * bp ? K - k0 : 2 * bp, kp = (kc + 1) / 2;
    for (int64_t i = 0; i < M; ++i) {
      const float *row = A + i * lda + k0;
      uint32_t *dst = ap + i * stride;
      // 16 floats (8 pairs) at a time: rounded into the low halves of 32-bit
      // lanes, narrowed to 16 bits in order (zero past the block).
      for (int64_t k = 0; k < kc; k += 16) {
        __m512 x = _mm512_maskz_loadu_ps(laneMask16(kc - k), row + k);
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst + k / 2),
                            _mm512_cvtepi32_epi16(toBf16x16(x)));
      }
    }
    panels512<Dot>(M, N, kp, ap, stride, B, ldb, k0, C, ldc, acc || k0 > 0);
  }
}

/// kiln_uk_sbgemm_pb_a16 on AVX-512: A's bf16 rows read in place (pairs
/// adjacent), B's panels too.
template <bool Dot>
KILN_AVX512 void sbgemm512PbA16(int64_t M, int64_t N, int64_t K, const uint16_t *A,
                                int64_t lda, const uint16_t *B, int64_t ldb, float *C,
                                int64_t ldc, bool acc) {
  const uint32_t *A32 = reinterpret_cast<const uint32_t *>(A);
  int64_t bp = deepPairs(K);
  for (int64_t k0 = 0; k0 < K; k0 += 2 * bp) {
    int64_t kc = K - k0 < 2 * bp ? K - k0 : 2 * bp, kp = (kc + 1) / 2;
    panels512<Dot>(M, N, kp, A32 + k0 / 2, lda / 2, B, ldb, k0, C, ldc, acc || k0 > 0);
  }
}

#if defined(KILN_HAVE_AMX)
// --- AMX: TDPBF16PS on 16 x 16 f32 tiles ----------------------------------
//
// Eight tile registers, all 16 rows x 64 bytes: tmm0-3 hold a 32 x 32 block
// of C (tmm0/1 its top 16 rows, left and right 16 columns; tmm2/3 the bottom
// ones), tmm4/5 16 rows x 16 pairs of A each, tmm6/7 16 pairs x 16 columns
// of B each (a row of B's tile is a pair of k for 16 columns). One
// TDPBF16PS is 16 x 16 x 32 multiply-adds.
//
// The tile instructions are written as inline assembly with memory
// clobbers (the compiler's tileloadd intrinsic does not say it reads
// memory, so stores into the buffers it loads could be moved past it).
#define KILN_TLOAD(t, p, s)                                                    \
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(p), "r"((long)(s)) : "memory")
#define KILN_TSTORE(t, p, s)                                                   \
  __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(p), "r"((long)(s)) : "memory")
#define KILN_TZERO(t) __asm__ volatile("tilezero %%tmm" #t ::)
#define KILN_TDP(c, a, b) __asm__ volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)

struct alignas(64) TileConfig {
  uint8_t palette = 1, startRow = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

inline void amxBegin() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  __asm__ volatile("ldtilecfg %0" ::"m"(cfg) : "memory");
}

inline void amxEnd() { __asm__ volatile("tilerelease" ::: "memory"); }

/// Where an operand's 16-row (A) or 16-pair (B) strip lives, one tile per
/// 16 pairs of k: tile kt at base + kt * step bytes, rows `stride` bytes
/// apart; the last one (kt = KT - 1) at `last`, rows `lastStride` apart (a
/// zero-padded copy when the operand ends inside that tile).
struct TileSrc {
  const char *base;
  long step, stride;
  const char *last;
  long lastStride;
  const char *at(int64_t kt, int64_t KT) const { return kt + 1 == KT ? last : base + kt * step; }
  long strideAt(int64_t kt, int64_t KT) const { return kt + 1 == KT ? lastStride : stride; }
};

/// C (16 or 32 rows: R2, x 16 or 32 columns: C2, ldc floats apart) (+)=
/// A strips a0 (rows 0-15) and a1 (rows 16-31) times B strip b (32 columns,
/// rows 128 bytes apart; the right half 64 bytes on), KT tiles deep.
template <bool R2, bool C2>
void amxTile(int64_t KT, const TileSrc &a0, const TileSrc &a1, const TileSrc &b, float *c,
             int64_t ldc, bool acc) {
  long sc = ldc * 4;
  if (acc) {
    KILN_TLOAD(0, c, sc);
    if (C2)
      KILN_TLOAD(1, c + 16, sc);
    if (R2) {
      KILN_TLOAD(2, c + 16 * ldc, sc);
      if (C2)
        KILN_TLOAD(3, c + 16 * ldc + 16, sc);
    }
  } else {
    KILN_TZERO(0);
    if (C2)
      KILN_TZERO(1);
    if (R2) {
      KILN_TZERO(2);
      if (C2)
        KILN_TZERO(3);
    }
  }
  for (int64_t kt = 0; kt < KT; ++kt) {
    if (kt + 1 < KT) {
      const char *n0 = a0.at(kt + 1, KT), *n1 = a1.at(kt + 1, KT);
      long s0 = a0.strideAt(kt + 1, KT), s1 = a1.strideAt(kt + 1, KT);
      const char *nb = b.at(kt + 1, KT);
      for (int r = 0; r < 16; ++r) {
        __builtin_prefetch(n0 + r * s0, 0, 3);
        if (R2)
          __builtin_prefetch(n1 + r * s1, 0, 3);
        __builtin_prefetch(nb + r * 128, 0, 3);
      }
    }
    const char *bp = b.at(kt, KT);
    KILN_TLOAD(6, bp, 128);
    if (C2)
      KILN_TLOAD(7, bp + 64, 128);
    KILN_TLOAD(4, a0.at(kt, KT), a0.strideAt(kt, KT));
    KILN_TDP(0, 4, 6);
    if (C2)
      KILN_TDP(1, 4, 7);
    if (R2) {
      KILN_TLOAD(5, a1.at(kt, KT), a1.strideAt(kt, KT));
      KILN_TDP(2, 5, 6);
      if (C2)
        KILN_TDP(3, 5, 7);
    }
  }
  KILN_TSTORE(0, c, sc);
  if (C2)
    KILN_TSTORE(1, c + 16, sc);
  if (R2) {
    KILN_TSTORE(2, c + 16 * ldc, sc);
    if (C2)
      KILN_TSTORE(3, c + 16 * ldc + 16, sc);
  }
}

/// One block of C, m <= 32 rows x n <= 32 columns: straight from and into C
/// when whole tiles cover it, else through a 32 x 32 copy (masked row
/// copies: a call per row would cost more than the block's products).
__attribute__((target("avx512f"))) void amxBlock(int64_t m, int64_t n, int64_t KT,
                                                 const TileSrc &a0, const TileSrc &a1,
                                                 const TileSrc &b, float *C, int64_t ldc,
                                                 bool acc, float *copy) {
  bool direct = (m == 16 || m == 32) && (n == 16 || n == 32);
  float *c = direct ? C : copy;
  int64_t l = direct ? ldc : 32;
  __mmask16 m0 = laneMask16(n), m1 = laneMask16(n - 16);
  if (!direct && acc)
    for (int64_t r = 0; r < m; ++r) {
      _mm512_store_ps(copy + r * 32, _mm512_maskz_loadu_ps(m0, C + r * ldc));
      _mm512_store_ps(copy + r * 32 + 16, _mm512_maskz_loadu_ps(m1, C + r * ldc + 16));
    }
  if (m > 16)
    n > 16 ? amxTile<true, true>(KT, a0, a1, b, c, l, acc)
           : amxTile<true, false>(KT, a0, a1, b, c, l, acc);
  else
    n > 16 ? amxTile<false, true>(KT, a0, a1, b, c, l, acc)
           : amxTile<false, false>(KT, a0, a1, b, c, l, acc);
  if (!direct)
    for (int64_t r = 0; r < m; ++r) {
      _mm512_mask_storeu_ps(C + r * ldc, m0, _mm512_load_ps(copy + r * 32));
      _mm512_mask_storeu_ps(C + r * ldc + 16, m1, _mm512_load_ps(copy + r * 32 + 16));
    }
}

#define KILN_AMX_HOST __attribute__((target("avx512f,avx512bw,avx512bf16")))

// Pairs of k per block: up to 32 tiles deep; C is loaded and stored once a
// block.
constexpr int64_t kAmxPairs = 512;
thread_local kiln::rt::ScratchBuffer amxScratch[2];

/// n 32-bit words of per-thread scratch, 64-byte aligned (two separate
/// buffers: slot 0 for A's tiles, slot 1 for B's panel); null when memory
/// ran out.
uint32_t *amxWords(size_t n, int slot = 0) {
  return amxScratch[slot].get<uint32_t>(n);
}

/// 32 floats (x[0, n), zero past n) to 32 bf16 in order, nearest even.
/// (VCVTNE2PS2BF16 flushes denormals, as TDPBF16PS treats them anyway.)
KILN_AMX_HOST inline __m512i roundPairs(const float *x, int64_t n) {
  __m512 lo = _mm512_maskz_loadu_ps(laneMask16(n), x);
  __m512 hi = _mm512_maskz_loadu_ps(laneMask16(n - 16), x + 16);
  return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

/// The B tile strip of a packed panel that ends inside its last tile (or
/// at an odd k: the pair's upper half is another k's): that tile's pairs
/// copied into `tail` with zeros after them.
void panelTail(const uint32_t *lastTile, int64_t pairs, bool oddK, uint32_t *tail) {
  std::memcpy(tail, lastTile, pairs * 128);
  std::memset(tail + pairs * 32, 0, (16 - pairs) * 128);
  if (oddK)
    for (int j = 0; j < 32; ++j)
      tail[(pairs - 1) * 32 + j] &= 0xffffu;
}

/// The last tiles of B's panels for the k block [k0, k0 + kc) when it ends
/// inside them (or at an odd k), copied into `tails` (512 words a panel);
/// false when the panels' own tiles serve.
bool panelTails(const uint32_t *B32, int64_t ldb, int64_t N, int64_t k0, int64_t kc,
                uint32_t *tails) {
  int64_t kp = (kc + 1) / 2, KT = (kp + 15) / 16, tailPairs = kp - (KT - 1) * 16;
  bool oddK = kc % 2 != 0;
  if (tailPairs == 16 && !oddK)
    return false;
  for (int64_t j = 0; j < N; j += 32)
    panelTail(B32 + (j / 32) * (ldb / 2) + (k0 / 2) * 32 + (KT - 1) * 512, tailPairs, oddK,
              tails + (j / 32) * 512);
  return true;
}

/// One row block (m <= 32 rows: strips a0, a1) times every 32-column panel
/// of B (packed, read in place from pair k0 / 2 on; their last tiles from
/// `tails` when given, see panelTails), KT tiles deep, into C's rows.
void amxPanels(int64_t m, int64_t N, int64_t KT, const TileSrc &a0, const TileSrc &a1,
               const uint32_t *B32, int64_t ldb, int64_t k0, const uint32_t *tails, float *C,
               int64_t ldc, bool acc, float *copy) {
  for (int64_t j = 0; j < N; j += 32) {
    int64_t n = N - j < 32 ? N - j : 32;
    const uint32_t *panel = B32 + (j / 32) * (ldb / 2) + (k0 / 2) * 32;
    const uint32_t *last = tails ? tails + (j / 32) * 512 : panel + (KT - 1) * 512;
    TileSrc b{reinterpret_cast<const char *>(panel), 2048, 128,
              reinterpret_cast<const char *>(last), 128};
    amxBlock(m, n, KT, a0, a1, b, C + j, ldc, acc, copy);
  }
}

/// kiln_uk_sbgemm_pb on AMX: 32 rows of A at a time rounded into tiles
/// (row tile t, k tile kt at at + (t * KT + kt) * 256 words, zero past M
/// and the block), kept in L1 while B's panels, read in place, stream past.
KILN_AMX_HOST void sbgemmAmxPb(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda,
                               const uint16_t *B, int64_t ldb, float *C, int64_t ldc,
                               bool acc) {
  uint32_t *at = amxWords(2 * (kAmxPairs / 16) * 256);
  uint32_t *tails = amxWords((N + 31) / 32 * 512, 1);
  if (!at || !tails)
    return; // (the run fails: Scratch.h)
  alignas(64) float copy[32 * 32];
  const uint32_t *B32 = reinterpret_cast<const uint32_t *>(B);
  amxBegin();
  for (int64_t k0 = 0; k0 < K; k0 += 2 * kAmxPairs) {
    int64_t kc = K - k0 < 2 * kAmxPairs ? K - k0 : 2 * kAmxPairs, kp = (kc + 1) / 2;
    int64_t KT = (kp + 15) / 16;
    bool accBlock = acc || k0 > 0;
    bool tailed = panelTails(B32, ldb, N, k0, kc, tails);
    for (int64_t i = 0; i < M; i += 32) {
      int64_t m = M - i < 32 ? M - i : 32;
      for (int64_t r = 0; r < (m > 16 ? 32 : 16); ++r) {
        uint32_t *dst = at + (r / 16) * KT * 256 + (r % 16) * 16;
        for (int64_t kt = 0; kt < KT; ++kt)
          _mm512_store_si512(dst + kt * 256,
                             r < m ? roundPairs(A + (i + r) * lda + k0 + kt * 32, kc - kt * 32)
                                   : _mm512_setzero_si512());
      }
      const char *t0 = reinterpret_cast<const char *>(at), *t1 = t0 + KT * 1024;
      TileSrc a0{t0, 1024, 64, t0 + (KT - 1) * 1024, 64};
      TileSrc a1{t1, 1024, 64, t1 + (KT - 1) * 1024, 64};
      amxPanels(m, N, KT, a0, a1, B32, ldb, k0, tailed ? tails : nullptr, C + i * ldc, ldc,
                accBlock, copy);
    }
  }
  amxEnd();
}

/// bf16 rows of A (M rows, rowWords 32-bit pairs apart) read in place as
/// AMX tiles, one k block at a time: a row tile that ends past M, and each
/// row tile's last k tile when the block ends inside it (or at an odd k,
/// whose pair's upper half belongs to another k), are copied with zeros
/// after them into per-thread scratch.
struct BfRows {
  const uint32_t *A32;
  int64_t rowWords, M, RT;
  uint32_t *tails, *partial;
  int64_t k0 = 0, kp = 0, KT = 0;
  bool kTail = false;

  BfRows(const uint16_t *A, int64_t lda, int64_t M)
      : A32(reinterpret_cast<const uint32_t *>(A)), rowWords(lda / 2), M(M),
        RT((M + 15) / 16) {
    // The last k tile of every row tile (RT x 256 words), then the row tile
    // past M whole (16 rows x kAmxPairs pairs).
    tails = amxWords(RT * 256 + 16 * kAmxPairs);
    partial = tails ? tails + RT * 256 : nullptr; // (null: no memory, Scratch.h)
  }

  /// 16 pairs of row i from pair p on (zero past M and the block; the
  /// last pair's upper half zero at an odd k).
  KILN_AMX_HOST __m512i sixteen(int64_t i, int64_t p, bool oddK) const {
    if (i >= M || p >= kp)
      return _mm512_setzero_si512();
    int64_t n = kp - p < 16 ? kp - p : 16;
    __m512i v = _mm512_maskz_loadu_epi32(laneMask16(n), A32 + i * rowWords + k0 / 2 + p);
    if (oddK && p + n == kp)
      v = _mm512_mask_and_epi32(v, static_cast<__mmask16>(1u << (n - 1)), v,
                                _mm512_set1_epi32(0xffff));
    return v;
  }

  /// Pairs [k0 / 2, k0 / 2 + (kc + 1) / 2) of every row.
  KILN_AMX_HOST void block(int64_t blockK0, int64_t kc) {
    k0 = blockK0, kp = (kc + 1) / 2, KT = (kp + 15) / 16;
    bool oddK = kc % 2 != 0;
    kTail = kp % 16 != 0 || oddK;
    if (kTail)
      for (int64_t i = 0; i < RT * 16; ++i)
        _mm512_store_si512(tails + (i / 16) * 256 + (i % 16) * 16,
                           sixteen(i, (KT - 1) * 16, oddK));
    if (M % 16 != 0)
      for (int64_t r = 0; r < 16; ++r)
        for (int64_t t = 0; t < KT; ++t)
          _mm512_store_si512(partial + r * KT * 16 + t * 16,
                             sixteen((RT - 1) * 16 + r, t * 16, oddK));
  }

  /// Row tile t's strip of this block.
  TileSrc strip(int64_t t) const {
    const char *tail = reinterpret_cast<const char *>(tails + t * 256);
    if (t == RT - 1 && M % 16 != 0) {
      const char *base = reinterpret_cast<const char *>(partial);
      return {base, 64, KT * 64, kTail ? tail : base + (KT - 1) * 64, kTail ? 64 : KT * 64};
    }
    const char *base = reinterpret_cast<const char *>(A32 + t * 16 * rowWords + k0 / 2);
    long stride = rowWords * 4;
    return {base, 64, stride, kTail ? tail : base + (KT - 1) * 64, kTail ? 64 : stride};
  }
};

/// kiln_uk_sbgemm_pa on AMX: A's bf16 rows read in place (BfRows); B's
/// block rounded into one 32-column panel at a time, rows k = 2p and 2p + 1
/// interleaved per column.
KILN_AMX_HOST void sbgemmAmxPa(int64_t M, int64_t N, int64_t K, const uint16_t *A, int64_t lda,
                               const float *B, int64_t ldb, float *C, int64_t ldc, bool acc) {
  BfRows rows(A, lda, M);
  uint32_t *panel = amxWords(kAmxPairs * 32, 1);
  if (!rows.tails || !panel)
    return; // (the run fails: Scratch.h)
  alignas(64) float copy[32 * 32];
  // Column j of the interleaved pair vectors: bf16 j of row 2p, then of row
  // 2p + 1 (index 32 + j), for the left (0-15) and right (16-31) columns.
  alignas(64) uint16_t leftIdx[32], rightIdx[32];
  for (int j = 0; j < 16; ++j) {
    leftIdx[2 * j] = static_cast<uint16_t>(j), leftIdx[2 * j + 1] = static_cast<uint16_t>(32 + j);
    rightIdx[2 * j] = static_cast<uint16_t>(16 + j);
    rightIdx[2 * j + 1] = static_cast<uint16_t>(48 + j);
  }
  const __m512i left = _mm512_load_si512(leftIdx), right = _mm512_load_si512(rightIdx);
  amxBegin();
  for (int64_t k0 = 0; k0 < K; k0 += 2 * kAmxPairs) {
    int64_t kc = K - k0 < 2 * kAmxPairs ? K - k0 : 2 * kAmxPairs;
    rows.block(k0, kc);
    int64_t KT = rows.KT;
    bool accBlock = acc || k0 > 0;
    for (int64_t j = 0; j < N; j += 32) {
      int64_t n = N - j < 32 ? N - j : 32;
      for (int64_t p = 0; p < KT * 16; ++p) {
        const float *r0 = B + (k0 + 2 * p) * ldb + j;
        __m512i even = 2 * p < kc ? roundPairs(r0, n) : _mm512_setzero_si512();
        __m512i odd = 2 * p + 1 < kc ? roundPairs(r0 + ldb, n) : _mm512_setzero_si512();
        _mm512_store_si512(panel + p * 32, _mm512_permutex2var_epi16(even, left, odd));
        _mm512_store_si512(panel + p * 32 + 16, _mm512_permutex2var_epi16(even, right, odd));
      }
      const char *pb = reinterpret_cast<const char *>(panel);
      TileSrc b{pb, 2048, 128, pb + (KT - 1) * 2048, 128};
      for (int64_t i = 0; i < M; i += 32) {
        int64_t m = M - i < 32 ? M - i : 32;
        TileSrc a0 = rows.strip(i / 16), a1 = m > 16 ? rows.strip(i / 16 + 1) : a0;
        amxBlock(m, n, KT, a0, a1, b, C + i * ldc + j, ldc, accBlock, copy);
      }
    }
  }
  amxEnd();
}

/// kiln_uk_sbgemm_pb_a16 on AMX: A's bf16 rows read in place (BfRows), B's
/// panels too (a panel's last tile copied when the block ends inside it).
KILN_AMX_HOST void sbgemmAmxPbA16(int64_t M, int64_t N, int64_t K, const uint16_t *A,
                                  int64_t lda, const uint16_t *B, int64_t ldb, float *C,
                                  int64_t ldc, bool acc) {
  BfRows rows(A, lda, M);
  uint32_t *tails = amxWords((N + 31) / 32 * 512, 1);
  if (!rows.tails || !tails)
    return; // (the run fails: Scratch.h)
  alignas(64) float copy[32 * 32];
  const uint32_t *B32 = reinterpret_cast<const uint32_t *>(B);
  amxBegin();
  for (int64_t k0 = 0; k0 < K; k0 += 2 * kAmxPairs) {
    int64_t kc = K - k0 < 2 * kAmxPairs ? K - k0 : 2 * kAmxPairs;
    rows.block(k0, kc);
    int64_t KT = rows.KT;
    bool accBlock = acc || k0 > 0;
    // Row blocks outer: a block's A strips stay in L1 while B's panels
    // stream past.
    bool tailed = panelTails(B32, ldb, N, k0, kc, tails);
    for (int64_t i = 0; i < M; i += 32) {
      int64_t m = M - i < 32 ? M - i : 32;
      TileSrc a0 = rows.strip(i / 16), a1 = m > 16 ? rows.strip(i / 16 + 1) : a0;
      amxPanels(m, N, KT, a0, a1, B32, ldb, k0, tailed ? tails : nullptr, C + i * ldc, ldc,
                accBlock, copy);
    }
  }
  amxEnd();
}

/// AMX-BF16 usable: the CPU has it, the OS saves the tile state (XCR0 bits
/// 17 and 18), and Linux grants this process the tile data (arch_prctl
/// ARCH_REQ_XCOMP_PERM; refused, e.g. under a small sigaltstack, it stays
/// off).
bool amxUsable() {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 24)) || !(d & (1u << 22)))
    return false;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) // OSXSAVE
    return false;
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & (3u << 17)) != (3u << 17))
    return false;
  constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
}
#undef KILN_TLOAD
#undef KILN_TSTORE
#undef KILN_TZERO
#undef KILN_TDP
#undef KILN_AMX_HOST
#endif // KILN_HAVE_AMX
#undef KILN_AVX512
#endif

using PaFn = void (*)(int64_t, int64_t, int64_t, const uint16_t *, int64_t, const float *,
                      int64_t, float *, int64_t, bool);
using PbFn = void (*)(int64_t, int64_t, int64_t, const float *, int64_t, const uint16_t *,
                      int64_t, float *, int64_t, bool);
using PbA16Fn = void (*)(int64_t, int64_t, int64_t, const uint16_t *, int64_t,
                         const uint16_t *, int64_t, float *, int64_t, bool);

struct Impl {
  PaFn pa;
  PbFn pb;
  PbA16Fn pbA16;
  const char *name;
};

Impl selectSbgemm() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  bool has512 = __builtin_cpu_supports("avx512f");
  bool dot = has512 && __builtin_cpu_supports("avx512bf16");
  // KILN_UKERNEL forces a path the CPU has: avx512bf16 VDPBF16PS where
  // AMX would be chosen, avx512 the split pairs on
  // AVX-512F, portable or avx2 the f32 fallback on that f32 ukernel (tests
  // cover each).
  const char *force = std::getenv("KILN_UKERNEL");
  auto forced = [&](const char *name) { return force && std::strcmp(force, name) == 0; };
  bool f32Forced = forced("portable") || forced("avx2");
#if defined(KILN_HAVE_AMX)
  bool others = f32Forced || forced("avx512") || forced("avx512bf16");
  if (dot && __builtin_cpu_supports("avx512bw") && !others && amxUsable())
    return {sbgemmAmxPa, sbgemmAmxPb, sbgemmAmxPbA16, "amx"};
#endif
  if (dot && !f32Forced && !forced("avx512"))
    return {sbgemm512Pa<true>, sbgemm512Pb<true>, sbgemm512PbA16<true>, "avx512bf16"};
  if (has512 && !f32Forced)
    return {sbgemm512Pa<false>, sbgemm512Pb<false>, sbgemm512PbA16<false>, "avx512"};
#endif
  // The fallback runs on whichever f32 ukernel this process chose.
  const char *f32 = kiln_uk_sgemm_impl();
  const char *name = std::strcmp(f32, "avx512") == 0 ? "f32-avx512"
                     : std::strcmp(f32, "avx2") == 0 ? "f32-avx2"
                                                     : "f32-portable";
  return {sbgemmFallbackPa, sbgemmFallbackPb, sbgemmFallbackPbA16, name};
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

extern "C" void kiln_uk_sbgemm_pb_a16(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                                      int64_t b, int64_t ldb, int64_t c, int64_t ldc,
                                      int64_t accumulate) {
  if (!empty(M, N, K, c, ldc, accumulate))
    chosen().pbA16(M, N, K, reinterpret_cast<const uint16_t *>(a), lda,
                   reinterpret_cast<const uint16_t *>(b), ldb, reinterpret_cast<float *>(c), ldc,
                   accumulate != 0);
}

extern "C" const char *kiln_uk_sbgemm_impl() { return chosen().name; }
