// RUN: kiln-compile %s -O0 --emit=kernels | FileCheck %s
// RUN: kiln-compile %s -O0 --target=cuda-emu --emit=kernels | FileCheck %s --check-prefix=EMU
// Two symbols: T new rows (bound 32) and K keys (bound 64). Every kernel
// computes only the live extents of its axes (LiveExtents.h): the scores'
// rows and columns, the softmax over the live keys, the product over the
// live keys, the scaled output's rows. Each takes the run's sizes as i64
// arguments after its buffers (kiln.size_args) and, on the CPU, launches
// with them (kiln.live_launch: inner, then per term num, den, count,
// symbols).

func.func @main(%q: tensor<1x32x16xf32> {kiln.name = "q", kiln.symbols = array<i32: -1, 0, -1>},
                %k: tensor<1x64x16xf32> {kiln.name = "k", kiln.symbols = array<i32: -1, 1, -1>},
                %v: tensor<1x64x16xf32> {kiln.name = "v", kiln.symbols = array<i32: -1, 1, -1>})
    -> (tensor<1x32x16xf32> {kiln.name = "y", kiln.symbols = array<i32: -1, 0, -1>})
    attributes {kiln.symbol_bounds = array<i64: 32, 64>, kiln.symbol_names = ["T", "K"]} {
  %kt = kiln.transpose %k {perm = array<i64: 0, 2, 1>} : tensor<1x64x16xf32> -> tensor<1x16x64xf32>
  %s = kiln.matmul %q, %kt : tensor<1x32x16xf32>, tensor<1x16x64xf32>
  %p = kiln.softmax %s {axis = 2 : i64} : tensor<1x32x64xf32>
  %o = kiln.matmul %p, %v : tensor<1x32x64xf32>, tensor<1x64x16xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %y = kiln.mul %o, %two : tensor<1x32x16xf32>, tensor<f32>
  return %y : tensor<1x32x16xf32>
}

// The transposed keys: live key columns, both sizes taken.
// CHECK-LABEL: func.func @kiln_k0_transpose(
// CHECK-SAME: %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: index)
// CHECK-SAME: kiln.size_args = array<i32: 0, 1>
// Q K^T: tiles of the live rows (T) and columns (K).
// CHECK-LABEL: func.func @kiln_k1_matmul(
// CHECK-SAME: kiln.live_launch = array<i64: 1, 1, {{[0-9]+}}, 1, 0, 1, {{[0-9]+}}, 1, 1>
// CHECK: call @kiln_uk_sgemm(
// The softmax over the live keys: lines of the live rows.
// CHECK-LABEL: func.func @kiln_k2_softmax(
// CHECK-SAME: kiln.size_args = array<i32: 0, 1>
// P V: the live rows, the depth the live keys (the ukernel's k a run-time
// value: the size argument, clamped to the bound).
// CHECK-LABEL: func.func @kiln_k3_matmul(
// CHECK: arith.index_cast %arg{{[0-9]+}} : i64 to index
// CHECK: call @kiln_uk_sgemm(
// CHECK-LABEL: func.func @kiln_k4_mul(
// CHECK-SAME: kiln.size_args = array<i32: 0, 1>

// The CUDA targets walk the same live extents inside grids sized for the
// bounds (a captured CUDA graph replays any run): every kernel takes the
// run's sizes, none launches by them.
// EMU-NOT: kiln.live_launch
// EMU-LABEL: func.func @kiln_k0_transpose(
// EMU-SAME: kiln.size_args = array<i32: 0, 1>
// EMU-LABEL: func.func @kiln_k1_matmul(
// EMU-SAME: kiln.size_args = array<i32: 0, 1>
// EMU-LABEL: func.func @kiln_k2_softmax(
// EMU-SAME: kiln.size_args = array<i32: 0, 1>
// EMU-LABEL: func.func @kiln_k3_matmul(
// EMU-SAME: kiln.size_args = array<i32: 0, 1>
// EMU-LABEL: func.func @kiln_k4_mul(
// EMU-SAME: kiln.size_args = array<i32: 0, 1>
// EMU-NOT: kiln.live_launch
