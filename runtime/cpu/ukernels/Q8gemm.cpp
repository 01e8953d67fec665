//===- Q8gemm.cpp - 8-bit integer matrix-product ukernels, int32 sums -----===//
//
// C[M x N] (+)= (A - a_zero)[M x K] * B[K x N], exact in int32: A 8-bit
// activations (unsigned or signed) in rows, B weights packed at compile time
// as 16-bit values (b - b_zero) in pairs of k, in the 32-column panels of
// kiln_uk_sbgemm_pb. Both operands less their zero points fit 16 bits, so
// every product and every pair's sum is exact in 32 bits, and the sums wrap
// past 2^31 as onnxruntime's int32 ones do.
//
// Implementations, chosen from cpuid on first use (KILN_UKERNEL=portable or
// avx2 forces one the CPU has; kiln_uk_q8gemm_impl() names it):
//   avx2      a 4 x 16 tile of C in 8 ymm: A's rows widened to 16 bits and
//             packed in pairs of k (one 32-bit word per row and pair; 16
//             bytes of 4 rows at a time, transposed in registers), each
//             word broadcast and multiplied against 8 columns' pairs by
//             VPMADDWD (16 multiply-adds an instruction, twice an f32 FMA's);
//   portable  the same sums in scalar code.
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

constexpr int64_t kPanel = 32;      // columns of a packed B panel
constexpr int64_t kRows = 4;        // rows of a C tile (8 accumulators: none spilled)
constexpr int64_t kCols = 16;       // columns of a C tile
constexpr int64_t kPairBlock = 256; // pairs of k per block (A's packed rows in L1)

thread_local kiln::rt::ScratchBuffer packedA;

/// The value of A's element k of `row` less the zero point (0 past K).
inline int32_t aValue(const uint8_t *row, int64_t k, int64_t K, bool isSigned, int32_t zero) {
  if (k >= K)
    return 0;
  int32_t v = isSigned ? static_cast<int32_t>(static_cast<int8_t>(row[k])) : row[k];
  return v - zero;
}

/// Rows [0, mr) of A (rows past mr zero), pairs [p0, p0 + pc), as 32-bit
/// words of two 16-bit values: word (p, r) at pk[p * kRows + r].
void packPairs(const uint8_t *A, int64_t lda, int64_t mr, int64_t K, int64_t p0, int64_t pc,
               bool isSigned, int32_t zero, uint32_t *pk) {
  for (int64_t r = 0; r < kRows; ++r) {
    const uint8_t *row = A + r * lda;
    for (int64_t p = 0; p < pc; ++p) {
      uint32_t w = 0;
      if (r < mr) {
        int64_t k = 2 * (p0 + p);
        auto lo = static_cast<uint16_t>(aValue(row, k, K, isSigned, zero));
        auto hi = static_cast<uint16_t>(aValue(row, k + 1, K, isSigned, zero));
        w = lo | static_cast<uint32_t>(hi) << 16;
      }
      pk[p * kRows + r] = w;
    }
  }
}

/// The packed B element (k, j): pair p = k / 2 of column j.
inline int32_t bValue(const int16_t *B, int64_t ldb, int64_t k, int64_t j) {
  return B[(j / kPanel) * ldb + ((k / 2) * kPanel + j % kPanel) * 2 + k % 2];
}

void q8gemmPortable(int64_t M, int64_t N, int64_t K, const uint8_t *A, int64_t lda, int32_t zero,
                    bool isSigned, const int16_t *B, int64_t ldb, int32_t *C, int64_t ldc,
                    bool acc) {
  for (int64_t i = 0; i < M; ++i) {
    const uint8_t *row = A + i * lda;
    for (int64_t j = 0; j < N; ++j) {
      // (Unsigned arithmetic: the int32 sum wraps instead of overflowing.)
      uint32_t s = acc ? static_cast<uint32_t>(C[i * ldc + j]) : 0u;
      for (int64_t k = 0; k < K; ++k)
        s += static_cast<uint32_t>(aValue(row, k, K, isSigned, zero) * bValue(B, ldb, k, j));
      C[i * ldc + j] = static_cast<int32_t>(s);
    }
  }
}

#if defined(__x86_64__)

__attribute__((target("avx2"))) inline __m256i laneMask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// C[mr x nr] (+)= a 4 x 16 tile over `pc` pairs: `pk` A's packed words
/// (pair p, row r at pk[p * 4 + r]), `b` the tile's first column in its
/// panel (pair p at b + p * 64). Named accumulators, two pairs a step, each
/// step's sums pinned in registers by an empty asm: without it GCC
/// reassociates the integer adds across steps (the two steps' products
/// summed first), runs out of registers and spills half the accumulators
/// (0.5x the throughput).
__attribute__((target("avx2"))) void tile4x16(int64_t pc, const uint32_t *pk, const int16_t *b,
                                              int32_t *c, int64_t ldc, int64_t mr, int64_t nr,
                                              bool load) {
  __m256i m0 = laneMask(std::min<int64_t>(nr, 8)), m1 = laneMask(nr - 8);
  __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
          c30 = c00, c31 = c00;
  const int *row[4] = {reinterpret_cast<const int *>(c), reinterpret_cast<const int *>(c + ldc),
                       reinterpret_cast<const int *>(c + 2 * ldc),
                       reinterpret_cast<const int *>(c + 3 * ldc)};
  if (load) {
    c00 = _mm256_maskload_epi32(row[0], m0), c01 = _mm256_maskload_epi32(row[0] + 8, m1);
    if (mr > 1)
      c10 = _mm256_maskload_epi32(row[1], m0), c11 = _mm256_maskload_epi32(row[1] + 8, m1);
    if (mr > 2)
      c20 = _mm256_maskload_epi32(row[2], m0), c21 = _mm256_maskload_epi32(row[2] + 8, m1);
    if (mr > 3)
      c30 = _mm256_maskload_epi32(row[3], m0), c31 = _mm256_maskload_epi32(row[3] + 8, m1);
  }
  // (A macro, not a lambda: GCC does not give lambdas the function's
  // target.)
#define KILN_Q8_STEP(bp, w)                                                                    \
  {                                                                                            \
    __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(bp));                    \
    __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>((bp) + 16));             \
    __m256i a = _mm256_set1_epi32(static_cast<int>((w)[0]));                                   \
    c00 = _mm256_add_epi32(c00, _mm256_madd_epi16(a, b0));                                     \
    c01 = _mm256_add_epi32(c01, _mm256_madd_epi16(a, b1));                                     \
    a = _mm256_set1_epi32(static_cast<int>((w)[1]));                                           \
    c10 = _mm256_add_epi32(c10, _mm256_madd_epi16(a, b0));                                     \
    c11 = _mm256_add_epi32(c11, _mm256_madd_epi16(a, b1));                                     \
    a = _mm256_set1_epi32(static_cast<int>((w)[2]));                                           \
    c20 = _mm256_add_epi32(c20, _mm256_madd_epi16(a, b0));                                     \
    c21 = _mm256_add_epi32(c21, _mm256_madd_epi16(a, b1));                                     \
    a = _mm256_set1_epi32(static_cast<int>((w)[3]));                                           \
    c30 = _mm256_add_epi32(c30, _mm256_madd_epi16(a, b0));                                     \
    c31 = _mm256_add_epi32(c31, _mm256_madd_epi16(a, b1));                                     \
    __asm__("" : "+x"(c00), "+x"(c01), "+x"(c10), "+x"(c11), "+x"(c20), "+x"(c21), "+x"(c30),   \
            "+x"(c31));                                                                        \
  }
  int64_t p = 0;
  for (; p + 2 <= pc; p += 2) {
    KILN_Q8_STEP(b + p * kPanel * 2, pk + p * kRows)
    KILN_Q8_STEP(b + (p + 1) * kPanel * 2, pk + (p + 1) * kRows)
  }
  if (p < pc)
    KILN_Q8_STEP(b + p * kPanel * 2, pk + p * kRows)
#undef KILN_Q8_STEP
  int *out[4] = {reinterpret_cast<int *>(c), reinterpret_cast<int *>(c + ldc),
                 reinterpret_cast<int *>(c + 2 * ldc), reinterpret_cast<int *>(c + 3 * ldc)};
  __m256i lo[4] = {c00, c10, c20, c30}, hi[4] = {c01, c11, c21, c31};
  for (int64_t r = 0; r < mr; ++r) {
    _mm256_maskstore_epi32(out[r], m0, lo[r]);
    _mm256_maskstore_epi32(out[r] + 8, m1, hi[r]);
  }
}

/// packPairs with AVX2: 8 pairs (16 bytes) of each of the 4 rows at a time
/// widened to 16 bits less the zero point, then transposed into the packed
/// order (pair-major, 4 rows a pair); the rest (a tail past the last 16
/// bytes, a block of fewer than 4 rows) as packPairs does.
__attribute__((target("avx2"))) void packPairsAvx2(const uint8_t *A, int64_t lda, int64_t mr,
                                                   int64_t K, int64_t p0, int64_t pc,
                                                   bool isSigned, int32_t zero, uint32_t *pk) {
  if (mr < kRows)
    return packPairs(A, lda, mr, K, p0, pc, isSigned, zero, pk);
  const __m256i z = _mm256_set1_epi16(static_cast<int16_t>(zero));
  int64_t p = 0;
  for (; p + 8 <= pc && 2 * (p0 + p) + 16 <= K; p += 8) {
    __m256i v[kRows];
    for (int64_t r = 0; r < kRows; ++r) {
      __m128i bytes =
          _mm_loadu_si128(reinterpret_cast<const __m128i *>(A + r * lda + 2 * (p0 + p)));
      __m256i w = isSigned ? _mm256_cvtepi8_epi16(bytes) : _mm256_cvtepu8_epi16(bytes);
      v[r] = _mm256_sub_epi16(w, z);
    }
    __m256i t0 = _mm256_unpacklo_epi32(v[0], v[1]), t1 = _mm256_unpackhi_epi32(v[0], v[1]);
    __m256i t2 = _mm256_unpacklo_epi32(v[2], v[3]), t3 = _mm256_unpackhi_epi32(v[2], v[3]);
    __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    auto *out = reinterpret_cast<__m256i *>(pk + p * kRows);
    _mm256_storeu_si256(out, _mm256_permute2x128_si256(u0, u1, 0x20));
    _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(u2, u3, 0x20));
    _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(u0, u1, 0x31));
    _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(u2, u3, 0x31));
  }
  if (p < pc)
    packPairs(A, lda, mr, K, p0 + p, pc - p, isSigned, zero, pk + p * kRows);
}

/// Per k block: every row block of A packed once (in L2), then each 16
/// columns' B tile (16 KiB of pairs, in L1) against every row block.
__attribute__((target("avx2"))) void
q8gemmAvx2(int64_t M, int64_t N, int64_t K, const uint8_t *A, int64_t lda, int32_t zero,
           bool isSigned, const int16_t *B, int64_t ldb, int32_t *C, int64_t ldc, bool acc) {
  int64_t pairs = (K + 1) / 2, rowBlocks = (M + kRows - 1) / kRows;
  int64_t blockWords = kRows * std::min(pairs, kPairBlock);
  uint32_t *pk = packedA.get<uint32_t>(rowBlocks * blockWords);
  if (!pk)
    return; // (the run fails with KILN_ERROR_OUT_OF_MEMORY: Scratch.h)
  for (int64_t p0 = 0; p0 < pairs; p0 += kPairBlock) {
    int64_t pc = std::min(kPairBlock, pairs - p0);
    bool load = acc || p0 > 0;
    for (int64_t ib = 0; ib < rowBlocks; ++ib)
      packPairsAvx2(A + ib * kRows * lda, lda, std::min(kRows, M - ib * kRows), K, p0, pc,
                    isSigned, zero, pk + ib * blockWords);
    for (int64_t j = 0; j < N; j += kCols) {
      const int16_t *b = B + (j / kPanel) * ldb + (p0 * kPanel + j % kPanel) * 2;
      for (int64_t ib = 0; ib < rowBlocks; ++ib)
        tile4x16(pc, pk + ib * blockWords, b, C + ib * kRows * ldc + j, ldc,
                 std::min(kRows, M - ib * kRows), std::min(kCols, N - j), load);
    }
  }
}

#endif

using Fn = void (*)(int64_t, int64_t, int64_t, const uint8_t *, int64_t, int32_t, bool,
                    const int16_t *, int64_t, int32_t *, int64_t, bool);

struct Impl {
  Fn pb;
  const char *name;
};

const Impl &chosen() {
  static const Impl impl = [] {
#if defined(__x86_64__)
    // (AVX-512 machines run the AVX2 tile until their own paths land.)
    if (kiln::rt::chooseIsa() != kiln::rt::Isa::Portable)
      return Impl{q8gemmAvx2, "avx2"};
#endif
    return Impl{q8gemmPortable, "portable"};
  }();
  return impl;
}

} // namespace

extern "C" void kiln_uk_q8gemm_pb(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                                  int64_t a_zero, int64_t b, int64_t ldb, int64_t c, int64_t ldc,
                                  int64_t flags) {
  if (M <= 0 || N <= 0)
    return;
  auto *C = reinterpret_cast<int32_t *>(c);
  bool acc = (flags & KILN_UK_ACCUMULATE) != 0;
  if (K <= 0) {
    if (!acc)
      for (int64_t i = 0; i < M; ++i)
        std::memset(C + i * ldc, 0, N * sizeof(int32_t));
    return;
  }
  chosen().pb(M, N, K, reinterpret_cast<const uint8_t *>(a), lda, static_cast<int32_t>(a_zero),
              (flags & KILN_UK_A_INT8) != 0, reinterpret_cast<const int16_t *>(b), ldb, C, ldc,
              acc);
}

extern "C" const char *kiln_uk_q8gemm_impl() { return chosen().name; }
