/* The block-quantized ukernel (kiln_uk_bqgemm) against a double reference
 * of C (+)= A * ((code - zero) * scale)^T: 4-bit codes (two to a byte) and
 * 8-bit codes (a byte each) packed in quads of 4 columns and 32-k units,
 * blocks of 32, 64 and 128 k with the last one short, K not a multiple of
 * 32, columns not a multiple of 4 (the last quad's padding), one row, a few
 * and many (8 or more: the dequantized-strip path, strips of 64 columns),
 * rows wider than the matrix (lda, ldc), accumulating or not. Tolerance:
 * f32 sums of K products, 1e-5 of the sum of |terms| (C's own included
 * when accumulating). Run once per
 * implementation ($KILN_UKERNEL). */
#include "kiln/runtime.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uniform.h"

static int draw(int lo, int hi) { /* uniform integer in [lo, hi] */
  int v = lo + (int)((uniform() + 1.0f) * 0.5f * (float)(hi - lo + 1));
  return v > hi ? hi : v;
}

static int check(int64_t M, int64_t N, int64_t K, int bits, int64_t block, int acc,
                 int64_t pad) {
  int64_t lda = K + pad, ldc = N + pad, units = (K + 31) / 32, blocks = (K + block - 1) / block;
  int64_t unitBytes = bits == 4 ? 16 : 32, quads = (N + 3) / 4;
  int64_t quadBytes = units * 4 * unitBytes;
  float *A = malloc(M * lda * sizeof(float));
  int *code = malloc(N * K * sizeof(int));
  float *scale = malloc(N * blocks * sizeof(float));
  int *zero = malloc(N * blocks * sizeof(int));
  uint8_t *W = calloc(quads * quadBytes, 1);
  float *S = calloc(quads * blocks * 8, sizeof(float));
  float *C = malloc(M * ldc * sizeof(float)), *C0 = malloc(M * ldc * sizeof(float));
  int top = (1 << bits) - 1;
  for (int64_t i = 0; i < M * lda; ++i)
    A[i] = uniform();
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < K; ++k) {
      int v = draw(0, top);
      code[n * K + k] = v;
      uint8_t *u = W + (n / 4) * quadBytes + ((k / 32) * 4 + n % 4) * unitBytes;
      int64_t j = k % 32;
      if (bits == 8)
        u[j] = (uint8_t)v;
      else if (j < 16)
        u[j] |= (uint8_t)v;
      else
        u[j - 16] |= (uint8_t)(v << 4);
    }
    for (int64_t b = 0; b < blocks; ++b) {
      scale[n * blocks + b] = 0.01f + 0.1f * (uniform() + 1.0f);
      zero[n * blocks + b] = draw(0, top);
      float *at = S + ((n / 4) * blocks + b) * 8;
      at[n % 4] = scale[n * blocks + b];
      at[4 + n % 4] = (float)zero[n * blocks + b];
    }
  }
  for (int64_t i = 0; i < M * ldc; ++i)
    C[i] = C0[i] = uniform();
  kiln_uk_bqgemm(M, N, K, (int64_t)(intptr_t)A, lda, (int64_t)(intptr_t)W,
                 (int64_t)(intptr_t)S, (int64_t)(intptr_t)C, ldc, bits, block,
                 acc ? KILN_UK_ACCUMULATE : 0);
  int bad = 0;
  for (int64_t i = 0; i < M && !bad; ++i)
    for (int64_t j = 0; j < ldc && !bad; ++j) {
      double want, bound = 1e-30;
      if (j >= N) {
        want = C0[i * ldc + j]; /* past N: untouched */
      } else {
        want = acc ? C0[i * ldc + j] : 0.0;
        bound += fabs(want);
        for (int64_t k = 0; k < K; ++k) {
          int64_t b = j * blocks + k / block;
          double t = (double)A[i * lda + k] * (code[j * K + k] - zero[b]) * scale[b];
          want += t;
          bound += fabs(t);
        }
      }
      double got = C[i * ldc + j];
      if (fabs(got - want) > 1e-5 * bound) {
        printf("MISMATCH M=%lld N=%lld K=%lld bits=%d block=%lld acc=%d at (%lld, %lld): %g, "
               "want %g\n", (long long)M, (long long)N, (long long)K, bits, (long long)block,
               acc, (long long)i, (long long)j, got, want);
        bad = 1;
      }
    }
  free(A), free(code), free(scale), free(zero), free(W), free(S), free(C), free(C0);
  return bad;
}

int main(void) {
  static const int64_t Ms[] = {1, 2, 7, 8, 13};
  static const int64_t Ns[] = {1, 3, 4, 5, 8, 33, 64, 70};
  static const int64_t Ks[] = {1, 31, 32, 33, 64, 100, 128, 200, 513};
  static const int64_t blocks[] = {32, 64, 128};
  int passed = 0, failed = 0, n = 0;
  for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; ++mi)
    for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ++ni)
      for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ++ki, ++n) {
        int bits = n % 2 ? 8 : 4, acc = (n / 2) % 2;
        int64_t block = blocks[(n / 3) % 3], pad = (n / 5) % 2 ? 3 : 0;
        if (check(Ms[mi], Ns[ni], Ks[ki], bits, block, acc, pad))
          ++failed;
        else
          ++passed;
      }
  printf("%s: %d passed, %d failed\n", kiln_uk_bqgemm_impl(), passed, failed);
  return failed != 0;
}
