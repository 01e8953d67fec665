/* kiln_uk_winograd_f23 and kiln_uk_winograd_f43 (runtime/cpu/ukernels/
 * Winograd.cpp) against a double-precision direct 3x3 convolution: images with odd and even sizes
 * (partial tiles at the bottom and right), pads 0, 1 and 2 and asymmetric
 * ones, channel counts around the 32-column panels, bands of tile rows and
 * column ranges split the way workgroups take them, accumulate on and off,
 * with the output transform's epilogue off, a bias and a clamp [-0.5, 0.7],
 * or a ReLU without a bias;
 * the weights transformed (G g G^T) and packed as codegen does. The floats
 * after the output (where a partial tile's missing pixels would go) must
 * stay as they were. Error <= 1e-6 (F(2x2, 3x3)) and 1e-5 (F(4x4, 3x3))
 * of the sum of the terms' magnitudes. Run once per implementation
 * ($KILN_UKERNEL). */
#include "kiln/runtime.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uniform.h"


int main(void) {
  uniform_seed(0x9e3779b97f4a7c15ull);
  /* H, W, C, O, padT, padL, padB, padR */
  const int64_t cases[][8] = {
      {1, 1, 1, 1, 1, 1, 1, 1},   {2, 2, 3, 5, 0, 0, 0, 0},  {4, 4, 8, 32, 0, 0, 0, 0},
      {5, 7, 16, 33, 1, 1, 1, 1}, {6, 6, 5, 7, 1, 1, 1, 1},  {7, 7, 32, 64, 1, 1, 1, 1},
      {9, 4, 17, 40, 2, 0, 1, 2}, {8, 9, 64, 70, 1, 2, 0, 1}, {14, 14, 24, 96, 1, 1, 1, 1},
      {3, 11, 40, 31, 2, 2, 2, 2}};
  /* G of each form: F(2x2, 3x3) (4x3) and F(4x4, 3x3) (6x3: the points 0,
   * 1, -1, 1/2, -2 and infinity, rows scaled as Winograd.cpp's B^T). */
  const float G2[6][3] = {{1, 0, 0}, {.5f, .5f, .5f}, {.5f, -.5f, .5f}, {0, 0, 1}};
  const float G4[6][3] = {{1.0f / 2, 0, 0},
                          {1.0f / 6, 1.0f / 6, 1.0f / 6},
                          {-1.0f / 6, 1.0f / 6, -1.0f / 6},
                          {-16.0f / 15, -8.0f / 15, -4.0f / 15},
                          {1.0f / 30, -1.0f / 15, 2.0f / 15},
                          {0, 0, 1.0f / 2}};
  int passed[2] = {0, 0}, failed[2] = {0, 0};
  double worstOf[2] = {0, 0};
  for (int form = 0; form < 2; ++form)
  for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ++ci)
    for (int acc = 0; acc < 2; ++acc)
    for (int ep = 0; ep < 4; ++ep) {
      /* m: the tile's output pixels per side; a = m + 2: the domain's. */
      int m = form ? 4 : 2, a = m + 2;
      const float(*G)[3] = form ? G4 : G2;
      int64_t H = cases[ci][0], W = cases[ci][1], C = cases[ci][2], O = cases[ci][3];
      int64_t pt = cases[ci][4], pl = cases[ci][5], pb = cases[ci][6], pr = cases[ci][7];
      int64_t OH = H + pt + pb - 2, OW = W + pl + pr - 2;
      if (OH <= 0 || OW <= 0)
        continue;
      float *x = malloc(sizeof(float) * H * W * C);
      float *g = malloc(sizeof(float) * O * C * 9); /* [O][C][3][3], ONNX order */
      float *y = malloc(sizeof(float) * (OH * OW * O + 64)), *y0 = malloc(sizeof(float) * OH * OW * O);
      for (int64_t i = 0; i < H * W * C; ++i) x[i] = uniform();
      for (int64_t i = 0; i < O * C * 9; ++i) g[i] = uniform();
      for (int64_t i = 0; i < OH * OW * O; ++i) y0[i] = y[i] = uniform();
      for (int64_t i = 0; i < 64; ++i) y[OH * OW * O + i] = 7.0f;
      float *bias = malloc(sizeof(float) * O);
      for (int64_t o = 0; o < O; ++o) bias[o] = uniform();
      int64_t biasAt = ep == 1 ? (int64_t)(intptr_t)bias : 0;
      float lo = ep == 1 ? -0.5f : ep == 2 ? 0.0f : -INFINITY;
      float hi = ep == 1 ? 0.7f : ep == 3 ? 0.3f : INFINITY;
      /* U = G g G^T per (c, o), packed per xi = a * i + j as 32-column
       * panels of [C x O]. */
      int64_t panels = (O + 31) / 32, perXi = panels * C * 32;
      float *u = calloc(a * a * perXi, sizeof(float));
      for (int64_t o = 0; o < O; ++o)
        for (int64_t c = 0; c < C; ++c) {
          const float *k = g + (o * C + c) * 9;
          float t[6][3];
          for (int i = 0; i < a; ++i)
            for (int j = 0; j < 3; ++j)
              t[i][j] = G[i][0] * k[0 * 3 + j] + G[i][1] * k[1 * 3 + j] + G[i][2] * k[2 * 3 + j];
          for (int i = 0; i < a; ++i)
            for (int j = 0; j < a; ++j)
              u[(i * a + j) * perXi + (o / 32) * C * 32 + c * 32 + o % 32] =
                  t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2];
        }
      /* Workgroups: bands of 2 tile rows, columns in 32-wide ranges of up to 64. */
      int64_t TH = (OH + m - 1) / m, TW = (OW + m - 1) / m, band = 2;
      for (int64_t tr0 = 0; tr0 < TH; tr0 += band)
        for (int64_t c0 = 0; c0 < O; c0 += 64) {
          int64_t tr1 = tr0 + band < TH ? tr0 + band : TH, cols = O - c0 < 64 ? O - c0 : 64;
          int64_t T = (tr1 - tr0) * TW;
          int64_t vRows = form ? 6 : 1; /* positions of V held at once */
          float *scratch =
              aligned_alloc(64, ((vRows * T * C + C + a * a * T * cols) * 4 + 63) / 64 * 64);
          (form ? kiln_uk_winograd_f43 : kiln_uk_winograd_f23)(
              (int64_t)(intptr_t)x, (int64_t)(intptr_t)u, (int64_t)(intptr_t)y,
              (int64_t)(intptr_t)scratch, H, W, C, pt, pl, OH, OW, O, tr0, tr1, c0, cols, acc,
              biasAt, lo, hi);
          free(scratch);
        }
      double worst = 0;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow)
          for (int64_t o = 0; o < O; ++o) {
            double s = acc ? y0[(oh * OW + ow) * O + o] : 0.0, mag = fabs(s);
            for (int64_t c = 0; c < C; ++c)
              for (int ky = 0; ky < 3; ++ky)
                for (int kx = 0; kx < 3; ++kx) {
                  int64_t ih = oh - pt + ky, iw = ow - pl + kx;
                  if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                    continue;
                  double p = (double)x[(ih * W + iw) * C + c] * g[(o * C + c) * 9 + ky * 3 + kx];
                  s += p;
                  mag += fabs(p);
                }
            if (biasAt) s += bias[o];
            s = s < lo ? lo : s > hi ? hi : s;
            /* Relative to the sum of the magnitudes of the terms. */
            double e = fabs(y[(oh * OW + ow) * O + o] - s) / (1.0 + mag);
            if (e > worst) worst = e;
          }
      int guard = 1;
      for (int64_t i = 0; i < 64; ++i) guard &= y[OH * OW * O + i] == 7.0f;
      /* F(4x4, 3x3)'s transforms (coefficients up to 8) round more: about
       * 5x F(2x2, 3x3)'s error. */
      int ok = worst <= (form ? 1e-5 : 1e-6) && guard;
      if (!ok)
        printf("FAIL F(%dx%d, 3x3) H=%lld W=%lld C=%lld O=%lld pads=%lld,%lld,%lld,%lld acc=%d "
               "ep=%d: error %.3g\n",
               m, m, (long long)H, (long long)W, (long long)C, (long long)O, (long long)pt,
               (long long)pl, (long long)pb, (long long)pr, acc, ep, worst);
      if (worst > worstOf[form])
        worstOf[form] = worst;
      passed[form] += ok;
      failed[form] += !ok;
      free(x), free(g), free(y), free(y0), free(u), free(bias);
    }
  for (int form = 0; form < 2; ++form)
    printf("%s F(%dx%d, 3x3): %d passed, %d failed (worst error %.2g)\n", kiln_uk_sgemm_impl(),
           2 + 2 * form, 2 + 2 * form, passed[form], failed[form], worstOf[form]);
  return failed[0] + failed[1] != 0;
}
