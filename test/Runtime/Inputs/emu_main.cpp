// Runs emu_kernels.cuh through the CUDA emulation and checks every result
// against a plain CPU computation. Prints "cuda-emu: N checks passed".
#include "kiln_cuda_emu.h"

#include "emu_kernels.cuh"

#include <cstdio>
#include <random>

static int checks = 0, failures = 0;

static void expect(bool ok, const char *what, double got, double want) {
  ++checks;
  if (!ok) {
    ++failures;
    std::printf("FAIL %s: got %.9g, want %.9g\n", what, got, want);
  }
}
static bool close(double a, double b, double rtol) {
  return std::fabs(a - b) <= rtol * std::max(1.0, std::fabs(b));
}

int main() {
  std::mt19937 gen(5);
  std::normal_distribution<float> normal;
  // block_sum over 1000 elements, 4 blocks of 256.
  {
    int n = 1000;
    std::vector<float> x(n), out(4);
    float total = 0;
    for (float &v : x) v = normal(gen);
    kiln_emu::launch(block_sum, dim3(4), dim3(256), 0, x.data(), out.data(), &total, n);
    double all = 0;
    for (int b = 0; b < 4; ++b) {
      double want = 0;
      for (int i = b * 256; i < std::min(n, (b + 1) * 256); ++i) want += x[i];
      all += want;
      expect(close(out[b], want, 1e-5), "block_sum block", out[b], want);
    }
    expect(close(total, all, 1e-5), "block_sum atomic total", total, all);
  }
  // warp_ops: 3 blocks of 96 threads (3 warps each).
  {
    int n = 288, warps = n / 32;
    std::vector<float> x(n), sums(warps), maxes(warps);
    std::vector<int> pos(warps);
    for (float &v : x) v = normal(gen);
    kiln_emu::launch(warp_ops, dim3(3), dim3(96), 0, x.data(), sums.data(), maxes.data(),
                     pos.data());
    for (int w = 0; w < warps; ++w) {
      double s = 0, m = -1e30;
      int p = 0;
      for (int i = w * 32; i < (w + 1) * 32; ++i) {
        s += x[i];
        m = std::max<double>(m, x[i]);
        p += x[i] > 0;
      }
      expect(close(sums[w], s, 1e-5), "warp shfl_down sum", sums[w], s);
      expect(maxes[w] == m, "warp shfl_xor max (every lane)", maxes[w], m);
      expect(pos[w] == p, "warp ballot count", pos[w], p);
    }
  }
  // softmax_rows: 5 rows of 300, 128 threads, dynamic shared memory.
  {
    int rows = 5, cols = 300;
    std::vector<float> x(rows * cols), y(rows * cols);
    for (float &v : x) v = 3 * normal(gen);
    kiln_emu::launch(softmax_rows, dim3(rows), dim3(128), 128 * sizeof(float), x.data(),
                     y.data(), cols);
    for (int r = 0; r < rows; ++r) {
      double m = -1e30, s = 0;
      for (int j = 0; j < cols; ++j) m = std::max<double>(m, x[r * cols + j]);
      for (int j = 0; j < cols; ++j) s += std::exp(x[r * cols + j] - m);
      for (int j = 0; j < cols; j += 37) {
        double want = std::exp(x[r * cols + j] - m) / s;
        expect(close(y[r * cols + j], want, 1e-5), "softmax_rows", y[r * cols + j], want);
      }
    }
  }
  // low_precision: conversions match the toolkit's host implementations.
  {
    int n = 70;
    std::vector<float> x(n), h(n), b(n), f(n);
    for (float &v : x) v = 10 * normal(gen);
    kiln_emu::launch(low_precision, dim3(3), dim3(32), 0, x.data(), h.data(), b.data(),
                     f.data(), n);
    for (int i = 0; i < n; ++i) {
      double hw = __half2float(__float2half(x[i]));
      double bw = __bfloat162float(__float2bfloat16(x[i]));
      expect(h[i] == hw, "half round trip", h[i], hw);
      expect(b[i] == bw && close(b[i], x[i], 1e-2), "bfloat16 round trip", b[i], bw);
      expect(close(f[i], 2 * hw + 1, 2e-3), "half fma", f[i], 2 * hw + 1);
    }
  }
  // wmma_bf16: the product of the bfloat16-rounded inputs, float accumulation.
  {
    int M = 32, N = 48, K = 64;
    std::vector<float> a(M * K), b(K * N), c(M * N, -1.0f);
    for (float &v : a) v = normal(gen);
    for (float &v : b) v = normal(gen);
    kiln_emu::launch(wmma_bf16, dim3(N / 16, M / 16), dim3(32), 0, a.data(), b.data(), c.data(),
                     K, N);
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double want = 0;
        for (int k = 0; k < K; ++k)
          want += double(__bfloat162float(__float2bfloat16(a[i * K + k]))) *
                  __bfloat162float(__float2bfloat16(b[k * N + j]));
        expect(close(c[i * N + j], want, 1e-4), "wmma_bf16", c[i * N + j], want);
      }
  }
  std::printf("cuda-emu: %d checks passed, %d failed\n", checks - failures, failures);
  return failures ? 1 : 0;
}
