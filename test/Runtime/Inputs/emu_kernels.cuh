// CUDA kernels that exercise what the emulation must get right: shared
// memory and block barriers, warp shuffles and votes, atomics across blocks,
// dynamic shared memory, half/bfloat16 conversions, tensor cores (wmma). The same source compiles
// with NVRTC (kiln-nvrtc) and, after runtime/cuda_emu/kiln_cuda_emu.h, with
// the host compiler (emu_main.cpp).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#ifndef KILN_EMU_DYNAMIC_SHARED
#define KILN_EMU_DYNAMIC_SHARED(T, name) extern __shared__ T name[]
#endif

// Tree reduction in shared memory: out[block] = sum of its 256 elements;
// *total accumulates every block's sum atomically.
extern "C" __global__ void block_sum(const float *x, float *out, float *total, int n) {
  __shared__ float s[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (int step = int(blockDim.x) / 2; step > 0; step /= 2) {
    if (int(threadIdx.x) < step)
      s[threadIdx.x] += s[threadIdx.x + step];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    out[blockIdx.x] = s[0];
    atomicAdd(total, s[0]);
  }
}

// Per warp: sum by __shfl_down_sync (lane 0 holds it), max by
// __shfl_xor_sync (every lane holds it), positives by __ballot_sync.
extern "C" __global__ void warp_ops(const float *x, float *sums, float *maxes, int *positives) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int warp = i / 32;
  float v = x[i], m = v;
  for (int d = 16; d > 0; d /= 2)
    v += __shfl_down_sync(0xffffffffu, v, d);
  for (int d = 16; d > 0; d /= 2)
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, d));
  unsigned ballot = __ballot_sync(0xffffffffu, x[i] > 0.0f);
  if (threadIdx.x % 32 == 0) {
    sums[warp] = v;
    positives[warp] = __popc(ballot);
  }
  if (threadIdx.x % 32 == 31)
    maxes[warp] = m;
}

// One block per row: softmax with block reductions in dynamic shared memory.
extern "C" __global__ void softmax_rows(const float *x, float *y, int cols) {
  KILN_EMU_DYNAMIC_SHARED(float, red);
  const float *row = x + blockIdx.x * cols;
  float m = -__int_as_float(0x7f800000); // -inf without <cmath>
  for (int j = threadIdx.x; j < cols; j += int(blockDim.x))
    m = fmaxf(m, row[j]);
  red[threadIdx.x] = m;
  __syncthreads();
  for (int step = int(blockDim.x) / 2; step > 0; step /= 2) {
    if (int(threadIdx.x) < step)
      red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + step]);
    __syncthreads();
  }
  m = red[0];
  __syncthreads();
  float s = 0.0f;
  for (int j = threadIdx.x; j < cols; j += int(blockDim.x))
    s += __expf(row[j] - m);
  red[threadIdx.x] = s;
  __syncthreads();
  for (int step = int(blockDim.x) / 2; step > 0; step /= 2) {
    if (int(threadIdx.x) < step)
      red[threadIdx.x] += red[threadIdx.x + step];
    __syncthreads();
  }
  float inv = 1.0f / red[0];
  for (int j = threadIdx.x; j < cols; j += int(blockDim.x))
    y[blockIdx.x * cols + j] = __expf(row[j] - m) * inv;
}

// Round trips through half and bfloat16, and a half multiply-add.
extern "C" __global__ void low_precision(const float *x, float *h, float *b, float *fma, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  __half hx = __float2half(x[i]);
  h[i] = __half2float(hx);
  b[i] = __bfloat162float(__float2bfloat16(x[i]));
  fma[i] = __half2float(__hfma(hx, __float2half(2.0f), __float2half(1.0f)));
}

// Tensor cores: C[M x N] = A[M x K] . B[K x N] with A and B rounded to
// bfloat16 and float accumulation; a warp per 16 x 16 tile of C, K in steps
// of 16 staged through shared memory.
extern "C" __global__ void wmma_bf16(const float *a, const float *b, float *c, int K, int N) {
  using namespace nvcuda;
  __shared__ __nv_bfloat16 as[16 * 16], bs[16 * 16];
  int tm = blockIdx.y * 16, tn = blockIdx.x * 16, lane = threadIdx.x;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int i = lane; i < 256; i += 32) {
      as[i] = __float2bfloat16(a[(tm + i / 16) * K + k0 + i % 16]);
      bs[i] = __float2bfloat16(b[(k0 + i / 16) * N + tn + i % 16]);
    }
    __syncwarp();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
    wmma::load_matrix_sync(fa, as, 16);
    wmma::load_matrix_sync(fb, bs, 16);
    wmma::mma_sync(acc, fa, fb, acc);
    __syncwarp();
  }
  wmma::store_matrix_sync(c + tm * N + tn, acc, N, wmma::mem_row_major);
}
