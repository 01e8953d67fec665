//===- Sgemm.cpp - the f32 matrix-product ukernel generated code calls ----===//
//
// C[M x N] (+)= A[M x K] * B[K x N], row-major with leading dimensions, on
// one thread (a kernel's workgroup calls it on its tile). The AVX-512 path
// keeps a 6 x 32 tile of C in 12 zmm registers (7 or 8 rows, 14 or 16, where
// a row-major A's row count divides better) and streams B rows; on packed B
// also 6 x 64 tiles over two panels (short k blocks), and for a panel's last
// columns 16-, 24- or 8-column tiles (the last two zmm + ymm, AVX-512VL); the
// AVX2+FMA path a 6 x 16 tile in 12 ymm registers; one is chosen at run time
// from cpuid, with a portable path for other CPUs (KILN_UKERNEL=portable,
// avx2 or avx512 forces one the CPU has; kiln_uk_sgemm_impl() names it).
//
// The same kernels serve --precision=fp16 on the CPU (kiln_uk_hgemm,
// kiln_uk_hgemm_pa): the constant operand is stored as IEEE half (half the
// bytes of the weights) and widened to f32 where it is read -- as B's panel
// is packed (VCVTPH2PS), or A's 6-row strip per tile -- so the products and
// the accumulation are the f32 ones. (AVX512-FP16's arithmetic accumulates
// in half precision, which kiln-lower-precision's policy rules out.)
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime.h"
#include "runtime/cpu/ukernels/Isa.h"
#include "runtime/cpu/ukernels/Scratch.h"
#include "runtime/cpu/ukernels/StoreEpilogue.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

/// IEEE binary16 bits (the fp16 ukernels' stored operand).
using half = uint16_t;

/// Where A's rows start: row i at base + i * lda (row-major), or, with a
/// list, at the address list[i] (kiln_uk_sgemm_pbr: an NHWC conv's rows
/// read from the input in place).
struct ARows {
  const float *base;
  int64_t lda;
  const int64_t *list = nullptr;
  const float *operator[](int64_t i) const {
    return list ? reinterpret_cast<const float *>(list[i]) : base + i * lda;
  }
};

/// What kiln_uk_sgemm_pb_ep applies to each finished element of C.
using Epilogue = kiln::rt::StoreEpilogue;

/// The ukernels' `accumulate` argument (kiln/runtime.h): bit 0 adds to C,
/// bit 1 asks the f32 AVX-512 kernel on packed B for deeper k blocks.
constexpr unsigned kAccumulate = KILN_UK_ACCUMULATE, kDeepK = KILN_UK_DEEP_K;

/// The epilogue over rows [0, M) and columns [0, N) of C, after the
/// product (the AVX2 and portable paths).
void applyEpilogue(int64_t M, int64_t N, float *C, int64_t ldc, const Epilogue &ep) {
  if (!ep.on())
    return;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      C[i * ldc + j] = ep.apply(C[i * ldc + j], j);
}

inline float toFloat(float x) { return x; }
/// Exact half -> float widening (subnormals, infinities and NaNs included).
inline float toFloat(half h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu,
           man = h & 0x3ffu, bits;
  if (exp == 0x1f)
    bits = sign | 0x7f800000u | (man << 13);
  else if (exp != 0)
    bits = sign | ((exp + 112) << 23) | (man << 13);
  else if (man == 0)
    bits = sign;
  else { // subnormal: normalize
    int e = -1;
    do {
      ++e;
      man <<= 1;
    } while ((man & 0x400u) == 0);
    bits = sign | static_cast<uint32_t>(112 - e) << 23 | ((man & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// Where row i, column k of A is: row-major, or packed in 6-row groups.
template <bool PackedA> inline int64_t aIndex(int64_t i, int64_t k, int64_t lda) {
  return PackedA ? (i / 6) * lda + k * 6 + i % 6 : i * lda + k;
}

template <bool PackedA, typename TA, typename TB>
void sgemmPortable(int64_t M, int64_t N, int64_t K, const TA *A, int64_t lda,
                   const TB *B, int64_t ldb, float *C, int64_t ldc, bool acc) {
  for (int64_t i = 0; i < M; ++i) {
    float *c = C + i * ldc;
    if (!acc)
      std::memset(c, 0, N * sizeof(float));
    for (int64_t k = 0; k < K; ++k) {
      float a = toFloat(A[aIndex<PackedA>(i, k, lda)]);
      const TB *b = B + k * ldb;
      for (int64_t j = 0; j < N; ++j)
        c[j] += a * toFloat(b[j]);
    }
  }
}

#if defined(__x86_64__)
/// One 6 x 32 tile on packed A: C rows c[0..5] (+)= the 6-row group a
/// (element (r, k) at a[k * 6 + r]; rows past M read the packing's zero
/// rows) times the panel (32 floats per k). Accumulators are named
/// variables so they stay in registers; tail rows' results are discarded.
/// (Row-major A takes tileRows32.)
__attribute__((target("avx512f"))) inline void
tilePacked6x32(int64_t K, const float *a, const float *panel, float *const c[6], bool acc,
               __mmask16 m0, __mmask16 m1) {
#define KILN_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define KILN_INIT(r)                                                           \
  __m512 x##r = acc ? _mm512_maskz_loadu_ps(m0, c[r]) : _mm512_setzero_ps();   \
  __m512 y##r = acc ? _mm512_maskz_loadu_ps(m1, c[r] + 16) : _mm512_setzero_ps();
  KILN_ROWS(KILN_INIT)
  for (int64_t k = 0; k < K; ++k) {
    __m512 b0 = _mm512_loadu_ps(panel + k * 32);
    __m512 b1 = _mm512_loadu_ps(panel + k * 32 + 16);
#define KILN_FMA(r)                                                            \
  {                                                                            \
    __m512 s = _mm512_set1_ps(a[k * 6 + r]);                                   \
    x##r = _mm512_fmadd_ps(s, b0, x##r);                                       \
    y##r = _mm512_fmadd_ps(s, b1, y##r);                                       \
  }
    KILN_ROWS(KILN_FMA)
  }
#define KILN_STORE(r)                                                          \
  _mm512_mask_storeu_ps(c[r], m0, x##r);                                       \
  _mm512_mask_storeu_ps(c[r] + 16, m1, y##r);
  KILN_ROWS(KILN_STORE)
#undef KILN_ROWS
#undef KILN_INIT
#undef KILN_FMA
#undef KILN_STORE
}

/// A tile's share of the next block's prefetch at k step k: PF lines (of
/// pfLines from pf) into L2.
template <int PF>
__attribute__((always_inline)) inline void prefetchStep(const char *pf, int64_t pfLines,
                                                        int64_t k) {
  if constexpr (PF > 0)
    if (PF * k < pfLines)
      for (int l = 0; l < PF; ++l)
        _mm_prefetch(pf + (PF * k + l) * 64, _MM_HINT_T1);
}

/// The masks of a 32-column panel's two 16-lane halves when n of its
/// columns are real.
struct PanelMasks {
  __mmask16 m0, m1;
  explicit PanelMasks(int64_t n)
      : m0(n >= 16 ? 0xffff : static_cast<__mmask16>((1u << n) - 1)),
        m1(n >= 32 ? 0xffff : n > 16 ? static_cast<__mmask16>((1u << (n - 16)) - 1) : 0) {}
};

/// min(max(x, lo), hi) with a NaN x kept (VMAXPS/VMINPS return their
/// second operand when one is NaN; the masked forms avoid GCC's
/// uninitialized-source warning), each bound only where `ep` clamps to it.
__attribute__((target("avx512f"))) inline __m512 clampKeepNaN(__m512 x, __m512 lo, __m512 hi,
                                                             const Epilogue &ep) {
  if (ep.clampLo)
    x = _mm512_maskz_max_ps(0xffff, lo, x);
  if (ep.clampHi)
    x = _mm512_maskz_min_ps(0xffff, hi, x);
  return x;
}
__attribute__((target("avx512f,avx512vl"))) inline __m256 clampKeepNaN(__m256 x, __m256 lo,
                                                                      __m256 hi,
                                                                      const Epilogue &ep) {
  if (ep.clampLo)
    x = _mm256_max_ps(lo, x);
  if (ep.clampHi)
    x = _mm256_min_ps(hi, x);
  return x;
}

/// One MR x 32 tile (MR = 6, 7 or 8; 1-7 for a sweep's last rows) on
/// row-major A: as tilePacked6x32, rows a[0..MR). The row count of a call
/// picks MR (rowTile), so that 49 pixel rows are seven tiles of 7 and 32
/// batch rows four tiles of 8, not ten and six tiles of 6.
/// PF > 0: the tile also prefetches `pfLines` cache lines from `pf` into L2,
/// PF per k step (the next panel block, while this one is in L1).
template <int MR, int PF = 0>
__attribute__((target("avx512f"))) inline void
tileRows32(int64_t K, const float *const a[8], const float *panel, float *const c[8], bool acc,
           __mmask16 m0, __mmask16 m1, const Epilogue *ep, const char *pf = nullptr,
           int64_t pfLines = 0) {
#define KILN_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define KILN_INIT(r)                                                           \
  __m512 x##r = _mm512_setzero_ps(), y##r = _mm512_setzero_ps();               \
  const float *a##r = a[r];                                                    \
  if constexpr (r < MR)                                                        \
    if (acc) {                                                                 \
      x##r = _mm512_maskz_loadu_ps(m0, c[r]);                                  \
      y##r = _mm512_maskz_loadu_ps(m1, c[r] + 16);                             \
    }
  KILN_ROWS(KILN_INIT)
  // Four k steps per loop trip: the loop's own add and branch otherwise
  // take issue slots from the 16 FMAs of each step (hot products 3-8%
  // faster; ViT-B/16's matmuls 3% inside the model; 2 steps gained half,
  // 8 no more than 4).
#pragma GCC unroll 4
  for (int64_t k = 0; k < K; ++k) {
    prefetchStep<PF>(pf, pfLines, k);
    __m512 b0 = _mm512_loadu_ps(panel + k * 32);
    __m512 b1 = _mm512_loadu_ps(panel + k * 32 + 16);
#define KILN_FMA(r)                                                            \
  if constexpr (r < MR) {                                                      \
    __m512 s = _mm512_set1_ps(a##r[k]);                                        \
    x##r = _mm512_fmadd_ps(s, b0, x##r);                                       \
    y##r = _mm512_fmadd_ps(s, b1, y##r);                                       \
  }
    KILN_ROWS(KILN_FMA)
  }
  if (ep) { // (ep->bias: this panel's first column)
    __m512 b0 = ep->bias ? _mm512_maskz_loadu_ps(m0, ep->bias) : _mm512_setzero_ps();
    __m512 b1 = ep->bias ? _mm512_maskz_loadu_ps(m1, ep->bias + 16) : _mm512_setzero_ps();
    __m512 lo = _mm512_set1_ps(ep->lo), hi = _mm512_set1_ps(ep->hi);
#define KILN_EPI(r)                                                            \
  if constexpr (r < MR) {                                                      \
    if (ep->bias) {                                                            \
      x##r = _mm512_add_ps(x##r, b0);                                          \
      y##r = _mm512_add_ps(y##r, b1);                                          \
    }                                                                          \
    if (ep->clamp) {                                                           \
      x##r = clampKeepNaN(x##r, lo, hi, *ep);                                  \
      y##r = clampKeepNaN(y##r, lo, hi, *ep);                                  \
    }                                                                          \
  }
    KILN_ROWS(KILN_EPI)
#undef KILN_EPI
  }
#define KILN_STORE(r)                                                          \
  if constexpr (r < MR) {                                                      \
    _mm512_mask_storeu_ps(c[r], m0, x##r);                                     \
    _mm512_mask_storeu_ps(c[r] + 16, m1, y##r);                                \
  } else {                                                                     \
    (void)a##r, (void)x##r, (void)y##r;                                        \
  }
  KILN_ROWS(KILN_STORE)
#undef KILN_ROWS
#undef KILN_INIT
#undef KILN_FMA
#undef KILN_STORE
}

/// The tile height (6, 7 or 8 rows) that computes M rows fastest. A tile's
/// k step costs about its rows plus 1.3 rows' worth of loads and loop (a
/// 6-row tile is about 5% slower per row than an 8-row one). The rows left
/// after the whole tiles take one tile of their own height (rowTiles), so
/// 102 rows are 12 tiles of 8 and one of 6 rather than 17 of 6, and 197
/// are 24 of 8 and one of 5; 49 rows are 7 tiles of 7 (the tail's cost is
/// one unit higher, so that an exact tiling wins a tie), 32 rows 4 of 8.
inline int rowTile(int64_t M) {
  int best = 6;
  auto cost = [&](int mr) {
    int64_t rem = M % mr;
    return M / mr * (10 * mr + 13) + (rem ? 10 * rem + 14 : 0);
  };
  for (int mr = 7; mr <= 8; ++mr)
    if (cost(mr) <= cost(best))
      best = mr;
  return best;
}

/// One MR x 16 tile (MR 6-8, rowTiles16Any): a panel's last 16 columns or
/// fewer (mask m0), one accumulator per row. An NHWC conv with 16 or 24
/// output channels (MobileNetV2's and EfficientNet's narrow pointwise convs)
/// would otherwise spend half or a quarter of the 32-column tiles' products
/// on zero columns; per k step this tile issues MR products for MR + 1
/// loads, near the 32-column tiles' rate.
template <int MR>
__attribute__((target("avx512f"))) inline void
tileRows16(int64_t K, const float *const a[14], const float *panel, float *const c[14], bool acc,
           __mmask16 m0, const Epilogue *ep) {
  __m512 x[MR];
  _Pragma("GCC unroll 16") for (int r = 0; r < MR; ++r)
    x[r] = acc ? _mm512_maskz_loadu_ps(m0, c[r]) : _mm512_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    __m512 b = _mm512_loadu_ps(panel + k * 32);
    _Pragma("GCC unroll 16") for (int r = 0; r < MR; ++r)
      x[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r][k]), b, x[r]);
  }
  if (ep) { // (as tileRows32's)
    __m512 b = ep->bias ? _mm512_maskz_loadu_ps(m0, ep->bias) : _mm512_setzero_ps();
    __m512 lo = _mm512_set1_ps(ep->lo), hi = _mm512_set1_ps(ep->hi);
    _Pragma("GCC unroll 16") for (int r = 0; r < MR; ++r) {
      if (ep->bias)
        x[r] = _mm512_add_ps(x[r], b);
      if (ep->clamp)
        x[r] = clampKeepNaN(x[r], lo, hi, *ep);
    }
  }
  _Pragma("GCC unroll 16") for (int r = 0; r < MR; ++r)
    _mm512_mask_storeu_ps(c[r], m0, x[r]);
}

/// An MR x 32 tile of one or two rows (a decode step's single token, a
/// run of few live rows): tileRows32's two accumulators per row would make
/// each k step wait on the last one's FMA (4 cycles), so consecutive k steps
/// go to 8 / (2 MR) independent accumulator sets, summed at the end: the
/// same products, in another order (fp32 sums reassociate, as any tiling's).
template <int MR, int PF = 0>
__attribute__((target("avx512f"))) inline void
tileFewRows32(int64_t K, const float *const a[8], const float *panel, float *const c[8], bool acc,
              __mmask16 m0, __mmask16 m1, const Epilogue *ep, const char *pf = nullptr,
              int64_t pfLines = 0) {
  static_assert(MR == 1 || MR == 2, "tileRows32 for three rows or more");
  constexpr int S = 4 / MR; // (k steps in flight: 8 chains)
  __m512 x[S][MR], y[S][MR];
  _Pragma("GCC unroll 4") for (int s = 0; s < S; ++s)
      _Pragma("GCC unroll 2") for (int r = 0; r < MR; ++r) x[s][r] = y[s][r] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + S <= K; k += S) {
    _Pragma("GCC unroll 4") for (int s = 0; s < S; ++s) {
      prefetchStep<PF>(pf, pfLines, k + s);
      __m512 b0 = _mm512_loadu_ps(panel + (k + s) * 32);
      __m512 b1 = _mm512_loadu_ps(panel + (k + s) * 32 + 16);
      _Pragma("GCC unroll 2") for (int r = 0; r < MR; ++r) {
        __m512 v = _mm512_set1_ps(a[r][k + s]);
        x[s][r] = _mm512_fmadd_ps(v, b0, x[s][r]);
        y[s][r] = _mm512_fmadd_ps(v, b1, y[s][r]);
      }
    }
  }
  for (; k < K; ++k) {
    prefetchStep<PF>(pf, pfLines, k);
    __m512 b0 = _mm512_loadu_ps(panel + k * 32), b1 = _mm512_loadu_ps(panel + k * 32 + 16);
    _Pragma("GCC unroll 2") for (int r = 0; r < MR; ++r) {
      __m512 v = _mm512_set1_ps(a[r][k]);
      x[0][r] = _mm512_fmadd_ps(v, b0, x[0][r]);
      y[0][r] = _mm512_fmadd_ps(v, b1, y[0][r]);
    }
  }
  __m512 b0 = _mm512_setzero_ps(), b1 = b0;
  if (ep && ep->bias) { // (ep->bias: this panel's first column)
    b0 = _mm512_maskz_loadu_ps(m0, ep->bias);
    b1 = _mm512_maskz_loadu_ps(m1, ep->bias + 16);
  }
  _Pragma("GCC unroll 2") for (int r = 0; r < MR; ++r) {
    __m512 u = x[0][r], w = y[0][r];
    _Pragma("GCC unroll 4") for (int s = 1; s < S; ++s) {
      u = _mm512_add_ps(u, x[s][r]);
      w = _mm512_add_ps(w, y[s][r]);
    }
    if (acc) {
      u = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, c[r]), u);
      w = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, c[r] + 16), w);
    }
    if (ep) {
      u = _mm512_add_ps(u, b0);
      w = _mm512_add_ps(w, b1);
      if (ep->clamp) {
        __m512 lo = _mm512_set1_ps(ep->lo), hi = _mm512_set1_ps(ep->hi);
        u = clampKeepNaN(u, lo, hi, *ep);
        w = clampKeepNaN(w, lo, hi, *ep);
      }
    }
    _mm512_mask_storeu_ps(c[r], m0, u);
    _mm512_mask_storeu_ps(c[r] + 16, m1, w);
  }
}

/// The A rows (from column k0) and C rows (from column j) of the row tile
/// at row i, mr rows tall: rows past M read row i and write `discard`.
inline void tileRowAddresses(int mr, int64_t i, int64_t M, ARows A, int64_t k0, float *C,
                             int64_t ldc, int64_t j, float *discard, const float **a,
                             float **c) {
  for (int r = 0; r < mr; ++r) {
    bool real = i + r < M;
    a[r] = A[real ? i + r : i] + k0;
    c[r] = real ? C + (i + r) * ldc + j : discard;
  }
}

/// The cache lines to bring into L2 while a panel block is multiplied: the
/// next block the call reads (none: lines == 0).
struct Prefetch {
  const char *next = nullptr;
  int64_t lines = 0;
};

/// Row tile t's share of the next block's prefetch (`per` lines a tile).
inline Prefetch prefetchShare(Prefetch pf, int64_t per, int64_t t) {
  int64_t lo = t * per < pf.lines ? t * per : pf.lines;
  return {pf.next + lo * 64, pf.lines - lo < per ? pf.lines - lo : per};
}

/// Accumulating (a residual, a later k block): rows [from, to) of C, `cols`
/// columns from j -- the next tile's -- asked into L1 now, so that its
/// first loads do not stall its products (ResNet-50's residual 1x1 convs
/// 5-9% faster on 1 thread; the same for tiles that only store was 1-6%
/// slower).
inline void prefetchRows(const float *C, int64_t ldc, int64_t j, int64_t from, int64_t to,
                         int cols) {
  for (int64_t r = from; r < to; ++r)
    for (int q = 0; q < cols; q += 16)
      _mm_prefetch(reinterpret_cast<const char *>(C + r * ldc + j + q), _MM_HINT_T0);
}

/// One R-row tile (R = 1-7: the rows left after a sweep's whole tiles), from
/// row i, with its share `pf` of the next block's prefetch. (The sweep's
/// own loop spells its tiles out: calling this for them measured 1% slower
/// on a 197-row product.)
template <int R>
__attribute__((target("avx512f"))) inline void
oneTile(int64_t i, int64_t M, ARows A, int64_t k0, int64_t kc, const float *panel, float *C,
        int64_t ldc, int64_t j, bool acc, __mmask16 m0, __mmask16 m1, float *discard,
        Prefetch pf, const Epilogue *ep) {
  const float *a[8] = {};
  float *c[8] = {};
  tileRowAddresses(R, i, M, A, k0, C, ldc, j, discard, a, c);
  if constexpr (R <= 2) {
    if (pf.lines <= 0)
      tileFewRows32<R>(kc, a, panel, c, acc, m0, m1, ep);
    else if (pf.lines <= kc)
      tileFewRows32<R, 1>(kc, a, panel, c, acc, m0, m1, ep, pf.next, pf.lines);
    else
      tileFewRows32<R, 2>(kc, a, panel, c, acc, m0, m1, ep, pf.next, pf.lines);
    return;
  }
  if (pf.lines <= 0)
    tileRows32<R>(kc, a, panel, c, acc, m0, m1, ep);
  else if (pf.lines <= kc)
    tileRows32<R, 1>(kc, a, panel, c, acc, m0, m1, ep, pf.next, pf.lines);
  else
    tileRows32<R, 2>(kc, a, panel, c, acc, m0, m1, ep, pf.next, pf.lines);
}

/// The tile of the `rows` (1-7) rows left at the end of a sweep.
__attribute__((target("avx512f"))) inline void
tailTile(int64_t rows, int64_t i, int64_t M, ARows A, int64_t k0, int64_t kc,
         const float *panel, float *C, int64_t ldc, int64_t j, bool acc, __mmask16 m0,
         __mmask16 m1, float *discard, Prefetch pf, const Epilogue *ep) {
  switch (rows) {
  case 1: return oneTile<1>(i, M, A, k0, kc, panel, C, ldc, j, acc, m0, m1, discard, pf, ep);
  case 2: return oneTile<2>(i, M, A, k0, kc, panel, C, ldc, j, acc, m0, m1, discard, pf, ep);
  case 3: return oneTile<3>(i, M, A, k0, kc, panel, C, ldc, j, acc, m0, m1, discard, pf, ep);
  case 4: return oneTile<4>(i, M, A, k0, kc, panel, C, ldc, j, acc, m0, m1, discard, pf, ep);
  case 5: return oneTile<5>(i, M, A, k0, kc, panel, C, ldc, j, acc, m0, m1, discard, pf, ep);
  case 6: return oneTile<6>(i, M, A, k0, kc, panel, C, ldc, j, acc, m0, m1, discard, pf, ep);
  default: return oneTile<7>(i, M, A, k0, kc, panel, C, ldc, j, acc, m0, m1, discard, pf, ep);
  }
}

/// Rows [0, M) of A (from column k0, kc deep) times a 32-column panel into
/// C's columns [j, j + 32) (masks m0, m1), in MR-row tiles. The row tiles
/// share the prefetch of the next block, a slice each, one or two lines per
/// k step: weights that stream from L3 or memory (a ViT's 9.4 MB MLP, an
/// MLP's layers at batch 32) then arrive before their first row tile needs
/// them, instead of at the latency of each 4 KB page the hardware
/// prefetchers will not cross.
template <int MR>
__attribute__((target("avx512f"))) inline void
rowTiles(int64_t M, ARows A, int64_t k0, int64_t kc, const float *panel,
         float *C, int64_t ldc, int64_t j, bool acc, __mmask16 m0, __mmask16 m1,
         float *discard, Prefetch pf, const Epilogue *ep) {
  int64_t full = M / MR * MR, tiles = (M + MR - 1) / MR, per = (pf.lines + tiles - 1) / tiles;
  int64_t t = 0;
  for (int64_t i = 0; i < full; i += MR, ++t) {
    const float *a[8] = {};
    float *c[8] = {};
    tileRowAddresses(MR, i, M, A, k0, C, ldc, j, discard, a, c);
    if (acc)
      prefetchRows(C, ldc, j, i + MR, i + 2 * MR < M ? i + 2 * MR : M, 32);
    auto [at, n] = prefetchShare(pf, per, t);
    if (n <= 0)
      tileRows32<MR>(kc, a, panel, c, acc, m0, m1, ep);
    else if (n <= kc)
      tileRows32<MR, 1>(kc, a, panel, c, acc, m0, m1, ep, at, n);
    else
      tileRows32<MR, 2>(kc, a, panel, c, acc, m0, m1, ep, at, n);
  }
  // The rows left: one tile of exactly that height.
  if (full < M)
    tailTile(M - full, full, M, A, k0, kc, panel, C, ldc, j, acc, m0, m1, discard,
             prefetchShare(pf, per, t), ep);
}

/// One 6 x 64 tile over two full panels (p0: columns 0-31, p1: 32-63), 24
/// accumulators: per k step 4 panel loads and 6 broadcasts for 24 products,
/// against 2 and 8 for 16 in the 8 x 32 tile. Where K is short (a ResNet's
/// 1x1 convs, K = 64-512), every tile's C load or store, epilogue and
/// pipeline ramp weigh more, and the wider tile spreads them over half
/// again as many products (those convs 3-5% faster on Zen 4, 1 thread).
/// PF as tileRows32's.
template <int PF = 0>
__attribute__((target("avx512f"))) inline void
tileRows64(int64_t K, const float *const a[8], const float *p0, const float *p1,
           float *const c[8], bool acc, const Epilogue *ep, const char *pf = nullptr,
           int64_t pfLines = 0) {
  constexpr int MR = 6;
  __m512 x[MR], y[MR], z[MR], w[MR];
  _Pragma("GCC unroll 6") for (int r = 0; r < MR; ++r) {
    if (acc) {
      x[r] = _mm512_loadu_ps(c[r]);
      y[r] = _mm512_loadu_ps(c[r] + 16);
      z[r] = _mm512_loadu_ps(c[r] + 32);
      w[r] = _mm512_loadu_ps(c[r] + 48);
    } else {
      x[r] = y[r] = z[r] = w[r] = _mm512_setzero_ps();
    }
  }
#pragma GCC unroll 2
  for (int64_t k = 0; k < K; ++k) {
    prefetchStep<PF>(pf, pfLines, k);
    __m512 b0 = _mm512_loadu_ps(p0 + k * 32), b1 = _mm512_loadu_ps(p0 + k * 32 + 16);
    __m512 b2 = _mm512_loadu_ps(p1 + k * 32), b3 = _mm512_loadu_ps(p1 + k * 32 + 16);
    _Pragma("GCC unroll 6") for (int r = 0; r < MR; ++r) {
      __m512 s = _mm512_set1_ps(a[r][k]);
      x[r] = _mm512_fmadd_ps(s, b0, x[r]);
      y[r] = _mm512_fmadd_ps(s, b1, y[r]);
      z[r] = _mm512_fmadd_ps(s, b2, z[r]);
      w[r] = _mm512_fmadd_ps(s, b3, w[r]);
    }
  }
  if (ep) { // (ep->bias: p0's first column)
    __m512 e0 = _mm512_setzero_ps(), e1 = e0, e2 = e0, e3 = e0;
    if (ep->bias) {
      e0 = _mm512_loadu_ps(ep->bias);
      e1 = _mm512_loadu_ps(ep->bias + 16);
      e2 = _mm512_loadu_ps(ep->bias + 32);
      e3 = _mm512_loadu_ps(ep->bias + 48);
    }
    __m512 lo = _mm512_set1_ps(ep->lo), hi = _mm512_set1_ps(ep->hi);
    _Pragma("GCC unroll 6") for (int r = 0; r < MR; ++r) {
      if (ep->bias) {
        x[r] = _mm512_add_ps(x[r], e0);
        y[r] = _mm512_add_ps(y[r], e1);
        z[r] = _mm512_add_ps(z[r], e2);
        w[r] = _mm512_add_ps(w[r], e3);
      }
      if (ep->clamp) {
        x[r] = clampKeepNaN(x[r], lo, hi, *ep);
        y[r] = clampKeepNaN(y[r], lo, hi, *ep);
        z[r] = clampKeepNaN(z[r], lo, hi, *ep);
        w[r] = clampKeepNaN(w[r], lo, hi, *ep);
      }
    }
  }
  _Pragma("GCC unroll 6") for (int r = 0; r < MR; ++r) {
    _mm512_storeu_ps(c[r], x[r]);
    _mm512_storeu_ps(c[r] + 16, y[r]);
    _mm512_storeu_ps(c[r] + 32, z[r]);
    _mm512_storeu_ps(c[r] + 48, w[r]);
  }
}

/// Rows [0, M) of A times two full panels into C's columns [j, j + 64), in
/// 6 x 64 tiles, sharing the next block's prefetch as rowTiles.
__attribute__((target("avx512f"))) inline void
rowTiles64(int64_t M, ARows A, int64_t k0, int64_t kc, const float *p0, const float *p1,
           float *C, int64_t ldc, int64_t j, bool acc, float *discard, Prefetch pf,
           const Epilogue *ep) {
  constexpr int MR = 6;
  int64_t tiles = (M + MR - 1) / MR, per = (pf.lines + tiles - 1) / tiles;
  for (int64_t i = 0, t = 0; i < M; i += MR, ++t) {
    const float *a[8] = {};
    float *c[8] = {};
    tileRowAddresses(MR, i, M, A, k0, C, ldc, j, discard, a, c);
    if (acc)
      prefetchRows(C, ldc, j, i + MR, i + 2 * MR < M ? i + 2 * MR : M, 64);
    auto [at, n] = prefetchShare(pf, per, t);
    if (n <= 0)
      tileRows64(kc, a, p0, p1, c, acc, ep);
    else if (n <= kc)
      tileRows64<1>(kc, a, p0, p1, c, acc, ep, at, n);
    else
      tileRows64<2>(kc, a, p0, p1, c, acc, ep, at, n);
  }
}

/// Whether 6 x 64 tiles (tileRows64) suit a product of M rows, kc deep:
/// short k blocks (deeper ones, a transformer's K = 768 or more, gained
/// nothing), and no more than 1% more rows wasted in the last tile than
/// rowTile's height wastes (M = 128 as 22 tiles of 6 lost 3%, M = 49 as 9
/// lost 10%).
inline bool wideTilesSuit(int64_t M, int64_t kc, int mr) {
  if (M < 6) // (one tile of exactly M rows: a 6-row one would compute 6)
    return false;
  int64_t rows6 = (M + 5) / 6 * 6, rowsMr = (M + mr - 1) / mr * mr;
  return kc <= 512 && rows6 * 100 <= rowsMr * 101;
}

__attribute__((target("avx512f"))) inline void
rowTilesAny(int mr, int64_t M, ARows A, int64_t k0, int64_t kc,
            const float *panel, float *C, int64_t ldc, int64_t j, bool acc, __mmask16 m0,
            __mmask16 m1, float *discard, Prefetch pf = {}, const Epilogue *ep = nullptr) {
  if (mr == 8)
    rowTiles<8>(M, A, k0, kc, panel, C, ldc, j, acc, m0, m1, discard, pf, ep);
  else if (mr == 7)
    rowTiles<7>(M, A, k0, kc, panel, C, ldc, j, acc, m0, m1, discard, pf, ep);
  else
    rowTiles<6>(M, A, k0, kc, panel, C, ldc, j, acc, m0, m1, discard, pf, ep);
}

/// Rows [0, M) of A times a panel's first 16 columns (mask m0) in MR-row
/// tiles, as rowTiles.
template <int MR>
__attribute__((target("avx512f"))) inline void
rowTiles16(int64_t M, ARows A, int64_t k0, int64_t kc, const float *panel, float *C,
           int64_t ldc, int64_t j, bool acc, __mmask16 m0, float *discard,
           const Epilogue *ep) {
  for (int64_t i = 0; i < M; i += MR) {
    const float *a[14] = {};
    float *c[14] = {};
    tileRowAddresses(MR, i, M, A, k0, C, ldc, j, discard, a, c);
    tileRows16<MR>(kc, a, panel, c, acc, m0, ep);
  }
}

/// rowTiles16 with the tile height, 6 to 8 rows, that wastes least on M's
/// last tile (a k step costs about MR + 3 loads' worth). Taller tiles keep
/// more row addresses than x86's 16 general registers hold: at 10-14 rows
/// the k loop reloaded spilled ones every step, and MobileNetV2's 1x1 conv
/// from 32 to 16 channels at 112 x 112 took 0.134-0.151 ms on 12-row tiles
/// against 0.121 on 8 (Zen 4, 1 thread; 0.034-0.037 -> 0.030 at 56 x 56, and
/// 480 -> 112 channels at 14 x 14 0.188 -> 0.183). Eight accumulators keep
/// two FMA pipes of 4-cycle latency busy, which 4-row tiles (as fast on
/// Zen 4's one 512-bit FMA a cycle) would not.
__attribute__((target("avx512f"))) inline void
rowTiles16Any(int64_t M, ARows A, int64_t k0, int64_t kc, const float *panel, float *C,
              int64_t ldc, int64_t j, bool acc, __mmask16 m0, float *discard,
              const Epilogue *ep) {
  auto cost = [&](int mr) { return (M + mr - 1) / mr * (mr + 3); };
  if (cost(8) <= cost(7) && cost(8) <= cost(6))
    rowTiles16<8>(M, A, k0, kc, panel, C, ldc, j, acc, m0, discard, ep);
  else if (cost(7) <= cost(6))
    rowTiles16<7>(M, A, k0, kc, panel, C, ldc, j, acc, m0, discard, ep);
  else
    rowTiles16<6>(M, A, k0, kc, panel, C, ldc, j, acc, m0, discard, ep);
}

/// One MR x 24 (Wide) or MR x 8 tile: a panel's last columns when 17-24 or
/// at most 8 of them are real (n), the first 16 in a zmm and the rest in a
/// ymm accumulator per row. An NHWC conv with 24 or 40 output channels
/// (MobileNetV2's and EfficientNet's narrow projections) otherwise spends a
/// quarter (24: 32 columns) or a sixth (40: 48 columns) of its products on
/// zero columns. Where a 512-bit FMA issues as two 256-bit halves (Zen 4) a
/// ymm product costs half of a zmm one, so the waste is time; elsewhere it
/// costs the same as the masked zmm tiles. (AVX-512VL: ymm registers 16-31
/// and the masked ymm loads and stores.)
template <int MR, bool Wide>
__attribute__((target("avx512f,avx512vl,fma"))) inline void
tileRowsNarrow(int64_t K, const float *const a[14], const float *panel, float *const c[14],
               bool acc, __mmask8 m, const Epilogue *ep) {
  constexpr int Y = Wide ? 16 : 0; // the ymm part's first column
  __m512 x[MR];
  __m256 y[MR];
  _Pragma("GCC unroll 16") for (int r = 0; r < MR; ++r) {
    if constexpr (Wide)
      x[r] = acc ? _mm512_loadu_ps(c[r]) : _mm512_setzero_ps();
    y[r] = acc ? _mm256_maskz_loadu_ps(m, c[r] + Y) : _mm256_setzero_ps();
  }
  for (int64_t k = 0; k < K; ++k) {
    __m256 by = _mm256_loadu_ps(panel + k * 32 + Y);
    if constexpr (Wide) {
      __m512 bx = _mm512_loadu_ps(panel + k * 32);
      _Pragma("GCC unroll 16") for (int r = 0; r < MR; ++r) {
        x[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r][k]), bx, x[r]);
        y[r] = _mm256_fmadd_ps(_mm256_set1_ps(a[r][k]), by, y[r]);
      }
    } else {
      _Pragma("GCC unroll 16") for (int r = 0; r < MR; ++r)
        y[r] = _mm256_fmadd_ps(_mm256_set1_ps(a[r][k]), by, y[r]);
    }
  }
  if (ep) { // (as tileRows32's)
    __m512 bx = ep->bias && Wide ? _mm512_loadu_ps(ep->bias) : _mm512_setzero_ps();
    __m256 by = ep->bias ? _mm256_maskz_loadu_ps(m, ep->bias + Y) : _mm256_setzero_ps();
    _Pragma("GCC unroll 16") for (int r = 0; r < MR; ++r) {
      if (ep->bias) {
        if constexpr (Wide)
          x[r] = _mm512_add_ps(x[r], bx);
        y[r] = _mm256_add_ps(y[r], by);
      }
      if (ep->clamp) {
        if constexpr (Wide)
          x[r] = clampKeepNaN(x[r], _mm512_set1_ps(ep->lo), _mm512_set1_ps(ep->hi), *ep);
        y[r] = clampKeepNaN(y[r], _mm256_set1_ps(ep->lo), _mm256_set1_ps(ep->hi), *ep);
      }
    }
  }
  _Pragma("GCC unroll 16") for (int r = 0; r < MR; ++r) {
    if constexpr (Wide)
      _mm512_storeu_ps(c[r], x[r]);
    _mm256_mask_storeu_ps(c[r] + Y, m, y[r]);
  }
}

/// Rows [0, M) of A times a panel's last n columns (n in 17-24, or 1-8),
/// in tileRowsNarrow tiles of the height that wastes least on M's last tile.
template <bool Wide>
__attribute__((target("avx512f,avx512vl,fma"))) void
rowTilesNarrow(int64_t M, ARows A, int64_t k0, int64_t kc, const float *panel, float *C,
               int64_t ldc, int64_t j, bool acc, int64_t n, float *discard,
               const Epilogue *ep) {
  __mmask8 m = static_cast<__mmask8>((1u << (Wide ? n - 16 : n)) - 1);
  auto cost = [&](int mr) { return (M + mr - 1) / mr * (mr + 3); };
  int mr = Wide ? (cost(12) <= cost(10) && cost(12) <= cost(8) ? 12 : cost(10) <= cost(8) ? 10 : 8)
                : (cost(14) <= cost(12) && cost(14) <= cost(10) ? 14 : cost(12) <= cost(10) ? 12 : 10);
  for (int64_t i = 0; i < M; i += mr) {
    const float *a[14] = {};
    float *c[14] = {};
    tileRowAddresses(mr, i, M, A, k0, C, ldc, j, discard, a, c);
    switch (mr) {
    case 14: tileRowsNarrow<14, Wide>(kc, a, panel, c, acc, m, ep); break;
    case 12: tileRowsNarrow<12, Wide>(kc, a, panel, c, acc, m, ep); break;
    case 10: tileRowsNarrow<10, Wide>(kc, a, panel, c, acc, m, ep); break;
    default: tileRowsNarrow<8, Wide>(kc, a, panel, c, acc, m, ep); break;
    }
  }
}

/// Whether the CPU has AVX-512VL (the narrow tiles'): all AVX-512 CPUs but
/// the Xeon Phis.
inline bool hasAvx512Vl() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vl") != 0;
  }();
  return has;
}

/// Rows [0, M) of A times one 32-column panel of which n columns are real,
/// in the tiles that fit n: 32 columns (mr rows), 24 or 8 (narrow), or 16.
__attribute__((target("avx512f"))) inline void
panelTiles(int mr, int64_t M, ARows A, int64_t k0, int64_t kc, const float *panel, float *C,
           int64_t ldc, int64_t j, bool acc, int64_t n, float *discard, Prefetch pf,
           const Epilogue *ep) {
  PanelMasks m(n);
  if ((n <= 8 || (n > 16 && n <= 24)) && hasAvx512Vl()) {
    if (n <= 8)
      rowTilesNarrow<false>(M, A, k0, kc, panel, C, ldc, j, acc, n, discard, ep);
    else
      rowTilesNarrow<true>(M, A, k0, kc, panel, C, ldc, j, acc, n, discard, ep);
  } else if (n <= 16) {
    rowTiles16Any(M, A, k0, kc, panel, C, ldc, j, acc, m.m0, discard, ep);
  } else {
    rowTilesAny(mr, M, A, k0, kc, panel, C, ldc, j, acc, m.m0, m.m1, discard, pf, ep);
  }
}

/// This thread's scratch of at least `floats` floats, 64-byte aligned: the
/// panels the kernels on row-major or half B copy (deep k blocks: up to
/// 256 KiB), kept from call to call; null when memory ran out (Scratch.h).
inline float *panelScratch(int64_t floats) {
  thread_local kiln::rt::ScratchBuffer buffer;
  return buffer.get<float>(static_cast<size_t>(floats));
}

/// Lanes [0, n) of row `src` as f32, zeros past them (n in [0, 16]).
__attribute__((target("avx512f"))) inline __m512 load16(const float *src, int64_t n) {
  __mmask16 m = n >= 16 ? 0xffff : n > 0 ? static_cast<__mmask16>((1u << n) - 1) : 0;
  return _mm512_maskz_loadu_ps(m, src);
}
__attribute__((target("avx512f"))) inline __m512 load16(const half *src, int64_t n) {
  if (n >= 16)
    return _mm512_maskz_cvtph_ps(0xffff,
                                 _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src)));
  alignas(32) half t[16] = {};
  for (int64_t i = 0; i < n; ++i)
    t[i] = src[i];
  return _mm512_maskz_cvtph_ps(0xffff, _mm256_load_si256(reinterpret_cast<const __m256i *>(t)));
}

/// A's 6-row strip (packed: n contiguous values) as f32: in place for f32,
/// widened into `buf` for half.
__attribute__((target("avx512f"))) inline const float *strip(const float *a, int64_t, float *) {
  return a;
}
__attribute__((target("avx512f"))) inline const float *strip(const half *a, int64_t n,
                                                              float *buf) {
  for (int64_t t = 0; t < n; t += 16)
    _mm512_storeu_ps(buf + t, load16(a + t, n - t));
  return buf;
}

template <bool PackedA, typename TA, typename TB>
__attribute__((target("avx512f"))) void
sgemmAvx512(int64_t M, int64_t N, int64_t K, const TA *A, int64_t lda,
            const TB *B, int64_t ldb, float *C, int64_t ldc, bool acc) {
  // B is packed a KC x 32 panel at a time into a contiguous buffer that
  // every row tile of A then streams through (half B widens here). KC: the
  // whole K while the panel fits a quarter of L2 (deepKCap), else blocks of
  // equal depth, as the packed-B kernel's KILN_UK_DEEP_K blocks -- each
  // tile's C loaded and stored once (NCHW convs: DenseNet-121 and a UNet on
  // 1 thread, see docs/performance-history.md).
  const int64_t KC = kiln::rt::deepBlock(K);
  // The panel, then (a half packed A) A's strip widened per tile (row-major
  // A is f32 only).
  float *panel = panelScratch(KC * 32 + (PackedA ? KC * 6 + 16 : 0));
  if (!panel)
    return;
  float *aBuf = panel + KC * 32;
  alignas(64) float discard[32];
  static_assert(PackedA || sizeof(TA) == 4, "row-major A is f32");
  int mr = rowTile(M);
  for (int64_t k0 = 0; k0 < K; k0 += KC) {
    int64_t kc = K - k0 < KC ? K - k0 : KC;
    bool accBlock = acc || k0 > 0;
    for (int64_t j = 0; j < N; j += 32) {
      int64_t n = N - j < 32 ? N - j : 32;
      PanelMasks m(n);
      const TB *src = B + k0 * ldb + j;
      for (int64_t k = 0; k < kc; ++k) {
        _mm512_store_ps(panel + k * 32, load16(src + k * ldb, n));
        _mm512_store_ps(panel + k * 32 + 16, load16(src + k * ldb + 16, n - 16));
      }
      if constexpr (!PackedA) {
        panelTiles(mr, M, ARows{A, lda}, k0, kc, panel, C, ldc, j, accBlock, n, discard, {},
                   nullptr);
      } else {
        for (int64_t i = 0; i < M; i += 6) {
          float *c[6];
          for (int r = 0; r < 6; ++r)
            c[r] = i + r < M ? C + (i + r) * ldc + j : discard;
          tilePacked6x32(kc, strip(A + (i / 6) * lda + k0 * 6, kc * 6, aBuf), panel, c,
                         accBlock, m.m0, m.m1);
        }
      }
    }
  }
}
#endif

#if defined(__x86_64__)
/// One 6 x 16 tile on AVX2+FMA: as the AVX-512 tiles, two ymm per row, the
/// panel's rows ps floats apart; the column tail is masked (m0, m1: lanes
/// of the tile's two halves).
template <bool PackedA>
__attribute__((target("avx2,fma,f16c"))) inline void
tile6x16(int64_t K, const float *const a[6], const float *panel, int64_t ps,
         float *const c[6], bool acc, __m256i m0, __m256i m1) {
#define KILN_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define KILN_INIT(r)                                                           \
  __m256 x##r = acc ? _mm256_maskload_ps(c[r], m0) : _mm256_setzero_ps();      \
  __m256 y##r = acc ? _mm256_maskload_ps(c[r] + 8, m1) : _mm256_setzero_ps();
  KILN_ROWS(KILN_INIT)
  const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *a4 = a[4],
              *a5 = a[5];
  // (Four k steps per trip, as tileRows32: 0-4% here, on AVX2 at half the
  // AVX-512 rate.)
#pragma GCC unroll 4
  for (int64_t k = 0; k < K; ++k) {
    __m256 b0 = _mm256_loadu_ps(panel + k * ps);
    __m256 b1 = _mm256_loadu_ps(panel + k * ps + 8);
#define KILN_FMA(r)                                                            \
  {                                                                            \
    __m256 s = _mm256_broadcast_ss(PackedA ? a0 + k * 6 + r : a##r + k);       \
    x##r = _mm256_fmadd_ps(s, b0, x##r);                                       \
    y##r = _mm256_fmadd_ps(s, b1, y##r);                                       \
  }
    KILN_ROWS(KILN_FMA)
  }
  (void)a1, (void)a2, (void)a3, (void)a4, (void)a5; // unused when packed
#define KILN_STORE(r)                                                          \
  _mm256_maskstore_ps(c[r], m0, x##r);                                         \
  _mm256_maskstore_ps(c[r] + 8, m1, y##r);
  KILN_ROWS(KILN_STORE)
#undef KILN_ROWS
#undef KILN_INIT
#undef KILN_FMA
#undef KILN_STORE
}

/// An R x 16 tile, R = 1-5 (the rows left after a sweep's 6-row tiles: a
/// decode step's single token), as tile6x16 for those rows only (a 6-row
/// tile for one row did six rows' products). With one or two rows,
/// consecutive k steps go to 8 / (2R) independent accumulator sets (an FMA
/// waits on the last one into the same accumulator), summed at the end.
template <int R>
__attribute__((target("avx2,fma,f16c"))) inline void
tileFew16(int64_t K, const float *const a[6], const float *panel, int64_t ps,
          float *const c[6], bool acc, __m256i m0, __m256i m1) {
  static_assert(R >= 1 && R < 6, "tile6x16 for six rows");
  constexpr int S = R == 1 ? 4 : R == 2 ? 2 : 1;
  __m256 x[S][R], y[S][R];
  _Pragma("GCC unroll 4") for (int s = 0; s < S; ++s)
      _Pragma("GCC unroll 5") for (int r = 0; r < R; ++r) x[s][r] = y[s][r] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + S <= K; k += S) {
    _Pragma("GCC unroll 4") for (int s = 0; s < S; ++s) {
      __m256 b0 = _mm256_loadu_ps(panel + (k + s) * ps);
      __m256 b1 = _mm256_loadu_ps(panel + (k + s) * ps + 8);
      _Pragma("GCC unroll 5") for (int r = 0; r < R; ++r) {
        __m256 v = _mm256_broadcast_ss(a[r] + k + s);
        x[s][r] = _mm256_fmadd_ps(v, b0, x[s][r]);
        y[s][r] = _mm256_fmadd_ps(v, b1, y[s][r]);
      }
    }
  }
  for (; k < K; ++k) {
    __m256 b0 = _mm256_loadu_ps(panel + k * ps), b1 = _mm256_loadu_ps(panel + k * ps + 8);
    _Pragma("GCC unroll 5") for (int r = 0; r < R; ++r) {
      __m256 v = _mm256_broadcast_ss(a[r] + k);
      x[0][r] = _mm256_fmadd_ps(v, b0, x[0][r]);
      y[0][r] = _mm256_fmadd_ps(v, b1, y[0][r]);
    }
  }
  _Pragma("GCC unroll 5") for (int r = 0; r < R; ++r) {
    __m256 u = x[0][r], w = y[0][r];
    _Pragma("GCC unroll 4") for (int s = 1; s < S; ++s) {
      u = _mm256_add_ps(u, x[s][r]);
      w = _mm256_add_ps(w, y[s][r]);
    }
    if (acc) {
      u = _mm256_add_ps(_mm256_maskload_ps(c[r], m0), u);
      w = _mm256_add_ps(_mm256_maskload_ps(c[r] + 8, m1), w);
    }
    _mm256_maskstore_ps(c[r], m0, u);
    _mm256_maskstore_ps(c[r] + 8, m1, w);
  }
}

/// A tile of `rows` (1-6) rows of A given row by row: tile6x16 for six,
/// tileFew16 for fewer.
__attribute__((target("avx2,fma,f16c"))) inline void
rowTile16(int64_t rows, int64_t K, const float *const a[6], const float *panel, int64_t ps,
          float *const c[6], bool acc, __m256i m0, __m256i m1) {
  switch (rows) {
  case 1: return tileFew16<1>(K, a, panel, ps, c, acc, m0, m1);
  case 2: return tileFew16<2>(K, a, panel, ps, c, acc, m0, m1);
  case 3: return tileFew16<3>(K, a, panel, ps, c, acc, m0, m1);
  case 4: return tileFew16<4>(K, a, panel, ps, c, acc, m0, m1);
  case 5: return tileFew16<5>(K, a, panel, ps, c, acc, m0, m1);
  default: return tile6x16<false>(K, a, panel, ps, c, acc, m0, m1);
  }
}

/// Lanes [0, n) of 8 set (n clamped to [0, 8]), as a maskload/maskstore mask.
__attribute__((target("avx2,fma,f16c"))) inline __m256i laneMask(int64_t n) {
  n = n < 0 ? 0 : n > 8 ? 8 : n;
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// Lanes [0, n) of row `src` as f32, zeros past them (n in [0, 8]).
__attribute__((target("avx2,fma,f16c"))) inline __m256 load8(const float *src, int64_t n) {
  return _mm256_maskload_ps(src, laneMask(n));
}
__attribute__((target("avx2,fma,f16c"))) inline __m256 load8(const half *src, int64_t n) {
  if (n >= 8)
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src)));
  alignas(16) half t[8] = {};
  for (int64_t i = 0; i < n; ++i)
    t[i] = src[i];
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i *>(t)));
}

__attribute__((target("avx2,fma,f16c"))) inline const float *strip8(const float *a, int64_t,
                                                                     float *) {
  return a;
}
__attribute__((target("avx2,fma,f16c"))) inline const float *strip8(const half *a, int64_t n,
                                                                     float *buf) {
  for (int64_t t = 0; t < n; t += 8)
    _mm256_storeu_ps(buf + t, load8(a + t, n - t));
  return buf;
}

template <bool PackedA, typename TA, typename TB>
__attribute__((target("avx2,fma,f16c"))) void
sgemmAvx2(int64_t M, int64_t N, int64_t K, const TA *A, int64_t lda, const TB *B,
          int64_t ldb, float *C, int64_t ldc, bool acc) {
  // B packed a KC x 16 panel at a time, KC as in sgemmAvx512 (deep).
  const int64_t KC = kiln::rt::deepBlock(K);
  float *panel = panelScratch(KC * 16 + (PackedA ? KC * 6 + 8 : 0));
  if (!panel)
    return;
  float *aBuf = panel + KC * 16;
  alignas(64) float discard[16];
  static_assert(PackedA || sizeof(TA) == 4, "row-major A is f32");
  for (int64_t k0 = 0; k0 < K; k0 += KC) {
    int64_t kc = K - k0 < KC ? K - k0 : KC;
    bool accBlock = acc || k0 > 0;
    for (int64_t j = 0; j < N; j += 16) {
      int64_t n = N - j < 16 ? N - j : 16;
      __m256i m0 = laneMask(n), m1 = laneMask(n - 8);
      const TB *src = B + k0 * ldb + j;
      for (int64_t k = 0; k < kc; ++k) {
        _mm256_store_ps(panel + k * 16, load8(src + k * ldb, n));
        _mm256_store_ps(panel + k * 16 + 8, load8(src + k * ldb + 8, n - 8));
      }
      for (int64_t i = 0; i < M; i += 6) {
        const float *a[6];
        float *c[6];
        for (int r = 0; r < 6; ++r) {
          bool real = i + r < M;
          if constexpr (PackedA)
            a[r] = r == 0 ? strip8(A + (i / 6) * lda + k0 * 6, kc * 6, aBuf) : a[0];
          else
            a[r] = reinterpret_cast<const float *>(A) + (real ? i + r : i) * lda + k0;
          c[r] = real ? C + (i + r) * ldc + j : discard;
        }
        if constexpr (PackedA)
          tile6x16<true>(kc, a, panel, 16, c, accBlock, m0, m1);
        else
          rowTile16(M - i, kc, a, panel, 16, c, accBlock, m0, m1);
      }
    }
  }
}
#endif

/// C (+)= A * B with B packed at compile time (kiln_uk_sgemm_pb): 32-column
/// panels ldb floats apart, each k-major (element (k, j) at
/// (j / 32) * ldb + k * 32 + j % 32), zeros past N. The tiles read the panels
/// in place: no per-call copy, and the weights stream sequentially.
void sgemmPbPortable(int64_t M, int64_t N, int64_t K, ARows A, const float *B, int64_t ldb,
                     float *C, int64_t ldc, unsigned flags) {
  bool acc = flags & kAccumulate;
  for (int64_t i = 0; i < M; ++i) {
    float *c = C + i * ldc;
    if (!acc)
      std::memset(c, 0, N * sizeof(float));
    for (int64_t k = 0; k < K; ++k) {
      float a = A[i][k];
      for (int64_t j = 0; j < N; ++j)
        c[j] += a * B[(j / 32) * ldb + k * 32 + j % 32];
    }
  }
}

#if defined(__x86_64__)
/// (ep: applied to the last k block's tiles as they are stored.)
__attribute__((target("avx512f"))) void sgemmPbAvx512Ep(int64_t M, int64_t N, int64_t K, ARows A,
                                                        const float *B, int64_t ldb, float *C,
                                                        int64_t ldc, unsigned flags,
                                                        const Epilogue &ep) {
  bool acc = flags & kAccumulate;
  // Without kDeepK, k blocks of 128 so that a panel's block (16 KB) stays
  // in L1 while every row tile of A streams through it; up to 192 deep,
  // one block (a ResNet stem's K = 147 as 128 + 19 paid a second pass over
  // C for 19 products).
  // With kDeepK (kiln-compile's default, --k-block), the whole K in one
  // block while a panel's block fits a quarter of L2 (deepKCap), else
  // blocks of equal depth: the panel streams from L2 at 2.5 lines per 16
  // FMAs, which L2 sustains, and each tile loads and stores its C once
  // instead of once per 128 k, with its setup and the pipeline's ramp at
  // either end spread over K products (Zen 4, 1 thread: ViT-B/16 -9%,
  // the MLP at batch 32 -7%, GPT-2 -6%, BERT -5%, ResNet-50 -4%).
  const int64_t KC = K <= 192 ? K : (flags & kDeepK) ? kiln::rt::deepBlock(K) : 128;
  alignas(64) float discard[64]; // (a 6 x 64 tile's rows past M)
  int mr = rowTile(M);
  for (int64_t k0 = 0; k0 < K; k0 += KC) {
    int64_t kc = K - k0 < KC ? K - k0 : KC;
    bool accBlock = acc || k0 > 0;
    bool wide = wideTilesSuit(M, kc, mr);
    for (int64_t j = 0; j < N;) {
      const float *panel = B + (j / 32) * ldb + k0 * 32;
      // Two full panels at a time in 6 x 64 tiles where they suit.
      int64_t step = wide && N - j >= 64 ? 64 : 32;
      // The next block: the next panel's (of a pair, the first's), or the
      // first panel's next k block (kc x 32 floats, two lines per k).
      Prefetch pf;
      if (j + step < N)
        pf = {reinterpret_cast<const char *>(panel + (step / 32) * ldb), 2 * kc};
      else if (k0 + KC < K)
        pf = {reinterpret_cast<const char *>(B + (k0 + KC) * 32),
              2 * (K - k0 - KC < KC ? K - k0 - KC : KC)};
      Epilogue here = ep;
      if (here.bias)
        here.bias += j;
      const Epilogue *tileEp = ep.on() && k0 + KC >= K ? &here : nullptr;
      if (step == 64)
        rowTiles64(M, A, k0, kc, panel, panel + ldb, C, ldc, j, accBlock, discard, pf, tileEp);
      else
        panelTiles(mr, M, A, k0, kc, panel, C, ldc, j, accBlock, N - j < 32 ? N - j : 32,
                   discard, pf, tileEp);
      j += step;
    }
  }
}

__attribute__((target("avx512f"))) void sgemmPbAvx512(int64_t M, int64_t N, int64_t K, ARows A,
                                                      const float *B, int64_t ldb, float *C,
                                                      int64_t ldc, unsigned flags) {
  sgemmPbAvx512Ep(M, N, K, A, B, ldb, C, ldc, flags, Epilogue{});
}

__attribute__((target("avx2,fma,f16c"))) void sgemmPbAvx2(int64_t M, int64_t N, int64_t K,
                                                          ARows A, const float *B, int64_t ldb,
                                                          float *C, int64_t ldc,
                                                          unsigned flags) {
  // As sgemmPbAvx512, on the panels' 16-column halves (rows 32 apart).
  bool acc = flags & kAccumulate;
  const int64_t KC = (flags & kDeepK) ? kiln::rt::deepBlock(K) : 256;
  alignas(64) float discard[16];
  for (int64_t k0 = 0; k0 < K; k0 += KC) {
    int64_t kc = K - k0 < KC ? K - k0 : KC;
    bool accBlock = acc || k0 > 0;
    for (int64_t j = 0; j < N; j += 16) {
      int64_t n = N - j < 16 ? N - j : 16;
      __m256i m0 = laneMask(n), m1 = laneMask(n - 8);
      const float *panel = B + (j / 32) * ldb + k0 * 32 + j % 32;
      for (int64_t i = 0; i < M; i += 6) {
        const float *a[6];
        float *c[6];
        for (int r = 0; r < 6; ++r) {
          bool real = i + r < M;
          a[r] = A[real ? i + r : i] + k0;
          c[r] = real ? C + (i + r) * ldc + j : discard;
        }
        rowTile16(M - i, kc, a, panel, 32, c, accBlock, m0, m1);
      }
    }
  }
}
#endif

/// One matrix product on addresses: C (+)= A * B (element types per entry;
/// flags: kAccumulate, kDeepK).
using GemmFn = void (*)(int64_t, int64_t, int64_t, const void *, int64_t, const void *, int64_t,
                        float *, int64_t, unsigned);

/// The typed kernel behind a GemmFn.
template <typename TA, typename TB,
          void (*F)(int64_t, int64_t, int64_t, const TA *, int64_t, const TB *, int64_t,
                    float *, int64_t, bool)>
void erase(int64_t M, int64_t N, int64_t K, const void *A, int64_t lda, const void *B,
           int64_t ldb, float *C, int64_t ldc, unsigned flags) {
  F(M, N, K, static_cast<const TA *>(A), lda, static_cast<const TB *>(B), ldb, C, ldc,
    (flags & kAccumulate) != 0);
}

/// A GemmFn on B packed in panels, A's rows lda apart (a: A's address).
template <void (*F)(int64_t, int64_t, int64_t, ARows, const float *, int64_t, float *, int64_t,
                    unsigned)>
void stridedRows(int64_t M, int64_t N, int64_t K, const void *A, int64_t lda, const void *B,
                 int64_t ldb, float *C, int64_t ldc, unsigned flags) {
  F(M, N, K, ARows{static_cast<const float *>(A), lda}, static_cast<const float *>(B), ldb, C,
    ldc, flags);
}
/// A GemmFn on B packed in panels, A's rows anywhere (a: the address of M
/// row addresses; lda unused).
template <void (*F)(int64_t, int64_t, int64_t, ARows, const float *, int64_t, float *, int64_t,
                    unsigned)>
void listedRows(int64_t M, int64_t N, int64_t K, const void *A, int64_t, const void *B,
                int64_t ldb, float *C, int64_t ldc, unsigned flags) {
  F(M, N, K, ARows{nullptr, 0, static_cast<const int64_t *>(A)}, static_cast<const float *>(B),
    ldb, C, ldc, flags);
}

/// B packed in panels with an epilogue (kiln_uk_sgemm_pb_ep, _pbr_ep).
using PbEpFn = void (*)(int64_t, int64_t, int64_t, ARows, const float *, int64_t, float *,
                        int64_t, unsigned, const Epilogue &);

/// A PbEpFn from a kernel without one: the product, then the epilogue.
template <void (*F)(int64_t, int64_t, int64_t, ARows, const float *, int64_t, float *, int64_t,
                    unsigned)>
void thenEpilogue(int64_t M, int64_t N, int64_t K, ARows A, const float *B, int64_t ldb,
                  float *C, int64_t ldc, unsigned flags, const Epilogue &ep) {
  F(M, N, K, A, B, ldb, C, ldc, flags);
  applyEpilogue(M, N, C, ldc, ep);
}

/// One implementation's entries: f32 (row-major A, packed A, B packed in
/// panels with A's rows strided or listed, and with an epilogue) and fp16
/// (f32 A times half B, half packed A times f32 B).
struct Impl {
  GemmFn plain, packed, packedB, packedBRows, halfB, halfPackedA;
  PbEpFn packedBEp;
  const char *name;
};

#define KILN_IMPL(K, PB, PBEP, NAME)                                           \
  Impl {                                                                       \
    erase<float, float, K<false, float, float>>,                               \
        erase<float, float, K<true, float, float>>, stridedRows<PB>,           \
        listedRows<PB>, erase<float, half, K<false, float, half>>,             \
        erase<half, float, K<true, half, float>>, PBEP, NAME                   \
  }

Impl selectSgemm() {
#if defined(__x86_64__)
  switch (kiln::rt::chooseIsa(/*avx2NeedsF16c=*/true)) {
  case kiln::rt::Isa::Avx512:
    return KILN_IMPL(sgemmAvx512, sgemmPbAvx512, sgemmPbAvx512Ep, "avx512");
  case kiln::rt::Isa::Avx2:
    return KILN_IMPL(sgemmAvx2, sgemmPbAvx2, thenEpilogue<sgemmPbAvx2>, "avx2");
  case kiln::rt::Isa::Portable:
    break;
  }
#endif
  return KILN_IMPL(sgemmPortable, sgemmPbPortable, thenEpilogue<sgemmPbPortable>, "portable");
}
#undef KILN_IMPL

const Impl sgemmChosen = selectSgemm();

void run(GemmFn fn, int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda, int64_t b,
         int64_t ldb, int64_t c, int64_t ldc, int64_t accumulate) {
  if (M <= 0 || N <= 0)
    return;
  unsigned flags = static_cast<unsigned>(accumulate) & (kAccumulate | kDeepK);
  if (K <= 0) {
    if (!(flags & kAccumulate))
      for (int64_t i = 0; i < M; ++i)
        std::memset(reinterpret_cast<float *>(c) + i * ldc, 0, N * sizeof(float));
    return;
  }
  fn(M, N, K, reinterpret_cast<const void *>(a), lda, reinterpret_cast<const void *>(b), ldb,
     reinterpret_cast<float *>(c), ldc, flags);
}

} // namespace

extern "C" void kiln_uk_sgemm(int64_t M, int64_t N, int64_t K, int64_t a,
                              int64_t lda, int64_t b, int64_t ldb, int64_t c,
                              int64_t ldc, int64_t accumulate) {
  run(sgemmChosen.plain, M, N, K, a, lda, b, ldb, c, ldc, accumulate);
}

extern "C" const char *kiln_uk_sgemm_impl() { return sgemmChosen.name; }

extern "C" void kiln_uk_sgemm_pa(int64_t M, int64_t N, int64_t K, int64_t a,
                                 int64_t lda, int64_t b, int64_t ldb, int64_t c,
                                 int64_t ldc, int64_t accumulate) {
  run(sgemmChosen.packed, M, N, K, a, lda, b, ldb, c, ldc, accumulate);
}

extern "C" void kiln_uk_sgemm_pb(int64_t M, int64_t N, int64_t K, int64_t a,
                                 int64_t lda, int64_t b, int64_t ldb, int64_t c,
                                 int64_t ldc, int64_t accumulate) {
  run(sgemmChosen.packedB, M, N, K, a, lda, b, ldb, c, ldc, accumulate);
}

extern "C" void kiln_uk_sgemm_pbr(int64_t M, int64_t N, int64_t K, int64_t a,
                                  int64_t lda, int64_t b, int64_t ldb, int64_t c,
                                  int64_t ldc, int64_t accumulate) {
  run(sgemmChosen.packedBRows, M, N, K, a, lda, b, ldb, c, ldc, accumulate);
}

/// The products with an epilogue: C = clamp(A x B (+ C) + bias) as the
/// last k block is stored (bias: 0 or the address of N floats; clamp off
/// when lo = -inf and hi = +inf). pb: A's rows lda apart; pbr: listed.
static void runEp(int64_t M, int64_t N, int64_t K, ARows A, int64_t b, int64_t ldb, int64_t c,
                  int64_t ldc, int64_t accumulate, int64_t bias, float lo, float hi) {
  if (M <= 0 || N <= 0)
    return;
  Epilogue ep = Epilogue::fromArgs(bias, lo, hi);
  float *C = reinterpret_cast<float *>(c);
  unsigned flags = static_cast<unsigned>(accumulate) & (kAccumulate | kDeepK);
  if (K <= 0) {
    if (!(flags & kAccumulate))
      for (int64_t i = 0; i < M; ++i)
        std::memset(C + i * ldc, 0, N * sizeof(float));
    applyEpilogue(M, N, C, ldc, ep);
    return;
  }
  sgemmChosen.packedBEp(M, N, K, A, reinterpret_cast<const float *>(b), ldb, C, ldc, flags,
                        ep);
}

extern "C" void kiln_uk_sgemm_pb_ep(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                                    int64_t b, int64_t ldb, int64_t c, int64_t ldc,
                                    int64_t accumulate, int64_t bias, float lo, float hi) {
  runEp(M, N, K, ARows{reinterpret_cast<const float *>(a), lda}, b, ldb, c, ldc, accumulate,
        bias, lo, hi);
}

extern "C" void kiln_uk_sgemm_pbr_ep(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                                     int64_t b, int64_t ldb, int64_t c, int64_t ldc,
                                     int64_t accumulate, int64_t bias, float lo, float hi) {
  runEp(M, N, K, ARows{nullptr, 0, reinterpret_cast<const int64_t *>(a)}, b, ldb, c, ldc,
        accumulate, bias, lo, hi);
}

extern "C" void kiln_uk_hgemm(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                              int64_t b, int64_t ldb, int64_t c, int64_t ldc,
                              int64_t accumulate) {
  run(sgemmChosen.halfB, M, N, K, a, lda, b, ldb, c, ldc, accumulate);
}

extern "C" void kiln_uk_hgemm_pa(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                                 int64_t b, int64_t ldb, int64_t c, int64_t ldc,
                                 int64_t accumulate) {
  run(sgemmChosen.halfPackedA, M, N, K, a, lda, b, ldb, c, ldc, accumulate);
}
