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

// -----

// One pair per activation: %x is the lhs of two calibrated products (their
// ranges' union, [-2, 3], is kept) and a residual sum's term; every reader
// but the return reads the dequantized value, so the products' producer
// can write bytes and the sum read them.
// CHECK-LABEL: func @shared_activation
// CHECK-SAME: (%[[X:.*]]: tensor<4x3xf32>)
// CHECK: %[[D:.*]] = kiln.div %[[X]]
// CHECK-NOT: kiln.div
// CHECK: %[[DQ:.*]] = kiln.mul %{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<f32>
// CHECK: kiln.matmul %[[DQ]]
// CHECK: kiln.matmul %[[DQ]]
// CHECK: kiln.add %[[DQ]], %[[DQ]]
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}}, %[[X]]
// The union's scale 5 / 255 (0x3CA0A0A1) and zero point 102 (0x42CC0000).
// CHECK: int8_act_scale: "0x04000000A1A0A03C"
// CHECK: int8_act_zero: "0x040000000000CC42"
func.func @shared_activation(%x: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) {
  %w = kiln.constant dense<[[1.0, 0.5, 0.0], [0.25, -0.5, 1.0], [-0.2, 2.0, 0.5]]> : tensor<3x3xf32>
  %v = kiln.constant dense<[[0.5, 0.5, 1.0], [-0.25, 0.5, 1.0], [0.2, 1.0, -0.5]]> : tensor<3x3xf32>
  %a = kiln.matmul %x, %w {kiln.int8_range = array<f32: -2.0, 1.0>} : tensor<4x3xf32>, tensor<3x3xf32>
  %b = kiln.matmul %x, %v {kiln.int8_range = array<f32: -1.0, 3.0>} : tensor<4x3xf32>, tensor<3x3xf32>
  %s = kiln.add %x, %x : tensor<4x3xf32>, tensor<4x3xf32>
  return %a, %b, %s, %x : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// A depthwise conv: its input quantized as any product's, its weights
// rounded per channel (channel 0: steps of 0.5 / 127, 0.3 -> 76 steps =
// 0.2992126 (0x3E993265), 0.1 -> 25 = 0.0984252 (0x3DC99326); channel 1's
// ones stay 1); kiln-integer-contractions then has it compute in f32 on the
// bytes, cast(q) - zero, the scales in its weights.
// CHECK-LABEL: func @calibrated_depthwise
// CHECK: kiln.div
// CHECK: %[[DQ:.*]] = kiln.mul
// CHECK: kiln.conv %[[DQ]]
// CHECK: int8_weights_f32: "0x040000000000003F6532993E2693C93D00000000000000BF369B4D3E2693C93D2693C93D2693C93D0000803F
// INT-LABEL: func @calibrated_depthwise
// INT: %[[Q:.*]] = kiln.cast %{{.*}} : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xui8>
// INT: %[[F:.*]] = kiln.cast %[[Q]] : tensor<1x2x4x4xui8> -> tensor<1x2x4x4xf32>
// INT: kiln.conv %{{.*}}, %{{.*}} {{.*}}group = 2
// INT-NOT: kiln.div
func.func @calibrated_depthwise(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = kiln.constant dense<[[[[0.5, 0.3, 0.1], [0.0, -0.5, 0.2], [0.1, 0.1, 0.1]]], [[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]]]> : tensor<2x1x3x3xf32>
  %y = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64, kiln.int8_range = array<f32: -1.0, 2.0>} : (tensor<1x2x4x4xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}
