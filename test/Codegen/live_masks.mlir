// RUN: kiln-compile %s -O0 --emit=kernels | FileCheck %s
// Padding masks (MaskSymbols' where(iota < size, x, fill), kiln.masked_axes)
// before kernels that stop at the live extent of the masked axis: on the
// live positions the mask is its data, so it has no kernel
// (LiveExtents::passThrough), nor has its condition; inside a fusion it is
// its data operand (Epilogue::liveMasks).

func.func @main(%s: tensor<1x4x64xf32> {kiln.name = "s", kiln.symbols = array<i32: -1, -1, 0>},
                %n: tensor<1xi64> {kiln.name = "__kiln_size_K", kiln.symbol_input = 0 : i32})
    -> (tensor<1x4x64xf32> {kiln.name = "p", kiln.symbols = array<i32: -1, -1, 0>},
        tensor<1x4x64xf32> {kiln.name = "q", kiln.symbols = array<i32: -1, -1, 0>})
    attributes {kiln.symbol_bounds = array<i64: 64>, kiln.symbol_names = ["K"]} {
  %iota = kiln.constant {kiln.axis_symbol = array<i64: 2, 0>} dense<[[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63]]]> : tensor<1x1x64xi64>
  %lt = kiln.compare %iota, %n {predicate = "lt"} : tensor<1x1x64xi64>, tensor<1xi64>
  %ninf = kiln.constant dense<0xFF800000> : tensor<f32>
  %m = kiln.where %lt, %s, %ninf {kiln.masked_axes = array<i64: 2>} : tensor<1x1x64xi1>, tensor<1x4x64xf32>, tensor<f32>
  %p = kiln.softmax %m {axis = 2 : i64} : tensor<1x4x64xf32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %f = kiln.fusion %lt, %s, %ninf, %half : (tensor<1x1x64xi1>, tensor<1x4x64xf32>, tensor<f32>, tensor<f32>) -> tensor<1x4x64xf32> {
  ^bb0(%c: tensor<1x1x64xi1>, %x: tensor<1x4x64xf32>, %fill: tensor<f32>, %h: tensor<f32>):
    %w = kiln.where %c, %x, %fill {kiln.masked_axes = array<i64: 2>} : tensor<1x1x64xi1>, tensor<1x4x64xf32>, tensor<f32>
    %y = kiln.mul %w, %h : tensor<1x4x64xf32>, tensor<f32>
    kiln.yield %y : tensor<1x4x64xf32>
  }
  %q = kiln.softmax %f {axis = 2 : i64} : tensor<1x4x64xf32>
  return %p, %q : tensor<1x4x64xf32>, tensor<1x4x64xf32>
}

// No kernel for the mask before the softmax, nor for its condition beyond
// the fusion's: the softmax reads the scores themselves.
// CHECK-NOT: func.func @kiln_k{{[0-9]+}}_where(
// CHECK-LABEL: func.func @kiln_k0_compare(
// CHECK-LABEL: func.func @kiln_k1_softmax(%arg0: memref<256xf32>
// CHECK-NOT: func.func @kiln_k{{[0-9]+}}_where(
// The fusion's mask is its data: no select.
// CHECK-LABEL: func.func @kiln_k2_fusion(
// CHECK-NOT: arith.select
// CHECK-LABEL: func.func @kiln_k3_softmax(
