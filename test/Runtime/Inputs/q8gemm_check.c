/* The 8-bit integer ukernel (kiln_uk_q8gemm_pq) against an int64 reference
 * wrapped to int32: A unsigned and signed with zero points (0, mid-range,
 * the extremes), weights less their zero points over the whole range of s8
 * and u8 ones (-255..255: packed as bytes plus a shift where they do not fit
 * 8 signed bits), shapes around every tile edge (6-, 8- and 12-row tiles
 * and their tails, 8-column AVX2 tiles, 16-column panels, 64-column VNNI
 * tiles and their tails), K of every remainder mod 4, one k block and
 * several (512 and 1024 deep), rows wider than the matrix (lda, ldc, and
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

/* The weights v(k, j) (less their zero point) packed as kiln_uk_q8gemm_pq
 * reads them, ldb bytes per 16-column panel; returns the shift. */
static int pack(const int16_t *v, int64_t K, int64_t N, int64_t ldb, int8_t *B) {
  int lo = 0, hi = 0;
  for (int64_t i = 0; i < K * N; ++i)
    lo = v[i] < lo ? v[i] : lo, hi = v[i] > hi ? v[i] : hi;
  int shift = lo >= -128 && hi <= 127 ? 0 : lo + 128;
  int64_t Kq = (K + 3) / 4;
  for (int64_t j = 0; j < N; ++j) {
    int32_t sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      int8_t b = (int8_t)(v[k * N + j] - shift);
      B[(j / 16) * ldb + (k / 4) * 64 + (j % 16) * 4 + k % 4] = b;
      sum += b;
    }
    memcpy(B + (j / 16) * ldb + Kq * 64 + (j % 16) * 4, &sum, 4);
  }
  return shift;
}

static int check(int64_t M, int64_t N, int64_t K, int is_signed, int zero, int bmin, int bmax,
                 int acc, int64_t pad) {
  int64_t lda = K + pad, ldc = N + pad, Kq = (K + 3) / 4;
  int64_t panels = (N + 15) / 16, ldb = 64 * Kq + 64 + 64 * pad;
  uint8_t *A = malloc(M * lda + 1);
  int8_t *B = calloc(panels * ldb + 1, 1);
  int16_t *Bref = malloc(K * N * sizeof(int16_t) + 1);
  int32_t *C = malloc(M * ldc * sizeof(int32_t) + 4), *C0 = malloc(M * ldc * sizeof(int32_t) + 4);
  for (int64_t i = 0; i < M * lda; ++i)
    A[i] = (uint8_t)draw(0, 255);
  for (int64_t i = 0; i < K * N; ++i)
    Bref[i] = (int16_t)draw(bmin, bmax);
  int shift = pack(Bref, K, N, ldb, B);
  for (int64_t i = 0; i < M * ldc; ++i)
    C[i] = C0[i] = (int32_t)draw(-1000000, 1000000);
  kiln_uk_q8gemm_pq(M, N, K, (int64_t)(intptr_t)A, lda, zero, (int64_t)(intptr_t)B, ldb, shift,
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
        printf("MISMATCH M=%lld N=%lld K=%lld signed=%d zero=%d shift=%d acc=%d at (%lld, "
               "%lld): %d, want %d\n", (long long)M, (long long)N, (long long)K, is_signed,
               zero, shift, acc, (long long)i, (long long)j, got, want);
        bad = 1;
      }
    }
  free(A), free(B), free(Bref), free(C), free(C0);
  return bad;
}

int main(void) {
  static const int64_t Ms[] = {1, 2, 5, 6, 7, 8, 12, 13, 25};
  static const int64_t Ns[] = {1, 7, 8, 9, 16, 17, 33, 48, 63, 64, 65, 70, 130};
  static const int64_t Ks[] = {1, 2, 3, 4, 5, 16, 63, 511, 512, 514, 1027, 2100};
  int passed = 0, failed = 0, n = 0;
  for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; ++mi)
    for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ++ni)
      for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ++ki, ++n) {
        int is_signed = n % 2;
        static const int zeros_u[] = {0, 128, 255, 17}, zeros_s[] = {0, -128, 127, -5};
        int zero = is_signed ? zeros_s[(n / 2) % 4] : zeros_u[(n / 2) % 4];
        /* s8 weights (zero point 0), u8 ones less a zero point of 200 or 30
         * (outside 8 signed bits: packed with a shift). */
        int range = n % 3;
        int bmin = range == 0 ? -128 : range == 1 ? -200 : -30;
        int bmax = range == 0 ? 127 : range == 1 ? 55 : 225;
        int acc = (n / 3) % 2, pad = (n / 5) % 2 ? 3 : 0;
        if (check(Ms[mi], Ns[ni], Ks[ki], is_signed, zero, bmin, bmax, acc, pad))
          ++failed;
        else
          ++passed;
      }
  /* Sums past 2^31: every product 255 * -255, K = 40000 (-2.6e9): wraps. */
  {
    int64_t M = 2, N = 3, K = 40000, ldb = 64 * (K / 4) + 64;
    uint8_t *A = malloc(M * K);
    int16_t *v = malloc(K * N * sizeof(int16_t));
    int8_t *B = calloc(ldb, 1);
    int32_t C[6];
    memset(A, 255, M * K);
    for (int64_t i = 0; i < K * N; ++i)
      v[i] = -255;
    int shift = pack(v, K, N, ldb, B);
    kiln_uk_q8gemm_pq(M, N, K, (int64_t)(intptr_t)A, K, 0, (int64_t)(intptr_t)B, ldb, shift,
                      (int64_t)(intptr_t)C, N, 0);
    int32_t want = (int32_t)(uint32_t)(uint64_t)(int64_t)(-255 * 255 * (int64_t)K);
    int ok = 1;
    for (int i = 0; i < 6; ++i)
      ok &= C[i] == want;
    if (!ok)
      printf("MISMATCH wrap: %d, want %d\n", C[0], want);
    ok ? ++passed : ++failed;
    free(A), free(v), free(B);
  }
  printf("%s: %d passed, %d failed\n", kiln_uk_q8gemm_impl(), passed, failed);
  return failed != 0;
}
