// RUN: kiln-compile %s --target=cuda --emit=kernels | FileCheck %s
// RUN: kiln-compile %s --target=cuda --emit=cuda-src --cuda-arch=sm_80 --cuda-no-spills | FileCheck %s --check-prefix=SRC
// RUN: kiln-compile %s --target=cuda-emu -o %t.so
// RUN: kiln-run %t.so --info | FileCheck %s --check-prefix=INFO
// The emulated CUDA kernels against the CPU target on random inputs.
// RUN: kiln-compile %s -o %t.cpu.so
// RUN: %python -c "import numpy as np; g = np.random.default_rng(3); [np.save('%t.' + n + '.npy', g.standard_normal(s).astype(np.float32)) for n, s in [('x', (2, 16, 8, 8)), ('a', (96, 64)), ('r', (4, 100))]]"
// RUN: kiln-run %t.cpu.so --input x=%t.x.npy --input a=%t.a.npy --input r=%t.r.npy --output-dir %t.ref
// RUN: kiln-run %t.so --input x=%t.x.npy --input a=%t.a.npy --input r=%t.r.npy --compare c=%t.ref/c.npy --compare g=%t.ref/g.npy --compare s=%t.ref/s.npy --compare l=%t.ref/l.npy --compare e=%t.ref/e.npy --compare dw=%t.ref/dw.npy --compare t=%t.ref/t.npy --compare att=%t.ref/att.npy --compare gap=%t.ref/gap.npy --compare rall=%t.ref/rall.npy --compare rcol=%t.ref/rcol.npy --compare cat=%t.ref/cat.npy --rtol 1e-4 --atol 1e-5 | FileCheck %s --check-prefix=NUM
// NUM-COUNT-12: compare {{[a-z]+}}: ok
// The CUDA target's GPU-shaped kernels (Program::gpu): the block's threads
// share the work through kiln_gpu_tid/bid, barriers, warp shuffles and
// shared memory (address space 3). Numerics: test/e2e runs every op case,
// node test and model through --target=cuda-emu.

func.func @main(%x: tensor<2x16x8x8xf32> {kiln.name = "x"}, %a: tensor<96x64xf32> {kiln.name = "a"},
                %r: tensor<4x100xf32> {kiln.name = "r"})
    -> (tensor<2x16x8x8xf32> {kiln.name = "c"}, tensor<96x48xf32> {kiln.name = "g"},
        tensor<4x100xf32> {kiln.name = "s"}, tensor<4x100xf32> {kiln.name = "l"},
        tensor<96x64xf32> {kiln.name = "e"}, tensor<2x16x8x8xf32> {kiln.name = "dw"},
        tensor<64x96xf32> {kiln.name = "t"}, tensor<1x2x48x64xf32> {kiln.name = "att"},
        tensor<2x1x1x16xf32> {kiln.name = "gap"}, tensor<1x1xf32> {kiln.name = "rall"},
        tensor<1x64xf32> {kiln.name = "rcol"}, tensor<4x200xf32> {kiln.name = "cat"}) {
  %w = kiln.constant dense<0.25> : tensor<16x16x3x3xf32>
  %c = kiln.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<2x16x8x8xf32>
  %b = kiln.constant dense<0.5> : tensor<48x64xf32>
  %g = kiln.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<96x64xf32>, tensor<48x64xf32>) -> tensor<96x48xf32>
  %s = kiln.softmax %r {axis = 1 : i64} : tensor<4x100xf32>
  %sc = kiln.constant dense<2.0> : tensor<100xf32>
  %l = kiln.layer_norm %r, %sc {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<4x100xf32>, tensor<100xf32>
  %e = kiln.sigmoid %a : tensor<96x64xf32>
  %wd = kiln.constant dense<0.5> : tensor<16x1x3x3xf32>
  %dw = kiln.conv %x, %wd {dilations = array<i64: 1, 1>, group = 16 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x16x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<2x16x8x8xf32>
  %t = kiln.transpose %a {perm = array<i64: 1, 0>} : tensor<96x64xf32> -> tensor<64x96xf32>
  %qk = kiln.reshape %a : tensor<96x64xf32> -> tensor<1x2x48x64xf32>
  %att = kiln.attention %qk, %qk, %qk {scale = 0.125 : f32} : tensor<1x2x48x64xf32>, tensor<1x2x48x64xf32>, tensor<1x2x48x64xf32> -> tensor<1x2x48x64xf32>
  %xh = kiln.reshape %x : tensor<2x16x8x8xf32> -> tensor<2x8x8x16xf32>
  %gap = kiln.global_avg_pool %xh {layout = #kiln.layout<nhwc>} : tensor<2x8x8x16xf32> -> tensor<2x1x1x16xf32>
  %rall = kiln.reduce_sum %a {axes = array<i64: 0, 1>, keepdims = true} : tensor<96x64xf32> -> tensor<1x1xf32>
  %rcol = kiln.reduce_max %a {axes = array<i64: 0>, keepdims = true} : tensor<96x64xf32> -> tensor<1x64xf32>
  %cat = kiln.concat %r, %s {axis = 1 : i64} : tensor<4x100xf32>, tensor<4x100xf32> -> tensor<4x200xf32>
  return %c, %g, %s, %l, %e, %dw, %t, %att, %gap, %rall, %rcol, %cat : tensor<2x16x8x8xf32>, tensor<96x48xf32>, tensor<4x100xf32>, tensor<4x100xf32>, tensor<96x64xf32>, tensor<2x16x8x8xf32>, tensor<64x96xf32>, tensor<1x2x48x64xf32>, tensor<2x1x1x16xf32>, tensor<1x1xf32>, tensor<1x64xf32>, tensor<4x200xf32>
}

// The implicit-GEMM conv: panels staged in shared memory between barriers
// (32 x 32 tiles here: 64 x 64 ones would leave most SMs idle).
// CHECK-LABEL: func.func @kiln_k0_conv(
// CHECK: call @kiln_gpu_bid() : () -> index
// CHECK: call @kiln_gpu_tid() : () -> index
// CHECK: memref.alloca() : memref<512xf32, 3>
// CHECK: scf.for
// CHECK: arith.cmpi sge
// CHECK: call @kiln_gpu_barrier() : () -> ()
// CHECK: call @kiln_gpu_barrier() : () -> ()
// CHECK: scf.if
// CHECK-LABEL: func.func @kiln_k1_gemm(
// CHECK: memref.alloca() : memref<512xf32, 3>
// CHECK-NOT: call @kiln_uk_sgemm
// CHECK: call @kiln_gpu_barrier
// Softmax and layer norm: a block per row, butterfly shuffles.
// CHECK-LABEL: func.func @kiln_k2_softmax(
// CHECK: memref.alloca() : memref<8xf32, 3>
// CHECK: call @kiln_gpu_shfl_xor({{.*}}) : (f32, i64) -> f32
// CHECK-LABEL: func.func @kiln_k3_layer_norm(
// CHECK: call @kiln_gpu_shfl_xor
// Elementwise: a grid-stride loop on 4-lane (16-byte) vectors.
// CHECK-LABEL: func.func @kiln_k4_sigmoid(
// CHECK: scf.for {{.*}} step %c{{[0-9_a-z]+}}
// CHECK: vector.load {{.*}} : memref<6144xf32>, vector<4xf32>
// CHECK: vector.store
// Depthwise conv: a thread per output, its window summed directly.
// CHECK-LABEL: func.func @kiln_k5_conv(
// CHECK: call @kiln_gpu_tid
// CHECK-NOT: memref.alloca
// CHECK: arith.cmpi sge
// Data movement: a thread per output element.
// CHECK-LABEL: func.func @kiln_k6_transpose(
// CHECK: call @kiln_gpu_tid
// Attention: a warp per query row, keys 32 at a time with an online softmax
// (shuffles), probabilities shared through the warp's slice of shared memory.
// CHECK-LABEL: func.func @kiln_k7_attention(
// CHECK: memref.alloca() : memref<256xf32, 3>
// CHECK: scf.for {{.*}} iter_args
// CHECK: call @kiln_gpu_shfl_xor
// CHECK: math.exp
// CHECK: call @kiln_gpu_syncwarp() : () -> ()
// CHECK-LABEL: func.func @kiln_k8_global_avg_pool(
// CHECK-NOT: kiln_gpu_
// CHECK: return
// A long reduction (6144 elements into one): a block, threads striding, a
// block reduction; a short one (96 into each of 64): a thread per output.
// CHECK-LABEL: func.func @kiln_k9_reduce_sum(
// CHECK: call @kiln_gpu_shfl_xor
// CHECK-LABEL: func.func @kiln_k10_reduce_max(
// CHECK-NOT: kiln_gpu_shfl_xor
// CHECK: arith.maximumf
// CHECK-LABEL: func.func @kiln_k11_concat(
// CHECK: arith.select

// SRC: __device__ inline i64 kiln_gpu_tid() { return threadIdx.x; }
// SRC: extern "C" __global__ void kiln_k0_conv(
// SRC-NOT: const i64 wg =
// SRC: __shared__ __align__(32) float s{{[0-9]+}}[512];
// SRC: kiln_gpu_barrier();
// SRC: extern "C" __global__ void kiln_k2_softmax(
// SRC: kiln_gpu_shfl_xor(
// SRC: extern "C" __global__ void kiln_k4_sigmoid(
// SRC: float4 t = *(const float4 *)&
// SRC: *(float4 *)&b1[{{.*}}] = make_float4(
// Families without a GPU builder (NHWC kernels: the CUDA targets keep regions
// NCHW unless asked) run their CPU loop nest, one workgroup per thread.
// SRC: extern "C" __global__ void kiln_k8_global_avg_pool(
// SRC-NEXT: const i64 wg = (i64)blockIdx.x * blockDim.x + threadIdx.x;
// SRC-NEXT: if (wg >= workgroups)

// INFO: launch kiln_k0_conv<<<(4,1,1), (256,1,1), 0>>> 3 buffers
// INFO: launch kiln_k1_gemm<<<(6,1,1), (256,1,1), 0>>> 3 buffers
// INFO: launch kiln_k2_softmax<<<(4,1,1), (256,1,1), 0>>> 2 buffers
// INFO: launch kiln_k3_layer_norm<<<(4,1,1), (256,1,1), 0>>> 3 buffers
// INFO: launch kiln_k4_sigmoid<<<(6,1,1), (256,1,1), 0>>> 2 buffers
// INFO: launch kiln_k5_conv<<<(8,1,1), (256,1,1), 0>>> 3 buffers
// INFO: launch kiln_k6_transpose<<<(24,1,1), (256,1,1), 0>>> 2 buffers
// INFO: launch kiln_k7_attention<<<(12,1,1), (256,1,1), 0>>> 4 buffers
// INFO: launch kiln_k8_global_avg_pool<<<(1,1,1), (64,1,1), 0>>> 2 buffers
// INFO: launch kiln_k9_reduce_sum<<<(1,1,1), (256,1,1), 0>>> 2 buffers
// INFO: launch kiln_k10_reduce_max<<<(1,1,1), (256,1,1), 0>>> 2 buffers
// INFO: launch kiln_k11_concat<<<(4,1,1), (256,1,1), 0>>> 3 buffers
