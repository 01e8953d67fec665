// RUN: kiln-compile %s -O0 --emit=kernels | FileCheck %s
// Attention over a symbolic batch N (bound 8, 2 heads, 16 queries): the
// kernel launches the workgroups of the run's batch rows only, N * 2 heads
// x 1 query block (kiln.live_launch: inner 1, num 2, den 1, one symbol, N),
// so the products feeding it compute only those rows too.

func.func @main(%x: tensor<8x16x32xf32> {kiln.name = "x", kiln.symbols = array<i32: 0, -1, -1>})
    -> (tensor<8x2x16x16xf32> {kiln.name = "y", kiln.symbols = array<i32: 0, -1, -1, -1>})
    attributes {kiln.symbol_bounds = array<i64: 8>, kiln.symbol_names = ["N"]} {
  %w = kiln.constant dense<0.01> : tensor<32x32xf32>
  %p = kiln.matmul %x, %w : tensor<8x16x32xf32>, tensor<32x32xf32>
  %r = kiln.reshape %p : tensor<8x16x32xf32> -> tensor<8x16x2x16xf32>
  %h = kiln.transpose %r {perm = array<i64: 0, 2, 1, 3>} : tensor<8x16x2x16xf32> -> tensor<8x2x16x16xf32>
  %y = kiln.attention %h, %h, %h {scale = 0.25 : f32} : tensor<8x2x16x16xf32>, tensor<8x2x16x16xf32>, tensor<8x2x16x16xf32> -> tensor<8x2x16x16xf32>
  return %y : tensor<8x2x16x16xf32>
}

// CHECK-LABEL: func.func @kiln_k0_matmul(
// CHECK-SAME: kiln.live_launch
// CHECK-LABEL: func.func @kiln_k1_transpose(
// CHECK-SAME: kiln.size_args = array<i32: 0>
// CHECK-LABEL: func.func @kiln_k2_attention(
// CHECK-SAME: kiln.live_launch = array<i64: 1, 2, 1, 1, 0>
// CHECK-SAME: kiln.workgroups = 16
