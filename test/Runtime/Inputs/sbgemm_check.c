/* The bf16 ukernels (kiln_uk_sbgemm_pa/_pb/_pb_a16) against a
 * double-precision reference on the bf16-rounded operands: shapes around
 * every tile edge (6-row groups, 16-row AMX tiles and 32 x 32 blocks,
 * 32-column panels, 32-deep AMX tiles, 256- and 1024-deep k blocks, odd K),
 * leading dimensions wider than the matrix, accumulate on and off, the
 * packed operand on either side, or A given as bf16 rows (_pb_a16); the f32
 * operand is given unrounded (the ukernel rounds it to nearest even) and
 * with a NaN it must carry through. Run once per implementation
 * ($KILN_UKERNEL). */
#include "kiln/runtime.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uniform.h"


/* Round to nearest even, written independently of the runtime's. */
static uint16_t bf16(float x) {
  uint32_t b;
  memcpy(&b, &x, 4);
  uint32_t rest = b & 0xffffu, keep = b >> 16;
  if (rest > 0x8000u || (rest == 0x8000u && (keep & 1u)))
    keep += 1;
  return (uint16_t)keep;
}
static double widen(uint16_t h) {
  uint32_t b = (uint32_t)h << 16;
  float x;
  memcpy(&x, &b, 4);
  return x;
}

int main(void) {
  const int64_t ms[] = {1, 5, 6, 7, 13, 16, 17, 24, 32, 33, 40};
  const int64_t ns[] = {1, 7, 16, 17, 31, 32, 33, 70};
  /* 8195: several deep blocks of the kernels on packed B (at most 4096
   * pairs of k each), on a few shapes. */
  const int64_t ks[] = {1, 2, 3, 31, 32, 33, 255, 256, 257, 600, 1025, 8195};
  int passed = 0, failed = 0;
  for (int side = 0; side < 3; ++side) /* 0: A packed, 1: B packed, 2: both bf16 */
    for (size_t mi = 0; mi < sizeof ms / sizeof *ms; ++mi)
      for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ++ni)
        for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ++ki)
          for (int acc = 0; acc < 2; ++acc) {
            int64_t M = ms[mi], N = ns[ni], K = ks[ki], Kp = (K + 1) / 2 * 2;
            if (K > 4000 && (side == 0 || (M != 7 && M != 40) || (N != 33 && N != 70)))
              continue;
            int64_t lda = K + 3, ldb = N + 5, ldc = N + 2;
            int64_t ldap = Kp + 2, panels = (N + 31) / 32;
            float *a = malloc(sizeof(float) * M * lda), *b = malloc(sizeof(float) * K * ldb);
            float *c = malloc(sizeof(float) * M * ldc);
            double *ref = malloc(sizeof(double) * M * N);
            /* Packed operands: A as bf16 rows ldap apart, B in 32-column
             * panels of pairs, zero past the ends. */
            uint16_t *ap = calloc(M * ldap, 2), *bp = calloc(panels * 32 * Kp, 2);
            for (int64_t i = 0; i < M * lda; ++i) a[i] = uniform();
            for (int64_t i = 0; i < K * ldb; ++i) b[i] = uniform();
            for (int64_t i = 0; i < M * ldc; ++i) c[i] = uniform();
            for (int64_t i = 0; i < M; ++i)
              for (int64_t k = 0; k < K; ++k)
                ap[i * ldap + k] = bf16(a[i * lda + k]);
            for (int64_t k = 0; k < K; ++k)
              for (int64_t j = 0; j < N; ++j)
                bp[(j / 32) * 32 * Kp + ((k / 2) * 32 + j % 32) * 2 + k % 2] = bf16(b[k * ldb + j]);
            for (int64_t i = 0; i < M; ++i)
              for (int64_t j = 0; j < N; ++j) {
                double s = acc ? c[i * ldc + j] : 0.0;
                for (int64_t k = 0; k < K; ++k) {
                  s += widen(bf16(a[i * lda + k])) * widen(bf16(b[k * ldb + j]));
                }
                ref[i * N + j] = s;
              }
            float guard = c[N];
            if (side == 0)
              kiln_uk_sbgemm_pa(M, N, K, (int64_t)(intptr_t)ap, ldap, (int64_t)(intptr_t)b, ldb,
                                (int64_t)(intptr_t)c, ldc, acc);
            else if (side == 1)
              kiln_uk_sbgemm_pb(M, N, K, (int64_t)(intptr_t)a, lda, (int64_t)(intptr_t)bp,
                                32 * Kp, (int64_t)(intptr_t)c, ldc, acc);
            else
              kiln_uk_sbgemm_pb_a16(M, N, K, (int64_t)(intptr_t)ap, ldap, (int64_t)(intptr_t)bp,
                                    32 * Kp, (int64_t)(intptr_t)c, ldc, acc);
            double worst = 0;
            for (int64_t i = 0; i < M; ++i)
              for (int64_t j = 0; j < N; ++j) {
                double e = fabs(c[i * ldc + j] - ref[i * N + j]) / (1.0 + fabs(ref[i * N + j]));
                if (!(e <= worst)) worst = e; /* a NaN is the worst */
              }
            /* f32 sums of K exact products of values in [-1, 1]. */
            int ok = worst <= 1e-6 * (double)(K + 1) && c[N] == guard;
            if (!ok)
              printf("FAIL %s M=%lld N=%lld K=%lld acc=%d: error %.3g\n",
                     side == 0 ? "pa" : side == 1 ? "pb" : "pb_a16",
                     (long long)M, (long long)N, (long long)K, acc, worst);
            passed += ok;
            failed += !ok;
            free(a), free(b), free(c), free(ref), free(ap), free(bp);
          }
  /* K = 0: C zeroed (the columns past N untouched), or left as it is when
   * accumulating. */
  for (int side = 0; side < 3; ++side)
    for (int acc = 0; acc < 2; ++acc) {
      float c[3 * 9], a[1] = {1.0f}, b[1] = {1.0f};
      uint16_t p[1] = {0x3f80};
      for (int i = 0; i < 27; ++i) c[i] = (float)(i + 1);
      if (side == 0)
        kiln_uk_sbgemm_pa(3, 7, 0, (int64_t)(intptr_t)p, 0, (int64_t)(intptr_t)b, 7,
                          (int64_t)(intptr_t)c, 9, acc);
      else if (side == 1)
        kiln_uk_sbgemm_pb(3, 7, 0, (int64_t)(intptr_t)a, 0, (int64_t)(intptr_t)p, 0,
                          (int64_t)(intptr_t)c, 9, acc);
      else
        kiln_uk_sbgemm_pb_a16(3, 7, 0, (int64_t)(intptr_t)p, 0, (int64_t)(intptr_t)p, 0,
                              (int64_t)(intptr_t)c, 9, acc);
      int ok = 1;
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 9; ++j)
          ok &= c[i * 9 + j] == (acc || j >= 7 ? (float)(i * 9 + j + 1) : 0.0f);
      if (!ok)
        printf("FAIL K=0 side %d acc=%d\n", side, acc);
      passed += ok;
      failed += !ok;
    }
  /* A NaN in the f32 operand reaches the outputs it feeds, and only those. */
  {
    int64_t M = 7, N = 33, K = 9, Kp = 10;
    float a[7 * 9], b[9 * 33], c[7 * 33];
    uint16_t ap[7 * 10] = {0}, bp[64 * 10] = {0};
    for (int i = 0; i < M * K; ++i) a[i] = uniform();
    for (int i = 0; i < K * N; ++i) b[i] = uniform();
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k)
        ap[i * Kp + k] = bf16(a[i * K + k]);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j)
        bp[(j / 32) * 32 * Kp + ((k / 2) * 32 + j % 32) * 2 + k % 2] = bf16(b[k * N + j]);
    float nan = nanf("");
    float bn[9 * 33], an[7 * 9];
    memcpy(bn, b, sizeof b), memcpy(an, a, sizeof a);
    bn[4 * N + 20] = nan; /* B row 4, column 20 */
    an[3 * K + 8] = nan;  /* A row 3, the odd last k */
    kiln_uk_sbgemm_pa(M, N, K, (int64_t)(intptr_t)ap, Kp, (int64_t)(intptr_t)bn, N,
                      (int64_t)(intptr_t)c, N, 0);
    int ok = 1;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        ok &= (isnan(c[i * N + j]) != 0) == (j == 20);
    kiln_uk_sbgemm_pb(M, N, K, (int64_t)(intptr_t)an, K, (int64_t)(intptr_t)bp, 32 * Kp,
                      (int64_t)(intptr_t)c, N, 0);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        ok &= (isnan(c[i * N + j]) != 0) == (i == 3);
    /* _pb_a16: a bf16 NaN in A's rows (row 3, the odd last k). */
    uint16_t an16[7 * 10] = {0};
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k)
        an16[i * Kp + k] = bf16(an[i * K + k]);
    kiln_uk_sbgemm_pb_a16(M, N, K, (int64_t)(intptr_t)an16, Kp, (int64_t)(intptr_t)bp, 32 * Kp,
                          (int64_t)(intptr_t)c, N, 0);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        ok &= (isnan(c[i * N + j]) != 0) == (i == 3);
    if (!ok)
      printf("FAIL NaN propagation\n");
    passed += ok;
    failed += !ok;
  }
  printf("%s: %d passed, %d failed\n", kiln_uk_sbgemm_impl(), passed, failed);
  return failed != 0;
}
