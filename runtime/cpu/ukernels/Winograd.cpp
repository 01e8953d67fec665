//===- Winograd.cpp - F(2x2, 3x3) and F(4x4, 3x3) convolution workgroups -===//
//
// A 3x3, stride-1, one-group NHWC convolution in Winograd's F(2x2, 3x3)
// form: each 2x2 block of output pixels ("tile") comes from a 4x4 patch of
// input d as
//
//   Y = A^T [ U (.) V ] A,   V = B^T d B (per input channel),
//                            U = G g G^T (per channel pair, at compile time),
//
// so the 16 products of U and V replace the 36 multiply-adds of the direct
// form (2.25x fewer). With the tiles as rows, each of the 16 positions xi
// of the 4x4 transform domain is one matrix product over the input
// channels:
//
//   M_xi[tile][o] = sum_c V_xi[tile][c] * U_xi[c][o]    (kiln_uk_sgemm_pb)
//
// The generated kernel calls kiln_uk_winograd_f23 once per workgroup (a
// band of tile rows of one image, a range of output channels); the output
// transform adds the bias and clamps (ReLU, ReLU6) as it stores, or the
// kernel runs the convolution's epilogue over the band's output rows
// after it. U is packed at compile time by codegen: per xi, the 32-column
// panels of kiln_uk_sgemm_pb over [C x O], multiplied in k blocks as deep as
// L2 holds (KILN_UK_DEEP_K: all C channels in one; ResNet-50 on 1 thread
// about 1% faster than blocks of 128).
//
// The transforms are additions and subtractions only (B^T and A^T hold 0
// and +-1; G's halves live in U), so the results differ from the direct
// convolution by a few roundings of the sums (the e2e tests compare both
// against onnxruntime).
//
// kiln_uk_winograd_f43 is the F(4x4, 3x3) form: 4x4 output tiles from 6x6
// patches, 36 products for 16 pixels (4x fewer multiply-adds than direct,
// where F(2x2, 3x3) has 2.25x), at the cost of transforms with
// coefficients up to 8 (more rounding: codegen uses it only with
// --winograd-f43) and U 36/9 times the weights' size. Its interpolation
// points are 0, +-1, 1/2, -2 (and infinity): simulated against float64,
// its error is 6.9x a direct fp32 conv's where Lavin and Gray's 0, +-1,
// +-2 give 12x (the simulation is in docs/performance-history.md). B^T's
// rows are scaled to integers, G's by the inverse. Its input transform
// takes one row i of B^T at a time: the six row sums of the patch
// (per patch column), then the six positions (i, j) from them, then the six
// products of that row, so V holds 6 positions, not 36.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime.h"
#include "runtime/cpu/ukernels/Isa.h"
#include "runtime/cpu/ukernels/StoreEpilogue.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

/// B^T's rows: the two input rows (or columns) of the 4x4 patch each
/// transform row adds, and their signs.
constexpr int kTake[4][2] = {{0, 2}, {1, 2}, {2, 1}, {1, 3}};
constexpr float kSign[4][2] = {{1, -1}, {1, 1}, {1, -1}, {1, -1}};

struct Shape {
  int64_t H, W, C, padT, padL, OH, OW, O;
};

/// What the output transform applies to each output as it stores it.
using Epilogue = kiln::rt::StoreEpilogue;

/// 16 floats, vectorized for the entry's target (GCC vector extension:
/// one zmm on AVX-512, two ymm on AVX2, four xmm otherwise).
typedef float V16 __attribute__((vector_size(64), aligned(4)));

__attribute__((always_inline)) inline V16 load16(const float *p) {
  V16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
__attribute__((always_inline)) inline void store16(float *p, V16 v) {
  std::memcpy(p, &v, sizeof v);
}

/// V_xi for the tiles of tile rows [tr0, tr1): row t (tile (tr, tc)) of
/// `v` (C floats) is sum over the 2x2 terms of B^T row i (patch rows) and
/// B^T row j (patch columns), read from `in` (one image), zeros outside.
__attribute__((always_inline)) inline void inputTransform(const Shape &s, const float *in,
                                                          const float *zeros, int64_t tr0,
                                                          int64_t tr1, int i, int j,
                                                          float *__restrict v) {
  int64_t TW = (s.OW + 1) / 2, C = s.C;
  // The signs of the four terms: +(x0 s0 + x1 s1) etc. as adds/subtracts.
  bool minusRow = kSign[i][1] < 0, minusCol = kSign[j][1] < 0;
  for (int64_t tr = tr0; tr < tr1; ++tr)
    for (int64_t tc = 0; tc < TW; ++tc) {
      const float *x[2][2];
      for (int p = 0; p < 2; ++p)
        for (int q = 0; q < 2; ++q) {
          int64_t ih = 2 * tr - s.padT + kTake[i][p], iw = 2 * tc - s.padL + kTake[j][q];
          bool inside = ih >= 0 && ih < s.H && iw >= 0 && iw < s.W;
          x[p][q] = inside ? in + (ih * s.W + iw) * C : zeros;
        }
      float *row = v + ((tr - tr0) * TW + tc) * C;
      // (d00 +- d01) +- (d10 +- d11): rows by B^T row i, columns by row j.
      auto combine = [&](auto a00, auto a01, auto a10, auto a11) {
        auto r0 = minusCol ? a00 - a01 : a00 + a01;
        auto r1 = minusCol ? a10 - a11 : a10 + a11;
        return minusRow ? r0 - r1 : r0 + r1;
      };
      int64_t c = 0;
      for (; c + 16 <= C; c += 16)
        store16(row + c, combine(load16(x[0][0] + c), load16(x[0][1] + c),
                                 load16(x[1][0] + c), load16(x[1][1] + c)));
      for (; c < C; ++c)
        row[c] = combine(x[0][0][c], x[0][1][c], x[1][0][c], x[1][1][c]);
    }
}

/// One tile's output transform over its `cols` channels, 16 at a time and
/// then one by one: transform(at, put) reads product xi with at(xi) and
/// hands output k to put(k, value); each output pixel y[k] (null: past the
/// image) gets the value, plus what it held when accumulating, plus the
/// bias, clamped, as it is stored.
template <typename Transform>
__attribute__((always_inline)) inline void
storeTile(Transform transform, const float *mt, int64_t mStride, float *const *y, int64_t c0,
          int64_t cols, bool accumulate, const Epilogue &ep) {
  // (x < lo ? lo : x: a NaN compares false and is kept.)
  V16 lo = ep.lo - V16{}, hi = ep.hi - V16{};
  int64_t c = 0;
  for (; c + 16 <= cols; c += 16)
    transform([&](int xi) { return load16(mt + xi * mStride + c); },
              [&](int k, V16 t) {
                if (!y[k])
                  return;
                if (accumulate)
                  t += load16(y[k] + c);
                if (ep.bias)
                  t += load16(ep.bias + c0 + c);
                if (ep.clampLo)
                  t = t < lo ? lo : t;
                if (ep.clampHi)
                  t = t > hi ? hi : t;
                store16(y[k] + c, t);
              });
  for (; c < cols; ++c)
    transform([&](int xi) { return mt[xi * mStride + c]; },
              [&](int k, float t) {
                if (y[k])
                  y[k][c] = ep.apply(accumulate ? y[k][c] + t : t, c0 + c);
              });
}

/// Y = A^T M A for each tile from the 16 products (m + xi * mStride, rows
/// of `cols` floats), into the output pixels the tile covers (adding to
/// them when accumulating), the epilogue applied as each is stored.
__attribute__((always_inline)) inline void
outputTransform(const Shape &s, const float *m, int64_t mStride, int64_t tr0, int64_t tr1,
                float *out, int64_t c0, int64_t cols, bool accumulate, const Epilogue &ep) {
  int64_t TW = (s.OW + 1) / 2;
  for (int64_t tr = tr0; tr < tr1; ++tr)
    for (int64_t tc = 0; tc < TW; ++tc) {
      const float *mt = m + ((tr - tr0) * TW + tc) * cols;
      float *y[4];
      for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b) {
          int64_t oh = 2 * tr + a, ow = 2 * tc + b;
          y[2 * a + b] = oh < s.OH && ow < s.OW ? out + (oh * s.OW + ow) * s.O + c0 : nullptr;
        }
      // A^T = [1 1 1 0; 0 1 -1 -1] on the rows, then on the columns.
      auto transform = [&](auto at, auto put) {
        decltype(at(0)) r[2][4];
        for (int j = 0; j < 4; ++j) {
          auto m0 = at(j), m1 = at(4 + j), m2 = at(8 + j), m3 = at(12 + j);
          r[0][j] = m0 + m1 + m2;
          r[1][j] = m1 - m2 - m3;
        }
        for (int a = 0; a < 2; ++a) {
          put(2 * a, r[a][0] + r[a][1] + r[a][2]);
          put(2 * a + 1, r[a][1] - r[a][2] - r[a][3]);
        }
      };
      storeTile(transform, mt, mStride, y, c0, cols, accumulate, ep);
    }
}

__attribute__((always_inline)) inline void
winograd(const Shape &s, const float *in, const float *u, float *out, float *scratch,
         int64_t tr0, int64_t tr1, int64_t c0, int64_t cols, bool accumulate,
         const Epilogue &ep) {
  int64_t TW = (s.OW + 1) / 2, T = (tr1 - tr0) * TW;
  if (T <= 0 || cols <= 0)
    return;
  // Scratch: V (T x C floats), zeros (C), the 16 products (16 x T x cols).
  float *v = scratch, *zeros = v + T * s.C, *m = zeros + s.C;
  std::memset(zeros, 0, s.C * sizeof(float));
  // U_xi: the panels of one xi are ceil(O / 32) * C * 32 floats.
  int64_t perXi = (s.O + 31) / 32 * s.C * 32;
  for (int xi = 0; xi < 16; ++xi) {
    inputTransform(s, in, zeros, tr0, tr1, xi / 4, xi % 4, v);
    kiln_uk_sgemm_pb(T, cols, s.C, reinterpret_cast<int64_t>(v), s.C,
                     reinterpret_cast<int64_t>(u + xi * perXi + c0 / 32 * s.C * 32), 32 * s.C,
                     reinterpret_cast<int64_t>(m + xi * T * cols), cols, KILN_UK_DEEP_K);
  }
  outputTransform(s, m, T * cols, tr0, tr1, out, c0, cols, accumulate, ep);
}

//===----------------------------------------------------------------------===//
// F(4x4, 3x3)
//===----------------------------------------------------------------------===//

/// Row i of B^T (6x6; points 0, 1, -1, 1/2, -2, infinity, rows scaled to
/// integers) applied to d(0..5):
///   2 d0 - 3 d1 - 4 d2 + 3 d3 + 2 d4,   -2 d1 + d2 + 5 d3 + 2 d4,
///   2 d1 - 5 d2 + d3 + 2 d4,            -2 d1 - d2 + 2 d3 + d4,
///   d1 - 2 d2 - d3 + 2 d4,              2 d1 - 3 d2 - 4 d3 + 3 d4 + 2 d5.
template <int I, typename D> __attribute__((always_inline)) inline auto inRow(D d) {
  if constexpr (I == 0)
    return 2.0f * (d(0) + d(4)) + 3.0f * (d(3) - d(1)) - 4.0f * d(2);
  else if constexpr (I == 1)
    return 2.0f * (d(4) - d(1)) + d(2) + 5.0f * d(3);
  else if constexpr (I == 2)
    return 2.0f * (d(1) + d(4)) - 5.0f * d(2) + d(3);
  else if constexpr (I == 3)
    return 2.0f * (d(3) - d(1)) + (d(4) - d(2));
  else if constexpr (I == 4)
    return 2.0f * (d(4) - d(2)) + (d(1) - d(3));
  else
    return 2.0f * (d(1) + d(5)) + 3.0f * (d(4) - d(2)) - 4.0f * d(3);
}

/// All six rows of B^T applied to t[0..5].
template <typename T> __attribute__((always_inline)) inline void inAll(const T (&t)[6], T (&v)[6]) {
  auto d = [&](int i) { return t[i]; };
  v[0] = inRow<0>(d);
  v[1] = inRow<1>(d);
  v[2] = inRow<2>(d);
  v[3] = inRow<3>(d);
  v[4] = inRow<4>(d);
  v[5] = inRow<5>(d);
}

/// A^T (4x6) applied to m[0..5]:
///   m0 + (m1 + m2) + (m3 + m4),       (m1 - m2) + (m3 / 2 - 2 m4),
///   (m1 + m2) + (m3 / 4 + 4 m4),      (m1 - m2) + (m3 / 8 - 8 m4) + m5.
template <typename T> __attribute__((always_inline)) inline void outAll(const T (&m)[6], T (&y)[4]) {
  T s12 = m[1] + m[2], d12 = m[1] - m[2];
  y[0] = m[0] + s12 + (m[3] + m[4]);
  y[1] = d12 + (0.5f * m[3] - 2.0f * m[4]);
  y[2] = s12 + (0.25f * m[3] + 4.0f * m[4]);
  y[3] = d12 + (0.125f * m[3] - 8.0f * m[4]) + m[5];
}

/// V for positions (I, 0..5) of the tiles of tile rows [tr0, tr1): row t
/// (tile (tr, tc)) of v + j * T * C, C floats, from the 6x6 patches of
/// `in` (zeros outside).
template <int I>
__attribute__((always_inline)) inline void inputTransform43(const Shape &s, const float *in,
                                                            const float *zeros, int64_t tr0,
                                                            int64_t tr1, float *__restrict v) {
  int64_t TW = (s.OW + 3) / 4, C = s.C, T = (tr1 - tr0) * TW;
  for (int64_t tr = tr0; tr < tr1; ++tr)
    for (int64_t tc = 0; tc < TW; ++tc) {
      const float *x[6][6];
      for (int p = 0; p < 6; ++p)
        for (int q = 0; q < 6; ++q) {
          int64_t ih = 4 * tr - s.padT + p, iw = 4 * tc - s.padL + q;
          bool inside = ih >= 0 && ih < s.H && iw >= 0 && iw < s.W;
          x[p][q] = inside ? in + (ih * s.W + iw) * C : zeros;
        }
      float *row = v + ((tr - tr0) * TW + tc) * C;
      auto one = [&](auto load, auto store) {
        decltype(load(x[0][0])) t[6], w[6];
        for (int q = 0; q < 6; ++q)
          t[q] = inRow<I>([&](int p) { return load(x[p][q]); });
        inAll(t, w);
        for (int j = 0; j < 6; ++j)
          store(row + j * T * C, w[j]);
      };
      int64_t c = 0;
      for (; c + 16 <= C; c += 16)
        one([&](const float *p) { return load16(p + c); },
            [&](float *p, V16 val) { store16(p + c, val); });
      for (; c < C; ++c)
        one([&](const float *p) { return p[c]; }, [&](float *p, float val) { p[c] = val; });
    }
}

/// Y = A^T M A for each tile from the 36 products (m + xi * mStride, rows
/// of `cols` floats), into the output pixels the tile covers.
__attribute__((always_inline)) inline void
outputTransform43(const Shape &s, const float *m, int64_t mStride, int64_t tr0, int64_t tr1,
                  float *out, int64_t c0, int64_t cols, bool accumulate, const Epilogue &ep) {
  int64_t TW = (s.OW + 3) / 4;
  for (int64_t tr = tr0; tr < tr1; ++tr)
    for (int64_t tc = 0; tc < TW; ++tc) {
      const float *mt = m + ((tr - tr0) * TW + tc) * cols;
      float *y[16];
      for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b) {
          int64_t oh = 4 * tr + a, ow = 4 * tc + b;
          y[4 * a + b] = oh < s.OH && ow < s.OW ? out + (oh * s.OW + ow) * s.O + c0 : nullptr;
        }
      auto one = [&](auto at, auto put) {
        using T = decltype(at(0));
        // Columns j: the four A^T rows over the six transform rows, then
        // each output row a over the six columns.
        T r[4][6];
        for (int j = 0; j < 6; ++j) {
          T col[6], o[4];
          for (int i = 0; i < 6; ++i)
            col[i] = at(6 * i + j);
          outAll(col, o);
          for (int a = 0; a < 4; ++a)
            r[a][j] = o[a];
        }
        for (int a = 0; a < 4; ++a) {
          T o[4];
          outAll(r[a], o);
          for (int b = 0; b < 4; ++b)
            put(4 * a + b, o[b]);
        }
      };
      storeTile(one, mt, mStride, y, c0, cols, accumulate, ep);
    }
}

template <int I>
__attribute__((always_inline)) inline void
winograd43Row(const Shape &s, const float *in, const float *zeros, const float *u, float *v,
              float *m, int64_t tr0, int64_t tr1, int64_t c0, int64_t cols, int64_t T) {
  inputTransform43<I>(s, in, zeros, tr0, tr1, v);
  int64_t perXi = (s.O + 31) / 32 * s.C * 32;
  for (int j = 0; j < 6; ++j) {
    int xi = 6 * I + j;
    kiln_uk_sgemm_pb(T, cols, s.C, reinterpret_cast<int64_t>(v + j * T * s.C), s.C,
                     reinterpret_cast<int64_t>(u + xi * perXi + c0 / 32 * s.C * 32), 32 * s.C,
                     reinterpret_cast<int64_t>(m + xi * T * cols), cols, KILN_UK_DEEP_K);
  }
}

__attribute__((always_inline)) inline void
winograd43(const Shape &s, const float *in, const float *u, float *out, float *scratch,
           int64_t tr0, int64_t tr1, int64_t c0, int64_t cols, bool accumulate,
           const Epilogue &ep) {
  int64_t TW = (s.OW + 3) / 4, T = (tr1 - tr0) * TW;
  if (T <= 0 || cols <= 0)
    return;
  // Scratch: V (6 x T x C floats), zeros (C), the 36 products (36 x T x cols).
  float *v = scratch, *zeros = v + 6 * T * s.C, *m = zeros + s.C;
  std::memset(zeros, 0, s.C * sizeof(float));
  winograd43Row<0>(s, in, zeros, u, v, m, tr0, tr1, c0, cols, T);
  winograd43Row<1>(s, in, zeros, u, v, m, tr0, tr1, c0, cols, T);
  winograd43Row<2>(s, in, zeros, u, v, m, tr0, tr1, c0, cols, T);
  winograd43Row<3>(s, in, zeros, u, v, m, tr0, tr1, c0, cols, T);
  winograd43Row<4>(s, in, zeros, u, v, m, tr0, tr1, c0, cols, T);
  winograd43Row<5>(s, in, zeros, u, v, m, tr0, tr1, c0, cols, T);
  outputTransform43(s, m, T * cols, tr0, tr1, out, c0, cols, accumulate, ep);
}

/// The transforms' loops vectorize for the CPU the entry was built for
/// (Tile: 2 for F(2x2, 3x3), 4 for F(4x4, 3x3)).
#define KILN_WINOGRAD_ARGS                                                                     \
  const Shape &s, const float *in, const float *u, float *out, float *scratch, int64_t tr0,     \
      int64_t tr1, int64_t c0, int64_t cols, bool accumulate, const Epilogue &ep
#define KILN_WINOGRAD_CALL                                                                     \
  if constexpr (Tile == 2)                                                                     \
    winograd(s, in, u, out, scratch, tr0, tr1, c0, cols, accumulate, ep);                      \
  else                                                                                         \
    winograd43(s, in, u, out, scratch, tr0, tr1, c0, cols, accumulate, ep);
template <int Tile> __attribute__((target("avx512f"))) void winogradAvx512(KILN_WINOGRAD_ARGS) {
  KILN_WINOGRAD_CALL
}
template <int Tile> __attribute__((target("avx2,fma"))) void winogradAvx2(KILN_WINOGRAD_ARGS) {
  KILN_WINOGRAD_CALL
}
template <int Tile> void winogradPortable(KILN_WINOGRAD_ARGS) { KILN_WINOGRAD_CALL }
#undef KILN_WINOGRAD_CALL
#undef KILN_WINOGRAD_ARGS

using WinogradFn = void (*)(const Shape &, const float *, const float *, float *, float *,
                            int64_t, int64_t, int64_t, int64_t, bool, const Epilogue &);

template <int Tile> WinogradFn selectWinograd() {
  switch (kiln::rt::chooseIsa()) {
  case kiln::rt::Isa::Avx512:
    return winogradAvx512<Tile>;
  case kiln::rt::Isa::Avx2:
    return winogradAvx2<Tile>;
  case kiln::rt::Isa::Portable:
    break;
  }
  return winogradPortable<Tile>;
}

const WinogradFn winograd23Chosen = selectWinograd<2>();
const WinogradFn winograd43Chosen = selectWinograd<4>();

} // namespace

#define KILN_WINOGRAD_ENTRY(name, chosen)                                                      \
  extern "C" void name(int64_t in, int64_t u, int64_t out, int64_t scratch, int64_t H, int64_t W, \
                       int64_t C, int64_t padT, int64_t padL, int64_t OH, int64_t OW, int64_t O, \
                       int64_t tr0, int64_t tr1, int64_t c0, int64_t cols, int64_t accumulate,  \
                       int64_t bias, float lo, float hi) {                                      \
    Shape s{H, W, C, padT, padL, OH, OW, O};                                                    \
    Epilogue ep = Epilogue::fromArgs(bias, lo, hi);                                             \
    chosen(s, reinterpret_cast<const float *>(in), reinterpret_cast<const float *>(u),          \
           reinterpret_cast<float *>(out), reinterpret_cast<float *>(scratch), tr0, tr1, c0,    \
           cols, accumulate != 0, ep);                                                          \
  }
KILN_WINOGRAD_ENTRY(kiln_uk_winograd_f23, winograd23Chosen)
KILN_WINOGRAD_ENTRY(kiln_uk_winograd_f43, winograd43Chosen)
