// RUN: kiln-compile %s --emit=kernels | FileCheck %s
// Products on block-quantized weights over a symbolic row axis (a decoder's
// tokens T, bound 64): the kernel launches the tiles of the run's rows only
// (kiln.live_launch: one term, the rows of symbol 0 over the row tile,
// times the column tiles) and takes T's size. Where an axis of extent 2
// comes before the symbolic one the live rows are not a prefix of the
// flattened ones: every row at the bounds is computed.

func.func @main(%x: tensor<1x64x96xf32> {kiln.name = "x", kiln.symbols = array<i32: -1, 0, -1>},
                %x2: tensor<2x64x96xf32> {kiln.name = "x2", kiln.symbols = array<i32: -1, 0, -1>})
    -> (tensor<1x64x40xf32> {kiln.name = "y", kiln.symbols = array<i32: -1, 0, -1>},
        tensor<2x64x40xf32> {kiln.name = "y2", kiln.symbols = array<i32: -1, 0, -1>})
    attributes {kiln.symbol_bounds = array<i64: 64>, kiln.symbol_names = ["T"]} {
  %w = kiln.constant dense<5> : tensor<40x96xui8>
  %s = kiln.constant dense<0.125> : tensor<40x3xf32>
  %z = kiln.constant dense<8> : tensor<40x3xui8>
  %y = kiln.matmul_nbits %x, %w, %s, %z {bits = 4 : i64, block_size = 32 : i64} : tensor<1x64x96xf32>, tensor<40x96xui8>, tensor<40x3xf32>, tensor<40x3xui8>
  %y2 = kiln.matmul_nbits %x2, %w, %s, %z {bits = 4 : i64, block_size = 32 : i64} : tensor<2x64x96xf32>, tensor<40x96xui8>, tensor<40x3xf32>, tensor<40x3xui8>
  return %y, %y2 : tensor<1x64x40xf32>, tensor<2x64x40xf32>
}

// CHECK-LABEL: func.func @kiln_k0_matmul_nbits(
// CHECK-SAME: kiln.live_launch = array<i64: {{[0-9]+}}, 1, {{[0-9]+}}, 1, 0>
// CHECK-SAME: kiln.size_args = array<i32: 0>
// CHECK: call @kiln_uk_bqgemm
// CHECK-LABEL: func.func @kiln_k1_matmul_nbits(
// CHECK-NOT: kiln.live_launch
// CHECK-SAME: kiln.workgroups
// CHECK: call @kiln_uk_bqgemm
