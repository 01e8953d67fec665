// RUN: kiln-compile %s --target=cuda --emit=kernels | FileCheck %s
// RUN: kiln-compile %s --target=cuda --emit=cuda-src --cuda-arch=sm_80 --cuda-no-spills | FileCheck %s --check-prefix=SRC
// RUN: kiln-compile %s --target=cuda-emu -o %t.so
// RUN: kiln-run %t.so --info | FileCheck %s --check-prefix=INFO
// The CUDA target's GPU-shaped kernels (Program::gpu): the block's threads
// share the work through kiln_gpu_tid/bid, barriers, warp shuffles and
// shared memory (address space 3). Numerics: test/e2e runs every op case,
// node test and model through --target=cuda-emu.

func.func @main(%x: tensor<2x16x8x8xf32> {kiln.name = "x"}, %a: tensor<96x64xf32> {kiln.name = "a"},
                %r: tensor<4x100xf32> {kiln.name = "r"})
    -> (tensor<2x16x8x8xf32> {kiln.name = "c"}, tensor<96x48xf32> {kiln.name = "g"},
        tensor<4x100xf32> {kiln.name = "s"}, tensor<4x100xf32> {kiln.name = "l"},
        tensor<96x64xf32> {kiln.name = "e"}, tensor<2x16x8x8xf32> {kiln.name = "dw"}) {
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
  return %c, %g, %s, %l, %e, %dw : tensor<2x16x8x8xf32>, tensor<96x48xf32>, tensor<4x100xf32>, tensor<4x100xf32>, tensor<96x64xf32>, tensor<2x16x8x8xf32>
}

// The implicit-GEMM conv: panels staged in shared memory between barriers.
// CHECK-LABEL: func.func @kiln_k0_conv(
// CHECK: call @kiln_gpu_bid() : () -> index
// CHECK: call @kiln_gpu_tid() : () -> index
// CHECK: memref.alloca() : memref<1024xf32, 3>
// CHECK: scf.for
// CHECK: arith.cmpi sge
// CHECK: call @kiln_gpu_barrier() : () -> ()
// CHECK: call @kiln_gpu_barrier() : () -> ()
// CHECK: scf.if
// CHECK-LABEL: func.func @kiln_k1_gemm(
// CHECK: memref.alloca() : memref<1024xf32, 3>
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
// CHECK-LABEL: func.func @kiln_k5_conv(
// CHECK-NOT: kiln_gpu_
// CHECK: return

// SRC: __device__ inline i64 kiln_gpu_tid() { return threadIdx.x; }
// SRC: extern "C" __global__ void kiln_k0_conv(
// SRC-NOT: const i64 wg =
// SRC: __shared__ float s{{[0-9]+}}[1024];
// SRC: kiln_gpu_barrier();
// SRC: extern "C" __global__ void kiln_k2_softmax(
// SRC: kiln_gpu_shfl_xor(
// SRC: extern "C" __global__ void kiln_k4_sigmoid(
// SRC: float4 t = *(const float4 *)&
// SRC: *(float4 *)&b1[{{.*}}] = make_float4(
// Families without a GPU builder (here a depthwise conv) run their CPU loop
// nest, one workgroup per thread.
// SRC: extern "C" __global__ void kiln_k5_conv(
// SRC-NEXT: const i64 wg = (i64)blockIdx.x * blockDim.x + threadIdx.x;
// SRC-NEXT: if (wg >= workgroups)

// INFO: launch kiln_k0_conv<<<(2,1,1), (256,1,1), 0>>> 3 buffers
// INFO: launch kiln_k1_gemm<<<(2,1,1), (256,1,1), 0>>> 3 buffers
// INFO: launch kiln_k2_softmax<<<(4,1,1), (256,1,1), 0>>> 2 buffers
// INFO: launch kiln_k3_layer_norm<<<(4,1,1), (256,1,1), 0>>> 3 buffers
// INFO: launch kiln_k4_sigmoid<<<(6,1,1), (256,1,1), 0>>> 2 buffers
// INFO: launch kiln_k5_conv<<<(1,1,1), (64,1,1), 0>>> 3 buffers
