/* The 8-bit integer ukernel (kiln_uk_q8gemm_pb) against an int64 reference
 * wrapped to int32: A unsigned and signed with zero points (0, mid-range,
 * the extremes), B's 16-bit values over the whole range of s8 and u8
 * weights less their zero points (-255..255), shapes around every tile edge
 * (6-row groups and their 1-5-row tails, 16-column tiles and their tails,
 * both halves of a 32-column panel, several panels), K odd and even, one
 * 512-deep block and several, rows wider than the matrix (lda, ldc, and
 * panels ldb apart with a gap), accumulating or not, and sums that wrap past
 * 2^31. Run once per implementation ($KILN_UKERNEL). */
#include "kiln/runtime.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uniform.h"

static int draw(int lo, int hi) { /* uniform integer in [lo, hi] */
  int v = lo + (int)((uniform() + 1.0f) * 0.5f * (float)(hi - lo + 1));
  return v > hi ? hi : v;
}

static int check(int64_t M, int64_t N, int64_t K, int is_signed, int zero, int bmin, int bmax,
                 int acc, int64_t pad) {
  int64_t lda = K + pad, ldc = N + pad, Kp = (K + 1) / 2 * 2;
  int64_t panels = (N + 31) / 32, ldb = 32 * Kp + 2 * pad;
  uint8_t *A = malloc(M * lda + 1);
  int16_t *B = calloc(panels * ldb + 1, sizeof(int16_t));
  int16_t *Bref = malloc(K * N * sizeof(int16_t) + 1);
  int32_t *C = malloc(M * ldc * sizeof(int32_t) + 4), *C0 = malloc(M * ldc * sizeof(int32_t) + 4);
  for (int64_t i = 0; i < M * lda; ++i)
    A[i] = (uint8_t)draw(0, 255);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) {
      int16_t v = (int16_t)draw(bmin, bmax);
      Bref[k * N + j] = v;
      B[(j / 32) * ldb + ((k / 2) * 32 + j % 32) * 2 + k % 2] = v;
    }
  for (int64_t i = 0; i < M * ldc; ++i)
    C[i] = C0[i] = (int32_t)draw(-1000000, 1000000);
  kiln_uk_q8gemm_pb(M, N, K, (int64_t)(intptr_t)A, lda, zero, (int64_t)(intptr_t)B, ldb,
                    (int64_t)(intptr_t)C, ldc,
                    (acc ? KILN_UK_ACCUMULATE : 0) | (is_signed ? KILN_UK_A_INT8 : 0));
  int bad = 0;
  for (int64_t i = 0; i < M && !bad; ++i)
    for (int64_t j = 0; j < ldc && !bad; ++j) {
      int32_t got = C[i * ldc + j], want;
      if (j >= N) {
        want = C0[i * ldc + j]; /* past N: untouched */
      } else {
        int64_t s = acc ? C0[i * ldc + j] : 0;
        for (int64_t k = 0; k < K; ++k) {
          int a = is_signed ? (int8_t)A[i * lda + k] : A[i * lda + k];
          s += (int64_t)(a - zero) * Bref[k * N + j];
        }
        want = (int32_t)(uint32_t)(uint64_t)s;
      }
      if (got != want) {
        printf("MISMATCH M=%lld N=%lld K=%lld signed=%d zero=%d acc=%d at (%lld, %lld): %d, "
               "want %d\n", (long long)M, (long long)N, (long long)K, is_signed, zero, acc,
               (long long)i, (long long)j, got, want);
        bad = 1;
      }
    }
  free(A), free(B), free(Bref), free(C), free(C0);
  return bad;
}

int main(void) {
  static const int64_t Ms[] = {1, 2, 5, 6, 7, 12, 13};
  static const int64_t Ns[] = {1, 7, 8, 9, 16, 17, 31, 32, 33, 48, 70};
  static const int64_t Ks[] = {1, 2, 3, 16, 63, 64, 511, 512, 513, 1100};
  int passed = 0, failed = 0, n = 0;
  for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; ++mi)
    for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ++ni)
      for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ++ki, ++n) {
        int is_signed = n % 2;
        static const int zeros_u[] = {0, 128, 255, 17}, zeros_s[] = {0, -128, 127, -5};
        int zero = is_signed ? zeros_s[(n / 2) % 4] : zeros_u[(n / 2) % 4];
        /* s8 weights (zero point 0), u8 ones less 128, the extremes of either. */
        int range = n % 3;
        int bmin = range == 0 ? -128 : range == 1 ? -128 : -255;
        int bmax = range == 0 ? 127 : range == 1 ? 127 : 255;
        int acc = (n / 3) % 2, pad = (n / 5) % 2 ? 3 : 0;
        if (check(Ms[mi], Ns[ni], Ks[ki], is_signed, zero, bmin, bmax, acc, pad))
          ++failed;
        else
          ++passed;
      }
  /* Sums past 2^31: every product 255 * 255, K = 40000 (2.6e9): wraps. */
  {
    int64_t M = 2, N = 3, K = 40000, Kp = K, ldb = 32 * Kp;
    uint8_t *A = malloc(M * K);
    int16_t *B = calloc(ldb, sizeof(int16_t));
    int32_t C[6];
    memset(A, 255, M * K);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j)
        B[((k / 2) * 32 + j) * 2 + k % 2] = -255;
    kiln_uk_q8gemm_pb(M, N, K, (int64_t)(intptr_t)A, K, 0, (int64_t)(intptr_t)B, ldb,
                      (int64_t)(intptr_t)C, N, 0);
    int32_t want = (int32_t)(uint32_t)(uint64_t)(int64_t)(-255 * 255 * (int64_t)K);
    int ok = 1;
    for (int i = 0; i < 6; ++i)
      ok &= C[i] == want;
    if (!ok)
      printf("MISMATCH wrap: %d, want %d\n", C[0], want);
    ok ? ++passed : ++failed;
    free(A), free(B);
  }
  printf("%s: %d passed, %d failed\n", kiln_uk_q8gemm_impl(), passed, failed);
  return failed != 0;
}
