// RUN: kiln-opt --split-input-file --kiln-quantize-int8 %s | FileCheck %s
// RUN: kiln-opt --split-input-file --kiln-quantize-int8 --canonicalize --kiln-integer-contractions %s | FileCheck %s --check-prefix=INT

// A matmul whose lhs ranged over [-1, 4.1] on the calibration inputs: uint8
// with scale 5.1 / 255 = 0.02 and zero point round(1 / 0.02) = 50, the
// quantize-dequantize pair written as the ONNX importer writes QuantizeLinear
// and DequantizeLinear; the weights rounded to int8 steps of each column's
// largest magnitude / 127 (column 0: 1.27 -> 0.01 steps, 0.333 -> 0.33;
// column 1: 2.54 -> 0.02 steps, -0.5 -> -0.5; column 2: all zero).
// CHECK-LABEL: func @calibrated_matmul
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>)
// CHECK: %[[D:.*]] = kiln.div %[[X]], %{{.*}} : tensor<4x3xf32>, tensor<f32>
// CHECK: %[[R:.*]] = kiln.round %[[D]]
// CHECK: %[[A:.*]] = kiln.add %[[R]], %{{.*}} : tensor<4x3xf32>, tensor<f32>
// CHECK: %[[LO:.*]] = kiln.max %[[A]], %{{.*}}
// CHECK: %[[HI:.*]] = kiln.min %[[LO]], %{{.*}}
// CHECK: %[[Q:.*]] = kiln.cast %[[HI]] : tensor<4x3xf32> -> tensor<4x3xui8>
// CHECK: %[[F:.*]] = kiln.cast %[[Q]] : tensor<4x3xui8> -> tensor<4x3xf32>
// CHECK: %[[C:.*]] = kiln.sub %[[F]], %{{.*}}
// CHECK: %[[DQ:.*]] = kiln.mul %[[C]], %{{.*}}
// CHECK: kiln.matmul %[[DQ]], %{{.*}} : tensor<4x3xf32>, tensor<3x3xf32>
// CHECK-NOT: kiln.int8_range
// The product on the 8-bit kernel: the int8 weights [[127, 1, 0],
// [33, -25, 0], [-20, 127, 0]], the activation's zero point 50.
// INT-LABEL: func @calibrated_matmul
// INT: %[[Q:.*]] = kiln.cast %{{.*}} : tensor<4x3xf32> -> tensor<4x3xui8>
// INT: kiln.matmul_integer %[[Q]], %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x3xui8>, tensor<3x3xi8>, tensor<ui8>, tensor<i8>
// INT-NOT: kiln.matmul %
// INT: int8_weights: "0x010000007F010021E700EC7F00"
func.func @calibrated_matmul(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %w = kiln.constant dense<[[1.27, 0.02, 0.0], [0.333, -0.5, 0.0], [-0.2, 2.54, 0.0]]> : tensor<3x3xf32>
  %y = kiln.matmul %x, %w {kiln.int8_range = array<f32: -1.0, 4.1>} : tensor<4x3xf32>, tensor<3x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// A Gemm with transposed weights ([N, K]) and a bias; a range above zero is
// widened to hold it (zero point 0).
// CHECK-LABEL: func @calibrated_gemm
// CHECK: kiln.add %{{.*}}, %[[Z:.*]] : tensor<2x4xf32>, tensor<f32>
// CHECK: kiln.gemm
// INT-LABEL: func @calibrated_gemm
// INT: kiln.matmul_integer %{{.*}} : tensor<2x4xui8>, tensor<4x2xi8>, tensor<ui8>, tensor<i8>
// INT: kiln.add %{{.*}}, %{{.*}} : tensor<2x2xf32>, tensor<2xf32>
func.func @calibrated_gemm(%x: tensor<2x4xf32>) -> tensor<2x2xf32> {
  %w = kiln.constant dense<[[0.5, -0.25, 1.0, 0.125], [2.0, 0.0, -1.0, 0.5]]> : tensor<2x4xf32>
  %b = kiln.constant dense<[0.1, -0.2]> : tensor<2xf32>
  %y = kiln.gemm %x, %w, %b {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true, kiln.int8_range = array<f32: 0.5, 3.0>} : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// Without a range (not calibrated) or with an activation for weights, a
// product stays as it is.
// CHECK-LABEL: func @not_calibrated
// CHECK-NOT: kiln.cast
// CHECK: kiln.matmul %arg0, %arg1
// CHECK: kiln.matmul %arg0, %{{.*}} : tensor<4x3xf32>, tensor<3x3xf32>
// CHECK-NOT: kiln.cast
func.func @not_calibrated(%x: tensor<4x3xf32>, %v: tensor<3x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %w = kiln.constant dense<1.0> : tensor<3x3xf32>
  %a = kiln.matmul %x, %v {kiln.int8_range = array<f32: -1.0, 1.0>} : tensor<4x3xf32>, tensor<3x3xf32>
  %b = kiln.matmul %x, %w : tensor<4x3xf32>, tensor<3x3xf32>
  return %a, %b : tensor<4x3xf32>, tensor<4x3xf32>
}
