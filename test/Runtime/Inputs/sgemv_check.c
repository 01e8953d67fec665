/* kiln_uk_sgemv_t (runtime/cpu/ukernels/Sgemv.cpp) against a double-precision
 * reference: 1 to 5 rows, K around the 16- and 32-float steps (and long
 * rows, prefetched ahead), N from 1 up, leading dimensions wider than the
 * matrices, accumulate on and off; C's column past N must stay as it was.
 * Run once per implementation ($KILN_UKERNEL). */
#include "kiln/runtime.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "uniform.h"


int main(void) {
  uniform_seed(0x2545f4914f6cdd1dull);
  const int64_t ms[] = {1, 2, 3, 5};
  const int64_t ns[] = {1, 3, 17, 40};
  const int64_t ks[] = {1, 15, 16, 31, 33, 300, 4100};
  int passed = 0, failed = 0;
  for (size_t mi = 0; mi < sizeof ms / sizeof *ms; ++mi)
    for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ++ni)
      for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ++ki)
        for (int acc = 0; acc < 2; ++acc) {
          int64_t M = ms[mi], N = ns[ni], K = ks[ki], lda = K + 3, ldb = K + 5, ldc = N + 2;
          float *a = malloc(sizeof(float) * M * lda), *b = malloc(sizeof(float) * N * ldb);
          float *c = malloc(sizeof(float) * M * ldc);
          double *ref = malloc(sizeof(double) * M * N);
          for (int64_t i = 0; i < M * lda; ++i) a[i] = uniform();
          for (int64_t i = 0; i < N * ldb; ++i) b[i] = uniform();
          for (int64_t i = 0; i < M * ldc; ++i) c[i] = uniform();
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              double s = acc ? c[i * ldc + j] : 0.0;
              for (int64_t k = 0; k < K; ++k)
                s += (double)a[i * lda + k] * b[j * ldb + k];
              ref[i * N + j] = s;
            }
          float guard = c[N];
          kiln_uk_sgemv_t(M, N, K, (int64_t)(intptr_t)a, lda, (int64_t)(intptr_t)b, ldb,
                          (int64_t)(intptr_t)c, ldc, acc);
          double worst = 0;
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              double e = fabs(c[i * ldc + j] - ref[i * N + j]) / (1.0 + fabs(ref[i * N + j]));
              if (e > worst) worst = e;
            }
          int ok = worst <= 1e-6 * (double)(K + 1) && c[N] == guard;
          if (!ok)
            printf("FAIL M=%lld N=%lld K=%lld acc=%d: error %.3g\n", (long long)M, (long long)N,
                   (long long)K, acc, worst);
          passed += ok;
          failed += !ok;
          free(a), free(b), free(c), free(ref);
        }
  printf("sgemv: %d passed, %d failed\n", passed, failed);
  return failed != 0;
}
