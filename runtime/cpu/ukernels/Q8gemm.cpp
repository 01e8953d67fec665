//===- Q8gemm.cpp - 8-bit integer matrix-product ukernels, int32 sums -----===//
//
// C[M x N] (+)= (A - a_zero)[M x K] * (B + b_shift)[K x N], exact in int32:
// A 8-bit activations (unsigned or signed) in rows, B signed bytes packed at
// compile time in 16-column panels of quads of k, each panel followed by its
// column sums (kiln/runtime.h). The sums wrap past 2^31 as onnxruntime's
// int32 ones do. b_shift (rare: u8 weights whose zero point leaves them
// outside 8 signed bits) adds b_shift * sum_k (a - a_zero) to each row.
//
// Implementations, chosen from cpuid on first use (KILN_UKERNEL=avx2 or
// portable forces one the CPU has; kiln_uk_q8gemm_impl() names it):
//   avx512vnni  VPDPBUSD: a row's 4 bytes of a quad broadcast as one 32-bit
//               word, times 16 columns' 4 signed bytes, the 4 products added
//               into each column's int32 (exact: the non-saturating form).
//               Its unsigned operand is A as it lies in memory (a signed A
//               flipped to a + 128 by one XOR); the zero point comes out
//               through the packed column sums, sum (a - z) b = sum a b -
//               z sum b. Tiles of up to 6 rows x 64 columns (24 zmm
//               accumulators) over k blocks of 512 whose B tile stays in L1;
//   avx2        A's rows widened to 16 bits less the zero point (a quad is
//               one 64-bit word, broadcast), B's bytes widened to 16 bits,
//               VPMADDWD: two partial sums per column, added across at the
//               end; tiles of up to 6 rows x 8 columns;
//   portable    the same sums in scalar code.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime.h"
#include "runtime/cpu/ukernels/Isa.h"
#include "runtime/cpu/ukernels/Scratch.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

constexpr int64_t kPanel = 16;     // columns of a packed B panel
constexpr int64_t kQuadBytes = 64; // one quad of k of a panel

/// One call's operands (kiln_uk_q8gemm_pq's arguments, typed).
struct Args {
  int64_t M, N, K;
  const uint8_t *A;
  int64_t lda;
  int32_t zero;
  bool isSigned;
  const int8_t *B;
  int64_t ldb;
  int32_t shift;
  int32_t *C;
  int64_t ldc;
  bool acc;

  int64_t quads() const { return (K + 3) / 4; }
  /// The column sums of the panel holding column j (16 int32).
  const int32_t *colSums(int64_t j) const {
    return reinterpret_cast<const int32_t *>(B + (j / kPanel) * ldb + quads() * kQuadBytes);
  }
};

thread_local kiln::rt::ScratchBuffer rowScratch;
thread_local kiln::rt::ScratchBuffer packedA;

/// A's element k of `row` less the zero point.
inline int32_t aValue(const uint8_t *row, int64_t k, bool isSigned, int32_t zero) {
  int32_t v = isSigned ? static_cast<int32_t>(static_cast<int8_t>(row[k])) : row[k];
  return v - zero;
}

/// The packed B element (k, j).
inline int32_t bValue(const Args &g, int64_t k, int64_t j) {
  return g.B[(j / kPanel) * g.ldb + (k / 4) * kQuadBytes + (j % kPanel) * 4 + k % 4];
}

/// shift * sum_k (a - zero) of each row, wrapping as int32 (null on failure).
const int32_t *rowShifts(const Args &g) {
  auto *out = rowScratch.get<int32_t>(g.M);
  if (!out)
    return nullptr;
  for (int64_t i = 0; i < g.M; ++i) {
    uint32_t s = 0;
    const uint8_t *row = g.A + i * g.lda;
    for (int64_t k = 0; k < g.K; ++k)
      s += static_cast<uint32_t>(aValue(row, k, g.isSigned, g.zero));
    out[i] = static_cast<int32_t>(s * static_cast<uint32_t>(g.shift));
  }
  return out;
}

void q8gemmPortable(const Args &g) {
  for (int64_t i = 0; i < g.M; ++i) {
    const uint8_t *row = g.A + i * g.lda;
    for (int64_t j = 0; j < g.N; ++j) {
      // (Unsigned arithmetic: the int32 sum wraps instead of overflowing.)
      uint32_t s = g.acc ? static_cast<uint32_t>(g.C[i * g.ldc + j]) : 0u;
      for (int64_t k = 0; k < g.K; ++k)
        s += static_cast<uint32_t>(aValue(row, k, g.isSigned, g.zero) *
                                   (bValue(g, k, j) + g.shift));
      g.C[i * g.ldc + j] = static_cast<int32_t>(s);
    }
  }
}

#if defined(__x86_64__)

//===--- avx2 ---------------------------------------------------------===//

constexpr int64_t kRows2 = 6;         // rows of an AVX2 tile (12 accumulators)
constexpr int64_t kQuadBlock2 = 256;  // quads per k block (packed A in L2)

/// Rows [0, mr) of A (rows past mr zero), quads [q0, q0 + qc), as 16-bit
/// values less the zero point (zero past K): quad q of row r is the 64-bit
/// word at pk + (q * kRows2 + r) * 4.
__attribute__((target("avx2"))) void packQuads(const Args &g, const uint8_t *A, int64_t mr,
                                               int64_t q0, int64_t qc, int16_t *pk) {
  const __m256i z = _mm256_set1_epi16(static_cast<int16_t>(g.zero));
  for (int64_t r = 0; r < kRows2; ++r) {
    const uint8_t *row = A + r * g.lda;
    int64_t q = 0;
    if (r < mr)
      for (; q + 4 <= qc && 4 * (q0 + q) + 16 <= g.K; q += 4) {
        __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i *>(row + 4 * (q0 + q)));
        __m256i w = g.isSigned ? _mm256_cvtepi8_epi16(bytes) : _mm256_cvtepu8_epi16(bytes);
        w = _mm256_sub_epi16(w, z);
        alignas(32) int64_t words[4];
        _mm256_store_si256(reinterpret_cast<__m256i *>(words), w);
        for (int t = 0; t < 4; ++t)
          std::memcpy(pk + ((q + t) * kRows2 + r) * 4, &words[t], 8);
      }
    for (; q < qc; ++q)
      for (int64_t t = 0; t < 4; ++t) {
        int64_t k = 4 * (q0 + q) + t;
        pk[(q * kRows2 + r) * 4 + t] =
            r < mr && k < g.K ? static_cast<int16_t>(aValue(row, k, g.isSigned, g.zero)) : 0;
      }
  }
}

__attribute__((target("avx2"))) inline __m256i laneMask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// C[MR x nr] (+)= an MR x 8 tile over `qc` quads: `pk` the row block's
/// packed words, `b` the tile's first column in its panel (quad q at b + q *
/// 64). Each accumulator holds two partial sums per column (pairs of k),
/// added across as the tile is stored; `rowAdd` (or null) adds one value
/// per row.
template <int MR>
__attribute__((target("avx2"))) void tileAvx2(int64_t qc, const int16_t *pk, const int8_t *b,
                                              int32_t *c, int64_t ldc, int64_t nr, bool load,
                                              const int32_t *rowAdd) {
  __m256i acc[MR][2];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r)
    acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  for (int64_t q = 0; q < qc; ++q) {
    const int8_t *bq = b + q * kQuadBytes;
    __m256i b0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i *>(bq)));
    __m256i b1 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i *>(bq + 16)));
    const int16_t *w = pk + q * kRows2 * 4;
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      int64_t word;
      std::memcpy(&word, w + r * 4, 8);
      __m256i a = _mm256_set1_epi64x(word);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(a, b0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(a, b1));
      // (Row by row: left free, GCC issues every row's broadcast first and
      // spills half the accumulators.)
      __asm__("" : "+x"(acc[r][0]), "+x"(acc[r][1]));
    }
  }
  __m256i m = laneMask(nr);
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    // [c0 c1 c4 c5 | c2 c3 c6 c7] -> columns in order.
    __m256i s = _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[r][0], acc[r][1]), 0xD8);
    int *out = reinterpret_cast<int *>(c + r * ldc);
    if (load)
      s = _mm256_add_epi32(s, _mm256_maskload_epi32(out, m));
    if (rowAdd)
      s = _mm256_add_epi32(s, _mm256_set1_epi32(rowAdd[r]));
    _mm256_maskstore_epi32(out, m, s);
  }
}

using Tile2Fn = void (*)(int64_t, const int16_t *, const int8_t *, int32_t *, int64_t, int64_t,
                         bool, const int32_t *);
constexpr Tile2Fn kTiles2[kRows2] = {tileAvx2<1>, tileAvx2<2>, tileAvx2<3>,
                                     tileAvx2<4>, tileAvx2<5>, tileAvx2<6>};

/// Per k block: every row block of A packed once (in L2), then each 8
/// columns' B tile (in L1) against every row block.
__attribute__((target("avx2"))) void q8gemmAvx2(const Args &g) {
  int64_t quads = g.quads(), rowBlocks = (g.M + kRows2 - 1) / kRows2;
  int64_t blockWords = kRows2 * 4 * std::min(quads, kQuadBlock2);
  auto *pk = packedA.get<int16_t>(rowBlocks * blockWords);
  const int32_t *shifts = g.shift ? rowShifts(g) : nullptr;
  if (!pk || (g.shift && !shifts))
    return; // (the run fails with KILN_ERROR_OUT_OF_MEMORY: Scratch.h)
  for (int64_t q0 = 0; q0 < quads; q0 += kQuadBlock2) {
    int64_t qc = std::min(kQuadBlock2, quads - q0);
    bool first = q0 == 0;
    for (int64_t ib = 0; ib < rowBlocks; ++ib)
      packQuads(g, g.A + ib * kRows2 * g.lda, std::min(kRows2, g.M - ib * kRows2), q0, qc,
                pk + ib * blockWords);
    for (int64_t j = 0; j < g.N; j += 8) {
      const int8_t *b = g.B + (j / kPanel) * g.ldb + q0 * kQuadBytes + (j % kPanel) * 4;
      for (int64_t ib = 0; ib < rowBlocks; ++ib)
        kTiles2[std::min(kRows2, g.M - ib * kRows2) - 1](
            qc, pk + ib * blockWords, b, g.C + ib * kRows2 * g.ldc + j, g.ldc,
            std::min<int64_t>(8, g.N - j), g.acc || !first,
            first && shifts ? shifts + ib * kRows2 : nullptr);
    }
  }
}

//===--- avx512vnni ---------------------------------------------------===//

#define KILN_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

constexpr int64_t kQuadBlock512 = 128; // quads per k block: 4 panels' B tile in 32 KiB

constexpr int maxRows512(int vectors) { return vectors >= 4 ? 6 : vectors == 3 ? 8 : 12; }

/// One tile's operands: rows [0, MR) x NV * 16 columns over one k block.
struct Tile {
  int64_t quads;      // quads of A's rows to read (whole: 4 bytes each)
  const uint8_t *A;   // the block's first byte of the tile's first row
  int64_t lda;
  const int8_t *B;    // the block's first quad of the tile's first panel
  int64_t ldb;
  int32_t *C;
  int64_t ldc;
  int64_t cols;       // columns to store (<= NV * 16)
  bool load;          // add C's values
  const int32_t *colAdd; // NV * 16 values added to each row (or null)
  const int32_t *rowAdd; // MR values, one per row (or null)
};

KILN_VNNI inline __mmask16 colMask(int64_t cols, int v) {
  int64_t n = cols - 16 * v;
  return n >= 16 ? static_cast<__mmask16>(0xFFFF)
                 : n <= 0 ? static_cast<__mmask16>(0) : static_cast<__mmask16>((1u << n) - 1);
}

/// C[MR x cols] (+)= one tile over t.quads whole quads: each row's 4 bytes
/// broadcast (flipped to a + 128 when A is signed) against NV panels' 16
/// columns. Whole quads only: a short copy of K's last bytes in this
/// function made GCC -O3 keep every accumulator in memory (0.45x).
template <int MR, int NV, bool Flip> KILN_VNNI void tileVnni(const Tile &t) {
  __m512i acc[MR][NV];
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      acc[r][v] = _mm512_setzero_si512();
  const uint32_t flip = Flip ? 0x80808080u : 0u;
  int64_t q = 0;
  for (; q < t.quads; ++q) {
    __m512i b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      b[v] = _mm512_loadu_si512(t.B + v * t.ldb + q * kQuadBytes);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      uint32_t word;
      std::memcpy(&word, t.A + r * t.lda + 4 * q, 4);
      __m512i a = _mm512_set1_epi32(static_cast<int>(word ^ flip));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v)
        acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], a, b[v]);
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      __mmask16 m = colMask(t.cols, v);
      int32_t *out = t.C + r * t.ldc + 16 * v;
      __m512i s = acc[r][v];
      if (t.load)
        s = _mm512_add_epi32(s, _mm512_maskz_loadu_epi32(m, out));
      if (t.colAdd)
        s = _mm512_add_epi32(s, _mm512_loadu_si512(t.colAdd + 16 * v));
      if (t.rowAdd)
        s = _mm512_add_epi32(s, _mm512_set1_epi32(t.rowAdd[r]));
      _mm512_mask_storeu_epi32(out, m, s);
    }
}

using TileFn = void (*)(const Tile &);

template <int MR, int NV, bool Flip> constexpr TileFn tileOrNull() {
  if constexpr (MR <= maxRows512(NV))
    return &tileVnni<MR, NV, Flip>;
  else
    return nullptr;
}

template <int NV, bool Flip, int... R>
constexpr void fillRows(TileFn *row, std::integer_sequence<int, R...>) {
  ((row[R] = tileOrNull<R + 1, NV, Flip>()), ...);
}

/// tiles[flip][NV - 1][MR - 1].
struct TileTable {
  TileFn fn[2][4][12] = {};
  constexpr TileTable() {
    auto rows = std::make_integer_sequence<int, 12>{};
    fillRows<1, false>(fn[0][0], rows), fillRows<2, false>(fn[0][1], rows);
    fillRows<3, false>(fn[0][2], rows), fillRows<4, false>(fn[0][3], rows);
    fillRows<1, true>(fn[1][0], rows), fillRows<2, true>(fn[1][1], rows);
    fillRows<3, true>(fn[1][2], rows), fillRows<4, true>(fn[1][3], rows);
  }
};
constexpr TileTable kTiles;

/// shift * sum_k (a - zero) per row with VPSADBW (sums of 8 bytes).
KILN_VNNI const int32_t *rowShifts512(const Args &g) {
  auto *out = rowScratch.get<int32_t>(g.M);
  if (!out)
    return nullptr;
  const __m512i flip = _mm512_set1_epi8(g.isSigned ? static_cast<char>(0x80) : 0);
  const int32_t zeroU = g.isSigned ? g.zero + 128 : g.zero; // z in a + 128's terms
  for (int64_t i = 0; i < g.M; ++i) {
    const uint8_t *row = g.A + i * g.lda;
    __m512i s = _mm512_setzero_si512();
    int64_t k = 0;
    for (; k + 64 <= g.K; k += 64) {
      __m512i x = _mm512_xor_si512(_mm512_loadu_si512(row + k), flip);
      s = _mm512_add_epi64(s, _mm512_sad_epu8(x, _mm512_setzero_si512()));
    }
    alignas(64) uint64_t lanes[8];
    _mm512_store_si512(lanes, s);
    uint64_t sum = 0;
    for (uint64_t l : lanes)
      sum += l;
    for (; k < g.K; ++k)
      sum += static_cast<uint8_t>(row[k] ^ (g.isSigned ? 0x80 : 0));
    uint32_t less = static_cast<uint32_t>(sum) -
                    static_cast<uint32_t>(zeroU) * static_cast<uint32_t>(g.K);
    out[i] = static_cast<int32_t>(less * static_cast<uint32_t>(g.shift));
  }
  return out;
}

/// Per k block: each tile of up to 64 columns (its B block in L1) against
/// every row tile. The first block adds the zero point's and the shift's
/// terms (and C where accumulating); later ones add C.
KILN_VNNI void q8gemmVnni(const Args &g) {
  int64_t quads = g.quads(), tail = g.K % 4;
  const int32_t *shifts = g.shift ? rowShifts512(g) : nullptr;
  if (g.shift && !shifts)
    return; // (the run fails with KILN_ERROR_OUT_OF_MEMORY: Scratch.h)
  uint32_t zeroU = static_cast<uint32_t>(g.isSigned ? g.zero + 128 : g.zero);
  const TileFn(*table)[12] = kTiles.fn[g.isSigned ? 1 : 0];
  alignas(64) int32_t colAdd[64];
  for (int64_t q0 = 0; q0 < quads; q0 += kQuadBlock512) {
    int64_t qc = std::min(kQuadBlock512, quads - q0);
    bool first = q0 == 0, last = q0 + qc == quads;
    int64_t whole = last && tail ? qc - 1 : qc;
    for (int64_t j = 0; j < g.N; j += 64) {
      int64_t cols = std::min<int64_t>(64, g.N - j);
      int nv = static_cast<int>((cols + 15) / 16), maxRows = maxRows512(nv);
      if (first)
        for (int v = 0; v < nv; ++v) {
          // -z * sum_k b per column: (a - z) b summed = a b summed - z sum b.
          __m512i sums = _mm512_loadu_si512(g.colSums(j + 16 * v));
          _mm512_store_si512(colAdd + 16 * v,
                             _mm512_mullo_epi32(sums, _mm512_set1_epi32(-static_cast<int>(zeroU))));
        }
      const int8_t *b = g.B + (j / kPanel) * g.ldb + q0 * kQuadBytes;
      Tile t{whole, nullptr, g.lda, b, g.ldb, nullptr, g.ldc, cols, g.acc || !first,
             first ? colAdd : nullptr, nullptr};
      for (int64_t i = 0; i < g.M; i += maxRows) {
        int64_t mr = std::min<int64_t>(maxRows, g.M - i);
        t.A = g.A + i * g.lda + 4 * q0;
        t.C = g.C + i * g.ldc + j;
        t.rowAdd = first && shifts ? shifts + i : nullptr;
        table[nv - 1][mr - 1](t);
        if (whole == qc)
          continue;
        // K's last bytes, short of a quad: the rows' tails copied into
        // whole quads (zero past K; B is zero there) and added to C.
        uint8_t quad[12 * 4] = {};
        for (int64_t r = 0; r < mr; ++r)
          std::memcpy(quad + 4 * r, t.A + r * g.lda + 4 * whole, tail);
        Tile tailTile{1, quad, 4, b + whole * kQuadBytes, g.ldb, t.C, g.ldc, cols, true,
                  nullptr, nullptr};
        table[nv - 1][mr - 1](tailTile);
      }
    }
  }
}

#undef KILN_VNNI

#endif

using Fn = void (*)(const Args &);

struct Impl {
  Fn run;
  const char *name;
};

const Impl &chosen() {
  static const Impl impl = [] {
#if defined(__x86_64__)
    kiln::rt::Isa isa = kiln::rt::chooseIsa();
    bool vnni = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
    if (isa == kiln::rt::Isa::Avx512 && vnni)
      return Impl{q8gemmVnni, "avx512vnni"};
    // (AVX-512 without VNNI runs the AVX2 tile.)
    if (isa != kiln::rt::Isa::Portable)
      return Impl{q8gemmAvx2, "avx2"};
#endif
    return Impl{q8gemmPortable, "portable"};
  }();
  return impl;
}

} // namespace

extern "C" void kiln_uk_q8gemm_pq(int64_t M, int64_t N, int64_t K, int64_t a, int64_t lda,
                                  int64_t a_zero, int64_t b, int64_t ldb, int64_t b_shift,
                                  int64_t c, int64_t ldc, int64_t flags) {
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
  Args g{M,
         N,
         K,
         reinterpret_cast<const uint8_t *>(a),
         lda,
         static_cast<int32_t>(a_zero),
         (flags & KILN_UK_A_INT8) != 0,
         reinterpret_cast<const int8_t *>(b),
         ldb,
         static_cast<int32_t>(b_shift),
         C,
         ldc,
         acc};
  chosen().run(g);
}

extern "C" const char *kiln_uk_q8gemm_impl() { return chosen().name; }
