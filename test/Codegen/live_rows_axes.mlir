// RUN: kiln-compile %s -O0 --emit=kernels | FileCheck %s
// Live extents over several leading axes and through regrouping reshapes:
// a layer norm computes the live rows of every axis before the normalized
// one (B and S, not only B); a reshape grouping the static axis behind B
// ([B, 2, S, 8] -> [B*2, S, 8], attention's per-head batch, stating its
// symbols) maps the first B rows onto the first B*2, so the transpose after
// it and the one after the reshape back stop at the live extents; a gather
// by a constant index (a first token) reads within the live extent of S.

func.func @main(%x: tensor<4x2x64x64xf32> {kiln.name = "x", kiln.symbols = array<i32: 0, -1, 1, -1>})
    -> (tensor<4x2x64x64xf32> {kiln.name = "y", kiln.symbols = array<i32: 0, -1, -1, 1>},
        tensor<4x2x64xf32> {kiln.name = "first", kiln.symbols = array<i32: 0, -1, -1>})
    attributes {kiln.symbol_bounds = array<i64: 4, 64, 8>, kiln.symbol_names = ["B", "S", "B*2"],
                kiln.symbol_derived = array<i64: 0, -1, 0, 0, -1, 0, 1, 0, 2>} {
  %scale = kiln.constant dense<1.5> : tensor<64xf32>
  %bias = kiln.constant dense<0.25> : tensor<64xf32>
  %ln = kiln.layer_norm %x, %scale, %bias {axis = 3 : i64, epsilon = 1.0e-5 : f32} : tensor<4x2x64x64xf32>, tensor<64xf32>, tensor<64xf32>
  %r = kiln.reshape %ln {kiln.axis_symbol = array<i64: 0, 2, 1, 1>} : tensor<4x2x64x64xf32> -> tensor<8x64x64xf32>
  %t = kiln.transpose %r {perm = array<i64: 0, 2, 1>} : tensor<8x64x64xf32> -> tensor<8x64x64xf32>
  %back = kiln.reshape %t {kiln.axis_symbol = array<i64: 0, 0, 3, 1>} : tensor<8x64x64xf32> -> tensor<4x2x64x64xf32>
  %y = kiln.relu %back : tensor<4x2x64x64xf32>
  %c0 = kiln.constant dense<0> : tensor<i64>
  %first = kiln.gather %ln, %c0 {axis = 2 : i64, kiln.symbol_indices} : tensor<4x2x64x64xf32>, tensor<i64>
  return %y, %first : tensor<4x2x64x64xf32>, tensor<4x2x64xf32>
}

// The layer norm's launch follows B and S (kiln.live_launch: one term, 2
// rows of B x S per 256 rows), the transpose's B*2 (symbol 2), and the
// relu after the reshape back B; the gather takes the sizes too.
// CHECK-LABEL: func.func @kiln_k0_layer_norm(
// CHECK-SAME: kiln.live_launch = array<i64: 1, 2, 256, 2, 0, 1>, kiln.size_args = array<i32: 0, 1, 2>
// CHECK-LABEL: func.func @kiln_k1_transpose(
// CHECK-SAME: kiln.live_launch = array<i64: 1, 64, 256, 1, 2>, kiln.size_args = array<i32: 0, 1, 2>
// CHECK-LABEL: func.func @kiln_k2_relu(
// CHECK-SAME: kiln.live_launch = array<i64: 1, 128, 256, 1, 0>, kiln.size_args = array<i32: 0, 1, 2>
// CHECK-LABEL: func.func @kiln_k3_gather(
// CHECK-SAME: kiln.size_args = array<i32: 0, 1, 2>
