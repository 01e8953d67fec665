/* The sgemm ukernels against a double-precision reference: shapes around
 * every tile edge (6-row groups, 6-8-row tiles, the 6-8-row tiles of a
 * panel's last 16 columns or fewer and the 8-14-row ones of its last 17-24
 * or 1-8 (AVX-512VL), the 6 x 64 tiles of two full panels (K <= 512),
 * 16/32-column panels, the 128- and 256-deep k blocks and the single block up to 192; KILN_UK_DEEP_K's ones, the
 * whole K or several blocks of equal depth), leading dimensions wider than the
 * matrix, accumulate on and off,
 * A row-major and packed, B packed in 32-column panels (kiln_uk_sgemm_pb,
 * panels ldb apart with a gap); and the fp16 ones (kiln_uk_hgemm: B half;
 * kiln_uk_hgemm_pa: the packed A half) on the same shapes, the reference
 * taking the half values. Run once per implementation ($KILN_UKERNEL). */
#include "kiln/runtime.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uniform.h"

/* f32 -> IEEE half bits, nearest even (normal values; the test's are in
 * [-1, 1], some scaled down into half's subnormals), and back. */
static uint16_t to_half(float x) {
  uint32_t b;
  memcpy(&b, &x, 4);
  uint32_t sign = (b >> 16) & 0x8000u, mag = b & 0x7fffffffu;
  if (mag >= 0x38800000u) {
    uint32_t r = mag - (112u << 23);
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
  }
  float f;
  memcpy(&f, &mag, 4);
  return (uint16_t)(sign | (uint32_t)nearbyintf(f * 16777216.0f));
}
static float from_half(uint16_t h) {
  float m = (float)(h & 0x3ff), s = (h & 0x8000) ? -1.0f : 1.0f;
  int e = (h >> 10) & 0x1f;
  return e == 0 ? s * m * 0x1p-24f : s * ldexpf(1.0f + m / 1024.0f, e - 15);
}


int main(void) {
  const int64_t ms[] = {1, 2, 5, 6, 7, 13, 20, 24, 27, 30, 40, 50, 95};
  const int64_t ns[] = {1, 7, 8, 9, 16, 17, 24, 31, 32, 33, 56, 70, 128};
  /* 4099: more than one deep block (KILN_UK_DEEP_K's blocks, and those of
   * the kernels that copy B's panels, hold at most 4096 k), on a few shapes. */
  const int64_t ks[] = {1, 3, 147, 193, 255, 256, 257, 600, 4099};
  int passed = 0, failed = 0;
  for (int half = 0; half < 2; ++half)
  for (size_t mi = 0; mi < sizeof ms / sizeof *ms; ++mi)
    for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ++ni)
      for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ++ki)
        for (int packed = 0; packed < (half ? 2 : 6); ++packed)
          for (int acc = 0; acc < 2; ++acc)
          /* deep: the products on packed B again with KILN_UK_DEEP_K (k
           * blocks as deep as L2 holds instead of 128 on AVX-512; ignored
           * elsewhere). */
          for (int deep = 0; deep < (packed >= 2 ? 2 : 1); ++deep) {
            int64_t M = ms[mi], N = ns[ni], K = ks[ki];
            int64_t flags = acc | (deep ? KILN_UK_DEEP_K : 0);
            if (K > 1000 && ((M != 7 && M != 40) || (N != 33 && N != 70)))
              continue;
            int64_t lda = K + 3, ldb = N + 5, ldc = N + 2, groups = (M + 5) / 6;
            float *a = malloc(sizeof(float) * M * lda);
            float *ap = calloc(groups * 6 * K + 1, sizeof(float));
            uint16_t *aph = calloc(groups * 6 * K + 1, sizeof(uint16_t));
            float *b = malloc(sizeof(float) * K * ldb);
            uint16_t *bh = malloc(sizeof(uint16_t) * K * ldb);
            /* packed == 2: B's panels 32 * K + 7 floats apart, zero past N. */
            int64_t panels = (N + 31) / 32, ldp = 32 * K + 7;
            float *bp = calloc(panels * ldp, sizeof(float));
            float *c = malloc(sizeof(float) * M * ldc);
            /* packed == 3: A's rows at irregular addresses (a copy of a's,
             * row i (i * 7) % 5 floats past i * lda), listed. */
            float *ar = malloc(sizeof(float) * (M * lda + 8));
            int64_t *rows = malloc(sizeof(int64_t) * M);
            double *ref = malloc(sizeof(double) * M * N);
            /* packed == 4, 5: kiln_uk_sgemm_pb_ep / _pbr_ep, by shape: a bias
             * and [-0.3, 0.4]; no bias and [-0.2, inf); a bias, no clamp; a
             * bias and (-inf, 0.25] (each bound clamps on its own). */
            int mode = (int)((mi + ni + ki) % 4);
            float *bias = malloc(sizeof(float) * N);
            for (int64_t j = 0; j < N; ++j) bias[j] = uniform();
            float lo = mode == 0 ? -0.3f : mode == 1 ? -0.2f : -INFINITY;
            float hi = mode == 0 ? 0.4f : mode == 3 ? 0.25f : INFINITY;
            int64_t biasAt = mode == 1 ? 0 : (int64_t)(intptr_t)bias;
            for (int64_t i = 0; i < M * lda; ++i) a[i] = uniform();
            for (int64_t i = 0; i < K * ldb; ++i) b[i] = uniform();
            for (int64_t i = 0; i < M * ldc; ++i) c[i] = uniform();
            if (half) {
              /* The half operand (packed A or B) holds half values, a few
               * of them subnormal. */
              float *h = packed == 1 ? a : b;
              int64_t n = packed == 1 ? M * lda : K * ldb;
              for (int64_t i = 0; i < n; ++i)
                h[i] = from_half(to_half(i % 97 == 0 ? h[i] * 1e-5f : h[i]));
              for (int64_t i = 0; i < K * ldb; ++i) bh[i] = to_half(b[i]);
            }
            for (int64_t k = 0; k < K; ++k)
              for (int64_t j = 0; j < N; ++j)
                bp[(j / 32) * ldp + k * 32 + j % 32] = b[k * ldb + j];
            for (int64_t i = 0; i < M; ++i)
              for (int64_t k = 0; k < K; ++k) {
                ap[(i / 6) * 6 * K + k * 6 + i % 6] = a[i * lda + k];
                aph[(i / 6) * 6 * K + k * 6 + i % 6] = to_half(a[i * lda + k]);
              }
            for (int64_t i = 0; i < M; ++i)
              for (int64_t j = 0; j < N; ++j) {
                double s = acc ? c[i * ldc + j] : 0.0;
                for (int64_t k = 0; k < K; ++k)
                  s += (double)a[i * lda + k] * b[k * ldb + j];
                if (packed >= 4) {
                  if (biasAt) s += bias[j];
                  s = s < lo ? lo : s > hi ? hi : s;
                }
                ref[i * N + j] = s;
              }
            for (int64_t i = 0; i < M; ++i) {
              float *row = ar + i * lda + (i * 7) % 5;
              memcpy(row, a + i * lda, sizeof(float) * K);
              rows[i] = (int64_t)(intptr_t)row;
            }
            /* Row 0's column past N (ldc > N) must stay as it was. */
            float guard = c[N];
            if (packed == 5)
              kiln_uk_sgemm_pbr_ep(M, N, K, (int64_t)(intptr_t)rows, 0, (int64_t)(intptr_t)bp,
                                   ldp, (int64_t)(intptr_t)c, ldc, flags, biasAt, lo, hi);
            else if (packed == 4)
              kiln_uk_sgemm_pb_ep(M, N, K, (int64_t)(intptr_t)a, lda, (int64_t)(intptr_t)bp, ldp,
                                  (int64_t)(intptr_t)c, ldc, flags, biasAt, lo, hi);
            else if (packed == 3)
              kiln_uk_sgemm_pbr(M, N, K, (int64_t)(intptr_t)rows, 0, (int64_t)(intptr_t)bp, ldp,
                                (int64_t)(intptr_t)c, ldc, flags);
            else if (packed == 2)
              kiln_uk_sgemm_pb(M, N, K, (int64_t)(intptr_t)a, lda, (int64_t)(intptr_t)bp, ldp,
                               (int64_t)(intptr_t)c, ldc, flags);
            else if (packed && half)
              kiln_uk_hgemm_pa(M, N, K, (int64_t)(intptr_t)aph, 6 * K, (int64_t)(intptr_t)b,
                               ldb, (int64_t)(intptr_t)c, ldc, acc);
            else if (packed)
              kiln_uk_sgemm_pa(M, N, K, (int64_t)(intptr_t)ap, 6 * K, (int64_t)(intptr_t)b, ldb,
                               (int64_t)(intptr_t)c, ldc, acc);
            else if (half)
              kiln_uk_hgemm(M, N, K, (int64_t)(intptr_t)a, lda, (int64_t)(intptr_t)bh, ldb,
                            (int64_t)(intptr_t)c, ldc, acc);
            else
              kiln_uk_sgemm(M, N, K, (int64_t)(intptr_t)a, lda, (int64_t)(intptr_t)b, ldb,
                            (int64_t)(intptr_t)c, ldc, acc);
            double worst = 0;
            for (int64_t i = 0; i < M; ++i)
              for (int64_t j = 0; j < N; ++j) {
                double e = fabs(c[i * ldc + j] - ref[i * N + j]) / (1.0 + fabs(ref[i * N + j]));
                if (e > worst) worst = e;
              }
            /* f32 sums of K products of values in [-1, 1]. */
            int ok = worst <= 1e-6 * (double)(K + 1) && c[N] == guard;
            if (!ok)
              printf("FAIL %s M=%lld N=%lld K=%lld packed=%d acc=%d deep=%d: error %.3g\n",
                     half ? "hgemm" : "sgemm", (long long)M, (long long)N, (long long)K, packed,
                     acc, deep, worst);
            passed += ok;
            failed += !ok;
            free(a), free(ap), free(aph), free(b), free(bh), free(bp), free(c), free(ref);
            free(ar), free(rows), free(bias);
          }
  /* The epilogue keeps a NaN (ReLU of NaN is NaN), and K = 0 is the bias
   * and the clamp of zeros (or of C, accumulating): 5 columns (an 8-column
   * narrow tile) and 21 (a 24-column one). */
  for (int nn = 5; nn <= 21; nn += 16) {
    float a[3 * 4], bp[32 * 4] = {0}, c[3 * 21], bias[21];
    for (int j = 0; j < nn; ++j) bias[j] = 4.0f * uniform();
    for (int i = 0; i < 12; ++i) a[i] = uniform();
    for (int k = 0; k < 4; ++k)
      for (int j = 0; j < nn; ++j) bp[k * 32 + j] = uniform();
    a[1 * 4 + 2] = NAN; /* row 1 */
    kiln_uk_sgemm_pb_ep(3, nn, 4, (int64_t)(intptr_t)a, 4, (int64_t)(intptr_t)bp, 128,
                        (int64_t)(intptr_t)c, nn, 0, (int64_t)(intptr_t)bias, 0.0f, 6.0f);
    int ok = 1;
    for (int j = 0; j < nn; ++j) {
      ok &= isnan(c[nn + j]);
      ok &= c[j] >= 0.0f && c[j] <= 6.0f && c[2 * nn + j] >= 0.0f && c[2 * nn + j] <= 6.0f;
    }
    for (int i = 0; i < 3 * nn; ++i) c[i] = -5.0f + i;
    kiln_uk_sgemm_pb_ep(3, nn, 0, (int64_t)(intptr_t)a, 4, (int64_t)(intptr_t)bp, 128,
                        (int64_t)(intptr_t)c, nn, 1, (int64_t)(intptr_t)bias, 0.0f, 6.0f);
    for (int i = 0; i < 3 * nn; ++i) {
      float want = -5.0f + i + bias[i % nn];
      want = want < 0.0f ? 0.0f : want > 6.0f ? 6.0f : want;
      ok &= c[i] == want;
    }
    if (!ok)
      printf("FAIL sgemm_pb_ep: NaN kept, K = 0, N = %d\n", nn);
    passed += ok;
    failed += !ok;
  }
  printf("%s: %d passed, %d failed\n", kiln_uk_sgemm_impl(), passed, failed);
  return failed != 0;
}
