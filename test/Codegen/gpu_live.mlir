// RUN: kiln-compile %s --target=cuda --emit=cuda-src --cuda-arch=sm_80 | FileCheck %s
// NVRTC compiles them (f32, and bf16 operands on tensor cores); the launch
// table passes the sizes' hidden inputs after each kernel's buffers.
// RUN: kiln-compile %s --target=cuda --cuda-arch=sm_80 -o %t.cuda.so
// RUN: kiln-compile %s --target=cuda --precision=bf16 --cuda-arch=sm_80 -o %t.cuda16.so
// RUN: kiln-run %t.cuda.so --info | FileCheck %s --check-prefix=INFO
// INFO: launch kiln_k0_mul<<<(1,1,1), (256,1,1), 0>>> 5 buffers
// The emulated CUDA kernels against the CPU target below the bounds (N = 3
// of 8 rows, K = 37 of 64 keys), where the padding is never computed.
// RUN: kiln-compile %s --target=cuda-emu -o %t.emu.so
// RUN: kiln-compile %s -o %t.cpu.so
// RUN: %python -c "import numpy as np; g = np.random.default_rng(5); [np.save('%t.' + n + '.npy', g.standard_normal(s).astype(np.float32)) for n, s in [('x', (3, 16)), ('s', (1, 4, 37)), ('v', (1, 37, 16)), ('img', (3, 3, 6, 6))]]"
// RUN: kiln-run %t.cpu.so --input x=%t.x.npy --input s=%t.s.npy --input v=%t.v.npy --input img=%t.img.npy --output-dir %t.ref
// RUN: kiln-run %t.emu.so --input x=%t.x.npy --input s=%t.s.npy --input v=%t.v.npy --input img=%t.img.npy --compare y=%t.ref/y.npy --compare t=%t.ref/t.npy --compare l=%t.ref/l.npy --compare p=%t.ref/p.npy --compare mm=%t.ref/mm.npy --compare pv=%t.ref/pv.npy --compare mp=%t.ref/mp.npy --compare fc=%t.ref/fc.npy --rtol 1e-5 --atol 1e-5 | FileCheck %s --check-prefix=NUM
// NUM-COUNT-8: compare {{[a-z]+}}: ok
// The products on tensor cores (bf16 operands) stop at the live tiles and
// depth too: within bf16's rounding of the f32 results.
// RUN: kiln-compile %s --target=cuda-emu --precision=bf16 -o %t.tc.so
// RUN: kiln-run %t.tc.so --input x=%t.x.npy --input s=%t.s.npy --input v=%t.v.npy --input img=%t.img.npy --compare mm=%t.ref/mm.npy --compare pv=%t.ref/pv.npy --rtol 2e-2 --atol 2e-2 | FileCheck %s --check-prefix=TC
// TC-COUNT-2: compare {{[a-z]+}}: ok
// The CUDA target's kernels over live extents (LiveExtents with gpu): the
// grid stays sized for the bounds (a captured CUDA graph replays any run),
// each kernel reads the run's sizes from their hidden inputs in device
// memory and walks only the live positions.

func.func @main(%x: tensor<8x16xf32> {kiln.name = "x", kiln.symbols = array<i32: 0, -1>},
                %s: tensor<1x4x64xf32> {kiln.name = "s", kiln.symbols = array<i32: -1, -1, 1>},
                %v: tensor<1x64x16xf32> {kiln.name = "v", kiln.symbols = array<i32: -1, 1, -1>},
                %img: tensor<8x3x6x6xf32> {kiln.name = "img", kiln.symbols = array<i32: 0, -1, -1, -1>},
                %n: tensor<1xi64> {kiln.name = "__kiln_size_K", kiln.symbol_input = 1 : i32})
    -> (tensor<8x16xf32> {kiln.name = "y", kiln.symbols = array<i32: 0, -1>},
        tensor<16x8xf32> {kiln.name = "t", kiln.symbols = array<i32: -1, 0>},
        tensor<8x16xf32> {kiln.name = "l", kiln.symbols = array<i32: 0, -1>},
        tensor<1x4x64xf32> {kiln.name = "p", kiln.symbols = array<i32: -1, -1, 1>},
        tensor<8x24xf32> {kiln.name = "mm", kiln.symbols = array<i32: 0, -1>},
        tensor<1x4x16xf32> {kiln.name = "pv"},
        tensor<8x4x3x3xf32> {kiln.name = "mp", kiln.symbols = array<i32: 0, -1, -1, -1>},
        tensor<8x5xf32> {kiln.name = "fc", kiln.symbols = array<i32: 0, -1>})
    attributes {kiln.symbol_bounds = array<i64: 8, 64>, kiln.symbol_names = ["N", "K"]} {
  %three = kiln.constant dense<3.0> : tensor<f32>
  %y = kiln.mul %x, %three : tensor<8x16xf32>, tensor<f32>
  %t = kiln.transpose %x {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
  %g = kiln.constant dense<2.0> : tensor<16xf32>
  %l = kiln.layer_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : tensor<8x16xf32>, tensor<16xf32>
  %iota = kiln.constant {kiln.axis_symbol = array<i64: 2, 1>} dense<[[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63]]]> : tensor<1x1x64xi64>
  %lt = kiln.compare %iota, %n {predicate = "lt"} : tensor<1x1x64xi64>, tensor<1xi64>
  %ninf = kiln.constant dense<0xFF800000> : tensor<f32>
  %m = kiln.where %lt, %s, %ninf {kiln.masked_axes = array<i64: 2>} : tensor<1x1x64xi1>, tensor<1x4x64xf32>, tensor<f32>
  %p = kiln.softmax %m {axis = 2 : i64} : tensor<1x4x64xf32>
  %w = kiln.constant dense<0.125> : tensor<16x24xf32>
  %mm = kiln.matmul %x, %w : tensor<8x16xf32>, tensor<16x24xf32>
  %pv = kiln.matmul %p, %v : tensor<1x4x64xf32>, tensor<1x64x16xf32>
  %cw = kiln.constant dense<0.2> : tensor<4x3x3x3xf32>
  %cv = kiln.conv %img, %cw {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<8x3x6x6xf32>, tensor<4x3x3x3xf32>) -> tensor<8x4x6x6xf32>
  %mp = kiln.max_pool %cv {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false} : tensor<8x4x6x6xf32> -> tensor<8x4x3x3xf32>
  %gap = kiln.global_avg_pool %cv : tensor<8x4x6x6xf32> -> tensor<8x4x1x1xf32>
  %flat = kiln.reshape %gap : tensor<8x4x1x1xf32> -> tensor<8x4xf32>
  %fw = kiln.constant dense<0.3> : tensor<4x5xf32>
  %fc = kiln.gemm %flat, %fw {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = false} : (tensor<8x4xf32>, tensor<4x5xf32>) -> tensor<8x5xf32>
  return %y, %t, %l, %p, %mm, %pv, %mp, %fc : tensor<8x16xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<1x4x64xf32>, tensor<8x24xf32>, tensor<1x4x16xf32>, tensor<8x4x3x3xf32>, tensor<8x5xf32>
}

// An elementwise kernel over the live rows (a prefix: 16-byte accesses
// stay) reads N's size from its hidden input; its grid-stride loop ends at
// the live count (min(N, 8) rows of 16, in float4s).
// CHECK-LABEL: void kiln_k0_mul(
// CHECK-SAME: const i64 *__restrict__ szp[[N:[0-9]+]],
// CHECK: const i64 sz[[N]] = *szp[[N]];
// CHECK: i64 [[S:v[0-9]+]] = (i64)sz[[N]];
// CHECK: i64 [[ROWS:v[0-9]+]] = (unsigned long long)([[S]]) < (unsigned long long)(v{{[0-9]+}}) ? [[S]] : v{{[0-9]+}};
// CHECK: for (i64 {{.*}} < [[COUNT:v[0-9]+]];
// CHECK: float4
// A transpose (gpuForEach): the live elements, each decoded to its
// position at the bounds (N is the result's inner axis).
// CHECK-LABEL: void kiln_k1_transpose(
// CHECK-SAME: const i64 *__restrict__ szp
// CHECK: for (i64 [[I:iv[0-9]+]] = {{.*}} < v{{[0-9]+}}; [[I]] +=
// CHECK: % (unsigned long long)(v{{[0-9]+}})
// Layer norm: the blocks past the live rows leave (the whole block, so
// its barriers stay uniform).
// CHECK-LABEL: void kiln_k2_layer_norm(
// CHECK: bool [[LIVE:v[0-9]+]] = (unsigned long long)(v{{[0-9]+}}) < (unsigned long long)(v{{[0-9]+}});
// CHECK-NEXT: if ([[LIVE]]) {
// CHECK: kiln_gpu_barrier();
// No kernel for the padding mask nor its condition: the softmax reduces
// each line over the live keys only (min(K, 64)).
// CHECK-NOT: _where(
// CHECK-NOT: _compare(
// CHECK-LABEL: void kiln_k3_softmax(
// CHECK-SAME: const i64 *__restrict__ szp[[K:[0-9]+]], i64 workgroups)
// CHECK: i64 [[SK:v[0-9]+]] = (i64)sz[[K]];
// CHECK: i64 [[LEN:v[0-9]+]] = (unsigned long long)([[SK]]) < (unsigned long long)(v{{[0-9]+}}) ? [[SK]] : v{{[0-9]+}};
// CHECK: for (i64 {{.*}} < [[LEN]];
// A product over live rows: the blocks past them leave (the rest of the
// body under the live-tile condition; one row tile here: rows > 0).
// CHECK-LABEL: void kiln_k{{[0-9]+}}_matmul(
// CHECK: bool [[TILE:v[0-9]+]] = (unsigned long long)(v{{[0-9]+}}) {{<|>}} (unsigned long long)(v{{[0-9]+}});
// CHECK-NEXT: if ([[TILE]]) {
// CHECK: kiln_gpu_barrier();
// P.V over the live keys: the k loop stops at the live depth (min(K, 64)).
// CHECK-LABEL: void kiln_k{{[0-9]+}}_matmul(
// CHECK-SAME: const i64 *__restrict__ szp[[K2:[0-9]+]], i64 workgroups)
// CHECK: i64 [[SK2:v[0-9]+]] = (i64)sz[[K2]];
// CHECK: (unsigned long long)([[SK2]]) < (unsigned long long)(v{{[0-9]+}}) ? [[SK2]] : v{{[0-9]+}};
// A convolution over the live batch: the blocks of the images past it
// leave (the implicit GEMM's batches, image by group).
// CHECK-LABEL: void kiln_k{{[0-9]+}}_conv(
// CHECK-SAME: const i64 *__restrict__ szp
// CHECK: if (v{{[0-9]+}}) {
// CHECK: kiln_gpu_barrier();
