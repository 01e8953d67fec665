// f16/bf16 matrix products and convolutions on tensor cores (CUDA target):
// kiln-legalize-types keeps them in f16/bf16, codegen stages their panels
// in shared memory in that type and multiplies with nvcuda::wmma m16n16k16
// (f32 accumulation, the result rounded to the output's type).
// RUN: kiln-compile %s --target=cuda --emit=kernels | FileCheck %s
// RUN: kiln-compile %s --target=cuda --emit=cuda-src --cuda-arch=sm_80,sm_90 --cuda-no-spills | FileCheck %s --check-prefix=SRC
// RUN: kiln-compile %s --target=cuda --cuda-arch=sm_90 --cuda-no-spills --report %t.md -o %t.cuda.so
// RUN: FileCheck %s --check-prefix=REPORT < %t.md
// Emulated (the same CUDA C++ on the host; wmma fragments spread over the
// warp's lanes) against the CPU target, which computes them in f32 between
// casts, and against numpy.
// RUN: kiln-compile %s --target=cuda-emu -o %t.so
// RUN: kiln-compile %s -o %t.cpu.so
// RUN: %python -c "import numpy as np; g = np.random.default_rng(5); [np.save('%t.' + n + '.npy', g.standard_normal(s).astype(t)) for n, s, t in [('a', (2, 70, 50), np.float16), ('b', (50, 40), np.float16), ('x', (1, 24, 9, 9), np.float16), ('p', (33, 64), np.float32), ('q', (20, 64), np.float32)]]"
// RUN: kiln-run %t.cpu.so --input a=%t.a.npy --input b=%t.b.npy --input x=%t.x.npy --input p=%t.p.npy --input q=%t.q.npy --output-dir %t.ref
// RUN: kiln-run %t.so --input a=%t.a.npy --input b=%t.b.npy --input x=%t.x.npy --input p=%t.p.npy --input q=%t.q.npy --output-dir %t.emu --compare mm=%t.ref/mm.npy --compare conv=%t.ref/conv.npy --compare dw=%t.ref/dw.npy --rtol 2e-3 --atol 2e-3 | FileCheck %s --check-prefix=NUM
// RUN: kiln-run %t.so --input a=%t.a.npy --input b=%t.b.npy --input x=%t.x.npy --input p=%t.p.npy --input q=%t.q.npy --compare gemm=%t.ref/gemm.npy --rtol 1e-2 --atol 1e-2 | FileCheck %s --check-prefix=NUM
// RUN: %python %S/Inputs/check_tensor_cores.py %t %t.emu
// RUN: %python %S/Inputs/check_tensor_cores.py %t %t.ref
// NUM: compare {{[a-z]+}}: ok

func.func @main(%a: tensor<2x70x50xf16> {kiln.name = "a"}, %b: tensor<50x40xf16> {kiln.name = "b"},
                %x: tensor<1x24x9x9xf16> {kiln.name = "x"}, %p: tensor<33x64xbf16> {kiln.name = "p"},
                %q: tensor<20x64xbf16> {kiln.name = "q"})
    -> (tensor<2x70x40xf16> {kiln.name = "mm"}, tensor<33x20xbf16> {kiln.name = "gemm"},
        tensor<1x16x9x9xf16> {kiln.name = "conv"}, tensor<1x24x9x9xf16> {kiln.name = "dw"}) {
  %mm = kiln.matmul %a, %b : tensor<2x70x50xf16>, tensor<50x40xf16>
  %c = kiln.constant dense<0.5> : tensor<20xbf16>
  %gemm = kiln.gemm %p, %q, %c {alpha = 0.5 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true}
        : (tensor<33x64xbf16>, tensor<20x64xbf16>, tensor<20xbf16>) -> tensor<33x20xbf16>
  %w = kiln.constant dense<0.125> : tensor<16x24x3x3xf16>
  %bias = kiln.constant dense<-0.25> : tensor<16xf16>
  %conv = kiln.conv %x, %w, %bias {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
        : (tensor<1x24x9x9xf16>, tensor<16x24x3x3xf16>, tensor<16xf16>) -> tensor<1x16x9x9xf16>
  %wd = kiln.constant dense<0.5> : tensor<24x1x3x3xf16>
  %dw = kiln.conv %x, %wd {dilations = array<i64: 1, 1>, group = 24 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>}
        : (tensor<1x24x9x9xf16>, tensor<24x1x3x3xf16>) -> tensor<1x24x9x9xf16>
  return %mm, %gemm, %conv, %dw : tensor<2x70x40xf16>, tensor<33x20xbf16>, tensor<1x16x9x9xf16>, tensor<1x24x9x9xf16>
}

// The batched matmul: 4 warps, f16 panels in shared memory, accumulators
// as vector<8xf32> loop-carried values, fragments stored to an f32 tile.
// CHECK-LABEL: func.func @kiln_k0_matmul(%{{.*}}: memref<7000xf16> {{.*}}, %{{.*}}: memref<2000xf16> {{.*}}, %{{.*}}: memref<5600xf16>
// CHECK-DAG: memref.alloca() : memref<1024xf16, 3>
// CHECK-DAG: memref.alloca() : memref<1024xf32, 3>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<8xf32>)
// CHECK: call @kiln_gpu_barrier
// CHECK: call @kiln_wmma_mma_f16({{.*}}) : (vector<8xf32>, memref<?xf16, 3>, index, index, memref<?xf16, 3>, index, index) -> vector<8xf32>
// CHECK: call @kiln_wmma_store
// CHECK: arith.truncf {{.*}} : f32 to f16
// CHECK-LABEL: func.func @kiln_k1_gemm(
// CHECK: call @kiln_wmma_mma_bf16
// CHECK: arith.extf {{.*}} : bf16 to f32
// CHECK: arith.truncf {{.*}} : f32 to bf16
// CHECK-LABEL: func.func @kiln_k2_conv(
// CHECK: call @kiln_wmma_mma_f16
// The depthwise conv: a thread per output, f16 loads widened to f32.
// CHECK-LABEL: func.func @kiln_k3_conv(
// CHECK-NOT: kiln_wmma
// CHECK: arith.extf {{.*}} : f16 to f32
// CHECK: arith.truncf {{.*}} : f32 to f16

// SRC: #include <cuda_fp16.h>
// SRC: #include <mma.h>
// SRC: wmma::mma_sync(c, fa, fb, c);
// SRC: extern "C" __global__ void kiln_k0_matmul(__half *__restrict__ b0, __half *__restrict__ b1, __half *__restrict__ b2, i64 workgroups)
// SRC: __shared__ __align__(32) __half s{{[0-9]+}}[1024];
// SRC: kiln_wmma_mma_f16(
// SRC: __float2half_rn(
// SRC: extern "C" __global__ void kiln_k1_gemm(__nv_bfloat16 *__restrict__ b0,
// SRC: kiln_wmma_mma_bf16(

// (--cuda-no-spills: ptxas spills would fail the compile.) The report: the
// kernels' types, and no spills and no stack on sm_90 -- the accumulator
// fragments stay in registers; the estimate uses the tensor-core peak.
// REPORT: | 0 | kiln_k0_matmul | matmul |  | row-major | f16 | f16 | 10 |
// REPORT: | 1 | kiln_k1_gemm | gemm |  | row-major | bf16 | bf16 | 2 |
// REPORT: | 0 | kiln_k0_matmul | 10 | 128 | {{[0-9]+}} | 0/0 | 0 | 8192 |
// REPORT: | 1 | kiln_k1_gemm | 2 | 128 | {{[0-9]+}} | 0/0 | 0 | 8192 |
// REPORT: | 2 | kiln_k2_conv | 3 | 128 | {{[0-9]+}} | 0/0 | 0 | 8192 |
// REPORT: | 3 | kiln_k3_conv | 8 | 256 | {{[0-9]+}} | 0/0 | 0 | 0 |
