//===- Bqgemm.cpp - products on block-quantized weights (weight-only int4/int8) -===//
//
// C[M x N] (+)= A[M x K] * W^T with W's N rows of K codes, each block of
// `block` k of a row with its own scale s and zero point z:
//   C[m, n] = sum_b s[n, b] * sum_{k in b} A[m, k] * (code[n, k] - z[n, b])
// (kiln.matmul_nbits; the layout is kiln_uk_bqgemm's in runtime.h). Each
// code less its zero point is exact in f32, so only the sums round (no
// cancellation between a sum of codes and the zero points' share). A
// decoder's product of one row (up to 7) streams the codes once at 4 or 8
// bits a weight: each 4-column quad's codes of a 32-k unit are widened to
// f32 in registers and multiplied against each row. Eight rows or more dequantize
// 64 columns at a time into the f32 ukernel's packed panels (transposed in
// registers) and run it on them: its sums of M rows repay the
// dequantization.
//
// Implementations, chosen from cpuid on first use (KILN_UKERNEL=portable or
// avx2 forces one the CPU has; kiln_uk_bqgemm_impl() names it): avx2 (FMA
// on 8-float vectors, 4 columns a pass) and portable (scalar).
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime.h"
#include "runtime/cpu/ukernels/Isa.h"
#include "runtime/cpu/ukernels/Scratch.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

constexpr int64_t kUnit = 32;    // k per unit of packed codes
constexpr int64_t kQuad = 4;     // columns per quad
constexpr int64_t kStrip = 64;   // columns dequantized at a time (many rows)
constexpr int64_t kManyRows = 8; // rows from which a strip is dequantized

thread_local kiln::rt::ScratchBuffer rowScratch;   // the rows' copies padded to whole units
thread_local kiln::rt::ScratchBuffer stripScratch; // a dequantized strip

/// The packed geometry of one call.
struct Geometry {
  int64_t K, units, blocks, block, unitBytes;
  bool nibbles; // 4-bit fields (else bytes)
  int64_t quadBytes() const { return units * kQuad * unitBytes; }
};

/// Code (quad q's column c, k) of packed codes `w` (starting at quad 0).
inline uint32_t codeAt(const uint8_t *w, const Geometry &g, int64_t q, int64_t c, int64_t k) {
  const uint8_t *unit = w + q * g.quadBytes() + ((k / kUnit) * kQuad + c) * g.unitBytes;
  int64_t j = k % kUnit;
  if (!g.nibbles)
    return unit[j];
  return j < 16 ? unit[j] & 15u : unit[j - 16] >> 4;
}

/// The row `a` in `pad`: K rounded up to whole units, zeros past K.
void padRow(const float *a, const Geometry &g, float *pad) {
  std::memcpy(pad, a, g.K * sizeof(float));
  std::fill(pad + g.K, pad + g.units * kUnit, 0.0f);
}

/// Stores a quad's `cols` results into c (adding when `acc`).
inline void storeQuad(const float *v, float *c, int64_t cols, bool acc) {
  for (int64_t j = 0; j < cols; ++j)
    c[j] = acc ? c[j] + v[j] : v[j];
}

void rowsPortable(const float *pads, int64_t M, const uint8_t *w, const float *scales,
                  const Geometry &g, int64_t N, float *C, int64_t ldc, bool acc) {
  for (int64_t q = 0; q * kQuad < N; ++q)
    for (int64_t i = 0; i < M; ++i) {
      const float *a = pads + i * g.units * kUnit;
      float *c = C + i * ldc;
      float out[kQuad];
      for (int64_t col = 0; col < kQuad; ++col) {
        float total = 0.0f;
        for (int64_t b = 0; b < g.blocks; ++b) {
          const float *sz = scales + (q * g.blocks + b) * 2 * kQuad;
          float s = 0.0f, z = sz[kQuad + col];
          for (int64_t k = b * g.block, e = std::min(g.K, k + g.block); k < e; ++k)
            s += a[k] * (static_cast<float>(codeAt(w, g, q, col, k)) - z);
          total += sz[col] * s;
        }
        out[col] = total;
      }
      storeQuad(out, c + q * kQuad, std::min(kQuad, N - q * kQuad), acc);
    }
}

/// Quads [q0, q0 + quads) dequantized as kiln_uk_sgemm_pb's panels of 32
/// columns (element (k, j) at out[(j / 32) * ld + k * 32 + j % 32]), every
/// unit's 32 k (codes past K are zero).
void stripPortable(const uint8_t *w, const float *scales, const Geometry &g, int64_t q0,
                   int64_t quads, float *out, int64_t ld) {
  for (int64_t q = q0; q < q0 + quads; ++q)
    for (int64_t col = 0; col < kQuad; ++col) {
      int64_t j = (q - q0) * kQuad + col;
      float *panel = out + (j / 32) * ld + j % 32;
      for (int64_t k = 0; k < g.units * kUnit; ++k) {
        const float *sz = scales + (q * g.blocks + std::min(k / g.block, g.blocks - 1)) * 2 * kQuad;
        panel[k * 32] = (static_cast<float>(codeAt(w, g, q, col, k)) - sz[kQuad + col]) * sz[col];
      }
    }
}

#if defined(__x86_64__)

/// The 32 codes of one unit less zero point z as four vectors of 8 floats
/// (k order).
__attribute__((target("avx2,fma"))) inline void unpackUnit(const uint8_t *u, bool nibbles, __m256 z,
                                                           __m256 w[4]) {
  __m128i lo, hi;
  if (nibbles) {
    __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i *>(u));
    __m128i mask = _mm_set1_epi8(15);
    lo = _mm_and_si128(raw, mask);                    // k 0..15
    hi = _mm_and_si128(_mm_srli_epi16(raw, 4), mask); // k 16..31
  } else {
    lo = _mm_loadu_si128(reinterpret_cast<const __m128i *>(u));
    hi = _mm_loadu_si128(reinterpret_cast<const __m128i *>(u + 16));
  }
  w[0] = _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(lo)), z);
  w[1] = _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8))), z);
  w[2] = _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(hi)), z);
  w[3] = _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8))), z);
}

__attribute__((target("avx2,fma"))) inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/// R rows (2 to 4) against every column: each unit's codes of a column
/// widened once and multiplied against every row (R independent FMA
/// chains), per block scaled into the row's total.
template <int R>
__attribute__((target("avx2,fma"))) void rowGroupAvx2(const float *pads, const uint8_t *w,
                                                      const float *scales, const Geometry &g,
                                                      int64_t N, float *C, int64_t ldc, bool acc) {
  int64_t unitsPerBlock = g.block / kUnit, stride = g.units * kUnit;
  for (int64_t j = 0; j < N; ++j) {
    int64_t q = j / kQuad, col = j % kQuad;
    const uint8_t *wc = w + q * g.quadBytes() + col * g.unitBytes;
    const float *sq = scales + q * g.blocks * 2 * kQuad;
    __m256 total[R];
    for (int r = 0; r < R; ++r)
      total[r] = _mm256_setzero_ps();
    for (int64_t b = 0; b < g.blocks; ++b) {
      const float *sz = sq + b * 2 * kQuad;
      __m256 z = _mm256_broadcast_ss(sz + kQuad + col);
      __m256 part[R];
      for (int r = 0; r < R; ++r)
        part[r] = _mm256_setzero_ps();
      int64_t u0 = b * unitsPerBlock, u1 = std::min(g.units, u0 + unitsPerBlock);
      for (int64_t u = u0; u < u1; ++u) {
        __m256 v[4];
        unpackUnit(wc + u * kQuad * g.unitBytes, g.nibbles, z, v);
        for (int r = 0; r < R; ++r) {
          const float *x = pads + r * stride + u * kUnit;
          part[r] = _mm256_fmadd_ps(v[0], _mm256_loadu_ps(x), part[r]);
          part[r] = _mm256_fmadd_ps(v[1], _mm256_loadu_ps(x + 8), part[r]);
          part[r] = _mm256_fmadd_ps(v[2], _mm256_loadu_ps(x + 16), part[r]);
          part[r] = _mm256_fmadd_ps(v[3], _mm256_loadu_ps(x + 24), part[r]);
        }
      }
      __m256 s = _mm256_broadcast_ss(sz + col);
      for (int r = 0; r < R; ++r)
        total[r] = _mm256_fmadd_ps(part[r], s, total[r]);
    }
    for (int r = 0; r < R; ++r) {
      float v = hsum(total[r]);
      float &out = C[r * ldc + j];
      out = acc ? out + v : v;
    }
  }
}

/// One row against every quad: per block, each column's sums of the row
/// times its codes less the zero point in a vector -- the four products of
/// a unit in two short chains, not one of four FMAs, whose latency bound
/// the loop -- scaled into the column's total.
__attribute__((target("avx2,fma"))) void rowAvx2(const float *a, const uint8_t *w,
                                                 const float *scales, const Geometry &g, int64_t N,
                                                 float *c, bool acc) {
  int64_t unitsPerBlock = g.block / kUnit;
  for (int64_t q = 0; q * kQuad < N; ++q) {
    const uint8_t *wq = w + q * g.quadBytes();
    const float *sq = scales + q * g.blocks * 2 * kQuad;
    // Prefetch the next quad's first lines while this one streams.
    if ((q + 1) * kQuad < N)
      for (int64_t off = 0; off < 4 * 64; off += 64)
        _mm_prefetch(reinterpret_cast<const char *>(wq + g.quadBytes() + off), _MM_HINT_T0);
    __m256 total[kQuad] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                           _mm256_setzero_ps()};
    for (int64_t b = 0; b < g.blocks; ++b) {
      const float *sz = sq + b * 2 * kQuad;
      __m256 part[kQuad] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                            _mm256_setzero_ps()};
      int64_t u0 = b * unitsPerBlock, u1 = std::min(g.units, u0 + unitsPerBlock);
      for (int64_t u = u0; u < u1; ++u) {
        const float *x = a + u * kUnit;
        __m256 x0 = _mm256_loadu_ps(x), x1 = _mm256_loadu_ps(x + 8);
        __m256 x2 = _mm256_loadu_ps(x + 16), x3 = _mm256_loadu_ps(x + 24);
        const uint8_t *wu = wq + u * kQuad * g.unitBytes;
        for (int64_t col = 0; col < kQuad; ++col) {
          __m256 v[4];
          unpackUnit(wu + col * g.unitBytes, g.nibbles, _mm256_broadcast_ss(sz + kQuad + col), v);
          __m256 p0 = _mm256_fmadd_ps(v[0], x0, part[col]);
          __m256 p1 = _mm256_mul_ps(v[1], x1);
          p0 = _mm256_fmadd_ps(v[2], x2, p0);
          p1 = _mm256_fmadd_ps(v[3], x3, p1);
          part[col] = _mm256_add_ps(p0, p1);
        }
      }
      for (int64_t col = 0; col < kQuad; ++col)
        total[col] = _mm256_fmadd_ps(part[col], _mm256_broadcast_ss(sz + col), total[col]);
    }
    float out[kQuad];
    for (int64_t col = 0; col < kQuad; ++col)
      out[col] = hsum(total[col]);
    storeQuad(out, c + q * kQuad, std::min(kQuad, N - q * kQuad), acc);
  }
}

/// The rows in groups of 4 (the last 2 or 3), a single row alone.
__attribute__((target("avx2,fma"))) void rowsAvx2(const float *pads, int64_t M, const uint8_t *w,
                                                  const float *scales, const Geometry &g, int64_t N,
                                                  float *C, int64_t ldc, bool acc) {
  int64_t stride = g.units * kUnit;
  for (int64_t i = 0; i < M;) {
    int64_t r = std::min<int64_t>(4, M - i);
    const float *p = pads + i * stride;
    if (r == 4)
      rowGroupAvx2<4>(p, w, scales, g, N, C + i * ldc, ldc, acc);
    else if (r == 3)
      rowGroupAvx2<3>(p, w, scales, g, N, C + i * ldc, ldc, acc);
    else if (r == 2)
      rowGroupAvx2<2>(p, w, scales, g, N, C + i * ldc, ldc, acc);
    else
      rowAvx2(p, w, scales, g, N, C + i * ldc, acc);
    i += r;
  }
}

/// stripPortable with each unit's 4 columns unpacked in registers, scaled,
/// and transposed into the panels' rows of 4 columns.
__attribute__((target("avx2,fma"))) void stripAvx2(const uint8_t *w, const float *scales,
                                                   const Geometry &g, int64_t q0, int64_t quads,
                                                   float *out, int64_t ld) {
  int64_t unitsPerBlock = g.block / kUnit;
  for (int64_t q = q0; q < q0 + quads; ++q) {
    int64_t j = (q - q0) * kQuad;
    float *panel = out + (j / 32) * ld + j % 32;
    const uint8_t *wq = w + q * g.quadBytes();
    for (int64_t u = 0; u < g.units; ++u) {
      const float *sz = scales + (q * g.blocks + u / unitsPerBlock) * 2 * kQuad;
      __m256 v[kQuad][4];
      for (int64_t col = 0; col < kQuad; ++col) {
        unpackUnit(wq + (u * kQuad + col) * g.unitBytes, g.nibbles,
                   _mm256_broadcast_ss(sz + kQuad + col), v[col]);
        __m256 s = _mm256_broadcast_ss(sz + col);
        for (int i = 0; i < 4; ++i)
          v[col][i] = _mm256_mul_ps(v[col][i], s);
      }
      for (int i = 0; i < 4; ++i) {
        // 4 columns x 8 k -> 8 rows of 4 columns (per 128-bit lane: k 0-3, 4-7).
        __m256 t0 = _mm256_unpacklo_ps(v[0][i], v[1][i]), t1 = _mm256_unpackhi_ps(v[0][i], v[1][i]);
        __m256 t2 = _mm256_unpacklo_ps(v[2][i], v[3][i]), t3 = _mm256_unpackhi_ps(v[2][i], v[3][i]);
        __m256 r[4] = {_mm256_shuffle_ps(t0, t2, 0x44), _mm256_shuffle_ps(t0, t2, 0xEE),
                       _mm256_shuffle_ps(t1, t3, 0x44), _mm256_shuffle_ps(t1, t3, 0xEE)};
        float *row = panel + (u * kUnit + i * 8) * 32;
        for (int k = 0; k < 4; ++k) {
          _mm_storeu_ps(row + k * 32, _mm256_castps256_ps128(r[k]));
          _mm_storeu_ps(row + (k + 4) * 32, _mm256_extractf128_ps(r[k], 1));
        }
      }
    }
  }
}

#endif

using RowsFn = void (*)(const float *, int64_t, const uint8_t *, const float *, const Geometry &,
                        int64_t, float *, int64_t, bool);
using StripFn = void (*)(const uint8_t *, const float *, const Geometry &, int64_t, int64_t,
                         float *, int64_t);

struct Impl {
  RowsFn rows;
  StripFn strip;
  const char *name;
};

const Impl &chosen() {
  static const Impl impl = [] {
#if defined(__x86_64__)
    if (kiln::rt::chooseIsa() != kiln::rt::Isa::Portable)
      return Impl{rowsAvx2, stripAvx2, "avx2"};
#endif
    return Impl{rowsPortable, stripPortable, "portable"};
  }();
  return impl;
}

} // namespace

extern "C" void kiln_uk_bqgemm(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda, int64_t w,
                               int64_t scales, int64_t c, int64_t ldc, int64_t bits, int64_t block,
                               int64_t flags) {
  if (M <= 0 || N <= 0)
    return;
  auto *A = reinterpret_cast<const float *>(a);
  auto *C = reinterpret_cast<float *>(c);
  auto *W = reinterpret_cast<const uint8_t *>(w);
  auto *S = reinterpret_cast<const float *>(scales);
  bool acc = (flags & KILN_UK_ACCUMULATE) != 0;
  Geometry g{K,     (K + kUnit - 1) / kUnit,       (K + block - 1) / block,
             block, bits <= 4 ? kUnit / 2 : kUnit, bits <= 4};
  if (M >= kManyRows) {
    int64_t ld = 32 * g.units * kUnit;
    float *strip = stripScratch.get<float>(kStrip / 32 * ld);
    if (!strip)
      return; // (the run fails with KILN_ERROR_OUT_OF_MEMORY: Scratch.h)
    for (int64_t j = 0; j < N; j += kStrip) {
      int64_t cols = std::min(kStrip, N - j), quads = (cols + kQuad - 1) / kQuad;
      if (quads * kQuad % 32) // (the last panel's columns past the quads: zero)
        std::memset(strip, 0, kStrip / 32 * ld * sizeof(float));
      chosen().strip(W, S, g, j / kQuad, quads, strip, ld);
      kiln_uk_sgemm_pb(M, cols, K, a, lda, reinterpret_cast<int64_t>(strip), ld,
                       reinterpret_cast<int64_t>(C + j), ldc, flags & KILN_UK_ACCUMULATE);
    }
    return;
  }
  float *pads = rowScratch.get<float>(M * g.units * kUnit);
  if (!pads)
    return;
  for (int64_t i = 0; i < M; ++i)
    padRow(A + i * lda, g, pads + i * g.units * kUnit);
  chosen().rows(pads, M, W, S, g, N, C, ldc, acc);
}

extern "C" const char *kiln_uk_bqgemm_impl() { return chosen().name; }
