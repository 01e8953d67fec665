// RUN: kiln-opt --split-input-file --kiln-integer-contractions %s | FileCheck %s

// A QDQ matmul: the lhs dequantizes uint8 (zero point 128, scale 0.5), the
// weights are int8 times 0.01 -- column 0 per column (its largest value
// 1.27 is 127 steps), column 2 per column too (its -1.28 is -128 steps),
// column 1 with the matrix's step (its own largest, 0.63, is neither 127
// nor 128 of its values' steps). The product becomes the 8-bit one, its
// int32 result times 0.5 * 0.01 per column; the int8 weights are
// [[127, 2, -128], [-50, -63, 1], [3, 10, 50]].
// CHECK-LABEL: func @qdq_matmul
// CHECK-SAME: (%[[Q:.*]]: tensor<4x3xui8>)
// CHECK-NOT: kiln.matmul %
// CHECK-DAG: %[[W:.*]] = kiln.constant dense_resource<int8_weights> : tensor<3x3xi8>
// CHECK-DAG: %[[ZQ:.*]] = kiln.constant dense<128> : tensor<ui8>
// CHECK-DAG: %[[ZW:.*]] = kiln.constant dense<0> : tensor<i8>
// CHECK: %[[ACC:.*]] = kiln.matmul_integer %[[Q]], %[[W]], %[[ZQ]], %[[ZW]] : tensor<4x3xui8>, tensor<3x3xi8>, tensor<ui8>, tensor<i8>
// CHECK: %[[F:.*]] = kiln.cast %[[ACC]] : tensor<4x3xi32> -> tensor<4x3xf32>
// CHECK: %[[S:.*]] = kiln.constant dense_resource<int8_scale> : tensor<3xf32>
// CHECK: %[[Y:.*]] = kiln.mul %[[F]], %[[S]] : tensor<4x3xf32>, tensor<3xf32>
// CHECK: return %[[Y]]
// CHECK: int8_weights: "0x010000007F0280CEC101030A32"
func.func @qdq_matmul(%q: tensor<4x3xui8>) -> tensor<4x3xf32> {
  %f = kiln.cast %q : tensor<4x3xui8> -> tensor<4x3xf32>
  %z = kiln.constant dense<128.0> : tensor<f32>
  %s = kiln.constant dense<0.5> : tensor<f32>
  %c = kiln.sub %f, %z : tensor<4x3xf32>, tensor<f32>
  %a = kiln.mul %c, %s : tensor<4x3xf32>, tensor<f32>
  %w = kiln.constant dense<[[1.27, 0.02, -1.28], [-0.5, -0.63, 0.01], [0.03, 0.1, 0.5]]> : tensor<3x3xf32>
  %y = kiln.matmul %a, %w : tensor<4x3xf32>, tensor<3x3xf32>
  return %y : tensor<4x3xf32>
}

// -----

// A QDQ Gemm with B transposed and a bias: the bias is added after the
// scale; a signed lhs without a zero point (no sub).
// CHECK-LABEL: func @qdq_gemm
// CHECK-SAME: (%[[Q:.*]]: tensor<2x3xi8>, %[[B:.*]]: tensor<2xf32>)
// CHECK: %[[ACC:.*]] = kiln.matmul_integer %[[Q]], %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x3xi8>, tensor<3x2xi8>, tensor<i8>, tensor<i8>
// CHECK: %[[F:.*]] = kiln.cast %[[ACC]]
// CHECK: %[[M:.*]] = kiln.mul %[[F]], %{{.*}}
// CHECK: %[[Y:.*]] = kiln.add %[[M]], %[[B]] : tensor<2x2xf32>, tensor<2xf32>
// CHECK: return %[[Y]]
func.func @qdq_gemm(%q: tensor<2x3xi8>, %bias: tensor<2xf32>) -> tensor<2x2xf32> {
  %f = kiln.cast %q : tensor<2x3xi8> -> tensor<2x3xf32>
  %s = kiln.constant dense<0.25> : tensor<f32>
  %a = kiln.mul %f, %s : tensor<2x3xf32>, tensor<f32>
  %w = kiln.constant dense<[[1.27, -0.5, 0.03], [0.02, -0.64, 0.1]]> : tensor<2x3xf32>
  %y = kiln.gemm %a, %w, %bias {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// Weights that are not 8-bit (0.3 is no multiple of 0.7 / 127), and a lhs
// that is no dequantized 8-bit value: both stay f32 products.
// CHECK-LABEL: func @not_quantized
// CHECK-NOT: kiln.matmul_integer
// CHECK: kiln.matmul
// CHECK: kiln.matmul
// CHECK-NOT: kiln.matmul_integer
func.func @not_quantized(%q: tensor<4x3xui8>, %x: tensor<4x3xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
  %f = kiln.cast %q : tensor<4x3xui8> -> tensor<4x3xf32>
  %s = kiln.constant dense<0.5> : tensor<f32>
  %a = kiln.mul %f, %s : tensor<4x3xf32>, tensor<f32>
  %w = kiln.constant dense<[[0.3, 0.1], [0.7, 0.2], [0.11, 0.9]]> : tensor<3x2xf32>
  %y = kiln.matmul %a, %w : tensor<4x3xf32>, tensor<3x2xf32>
  %w8 = kiln.constant dense<[[1.27, 0.02], [-0.5, -0.64], [0.03, 0.1]]> : tensor<3x2xf32>
  %z = kiln.matmul %x, %w8 : tensor<4x3xf32>, tensor<3x2xf32>
  return %y, %z : tensor<4x2xf32>, tensor<4x2xf32>
}

// -----

// A QDQ convolution (uint8 input less zero point 3, scale 0.5; weights int8
// per output channel, steps 0.01, 0.02, 0.005 and 0.04; a bias): the
// 8-bit convolution with the f32 conv's attributes, its int32 sums times
// 0.5 * step per channel ([O, 1, 1] over NCHW), plus the bias as
// [O, 1, 1]. The int8 weights keep the OIHW order (127, -83, -65, ...).
// CHECK-LABEL: func @qdq_conv
// CHECK-SAME: (%[[Q:.*]]: tensor<1x4x6x6xui8>, %[[B:.*]]: tensor<4xf32>)
// CHECK-NOT: kiln.conv %
// CHECK-DAG: %[[W:.*]] = kiln.constant dense_resource<int8_weights> : tensor<4x4x2x2xi8>
// CHECK-DAG: %[[ZQ:.*]] = kiln.constant dense<3> : tensor<ui8>
// CHECK-DAG: %[[ZW:.*]] = kiln.constant dense<0> : tensor<i8>
// CHECK: %[[ACC:.*]] = kiln.conv_integer %[[Q]], %[[W]], %[[ZQ]], %[[ZW]] {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 0, 0, 1>, strides = array<i64: 2, 1>} : (tensor<1x4x6x6xui8>, tensor<4x4x2x2xi8>, tensor<ui8>, tensor<i8>) -> tensor<1x4x3x6xi32>
// CHECK: %[[F:.*]] = kiln.cast %[[ACC]] : tensor<1x4x3x6xi32> -> tensor<1x4x3x6xf32>
// CHECK: %[[S:.*]] = kiln.constant dense_resource<int8_scale> : tensor<4x1x1xf32>
// CHECK: %[[M:.*]] = kiln.mul %[[F]], %[[S]] : tensor<1x4x3x6xf32>, tensor<4x1x1xf32>
// CHECK: %[[BR:.*]] = kiln.reshape %[[B]] : tensor<4xf32> -> tensor<4x1x1xf32>
// CHECK: %[[Y:.*]] = kiln.add %[[M]], %[[BR]] : tensor<1x4x3x6xf32>, tensor<4x1x1xf32>
// CHECK: return %[[Y]]
// CHECK: int8_weights: "0x010000007FADBFCBC03C4910
// CHECK: int8_scale: "0x040000000AD7A33B
func.func @qdq_conv(%q: tensor<1x4x6x6xui8>, %bias: tensor<4xf32>) -> tensor<1x4x3x6xf32> {
  %f = kiln.cast %q : tensor<1x4x6x6xui8> -> tensor<1x4x6x6xf32>
  %z = kiln.constant dense<3.0> : tensor<f32>
  %s = kiln.constant dense<0.5> : tensor<f32>
  %c = kiln.sub %f, %z : tensor<1x4x6x6xf32>, tensor<f32>
  %a = kiln.mul %c, %s : tensor<1x4x6x6xf32>, tensor<f32>
  %w = kiln.constant dense<[[[[1.27, -0.83], [-0.65, -0.53]], [[-0.64, 0.6], [0.73, 0.16]], [[-0.93, -0.82], [-0.34, -0.14]], [[0.24, -0.05], [-0.48, -0.69]]], [[[0.76, 0.92], [-1.88, -1.56]], [[-0.2, -0.44], [1.54, -2.54]], [[-0.32, -0.28], [0.66, 0.34]], [[-1.32, 0.94], [1.02, 1.82]]], [[[0.285, -0.22], [-0.185, 0.145]], [[0.15, 0.195], [0.365, -0.21]], [[0.435, -0.5], [-0.425, 0.47]], [[0.44, 0.635], [-0.365, -0.19]]], [[[-3.68, 3.12], [1.28, 0.68]], [[-2.08, -0.24], [-2.48, 2.16]], [[-0.24, -3.76], [5.08, 1.64]], [[0.12, -1.04], [-2.0, -3.28]]]]> : tensor<4x4x2x2xf32>
  %y = kiln.conv %a, %w, %bias {strides = array<i64: 2, 1>, pads = array<i64: 1, 0, 0, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x6x6xf32>, tensor<4x4x2x2xf32>, tensor<4xf32>) -> tensor<1x4x3x6xf32>
  return %y : tensor<1x4x3x6xf32>
}

// -----

// A depthwise QDQ convolution has no matrix product for the 8-bit ukernel:
// it stays an f32 conv, on cast(q) (no zero point here), the input's scale
// in its weights: 0.02 * 0.5 = 0.01 (0x3C23D70A).
// CHECK-LABEL: func @qdq_depthwise
// CHECK-SAME: (%[[Q:.*]]: tensor<1x4x6x6xui8>)
// CHECK-NOT: kiln.conv_integer
// CHECK: kiln.constant dense<2.000000e-02>
// CHECK-NEXT: %[[F:.*]] = kiln.cast %[[Q]] : tensor<1x4x6x6xui8> -> tensor<1x4x6x6xf32>
// CHECK-NEXT: %[[W:.*]] = kiln.constant dense_resource<int8_dw_weight> : tensor<4x1x3x3xf32>
// CHECK: %[[Y:.*]] = kiln.conv %[[F]], %[[W]]
// CHECK: return %[[Y]]
// CHECK: int8_dw_weight: "0x040000000AD7233C0AD7233C
func.func @qdq_depthwise(%q: tensor<1x4x6x6xui8>) -> tensor<1x4x4x4xf32> {
  %f = kiln.cast %q : tensor<1x4x6x6xui8> -> tensor<1x4x6x6xf32>
  %s = kiln.constant dense<0.5> : tensor<f32>
  %a = kiln.mul %f, %s : tensor<1x4x6x6xf32>, tensor<f32>
  %w = kiln.constant dense<0.02> : tensor<4x1x3x3xf32>
  %y = kiln.conv %a, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 4 : i64} : (tensor<1x4x6x6xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x4x4xf32>
  return %y : tensor<1x4x4x4xf32>
}

// -----

// A product divided by a constant after a ReLU -- the next QuantizeLinear's
// scale -- takes the division into its column scales and bias: (acc * 0.5 *
// 0.01 + b) / 0.25 = acc * 0.02 + 4 b: column scales 0.02 and 0.01
// (0x3CA3D70A, 0x3C23D70A: column 1's weights are steps of 0.005), bias
// [0.5, -1] -> [2, -4] (0x40000000, 0xC0800000); relu(y) / c = relu(y / c).
// CHECK-LABEL: func @qdq_gemm_output_scale
// CHECK: %[[ACC:.*]] = kiln.matmul_integer
// CHECK: %[[F:.*]] = kiln.cast %[[ACC]]
// CHECK: %[[M:.*]] = kiln.mul %[[F]], %{{.*}}
// CHECK: %[[B:.*]] = kiln.add %[[M]], %{{.*}}
// CHECK: %[[R:.*]] = kiln.relu %[[B]]
// CHECK-NOT: kiln.div
// CHECK: return %[[R]]
// CHECK: int8_scale: "0x040000000AD7A33C0AD7233C"
// CHECK: int8_bias: "0x0400000000000040000080C0"
func.func @qdq_gemm_output_scale(%q: tensor<2x3xui8>) -> tensor<2x2xf32> {
  %f = kiln.cast %q : tensor<2x3xui8> -> tensor<2x3xf32>
  %z = kiln.constant dense<128.0> : tensor<f32>
  %s = kiln.constant dense<0.5> : tensor<f32>
  %c = kiln.sub %f, %z : tensor<2x3xf32>, tensor<f32>
  %a = kiln.mul %c, %s : tensor<2x3xf32>, tensor<f32>
  %w = kiln.constant dense<[[1.27, -0.5, 0.03], [0.02, -0.64, 0.1]]> : tensor<2x3xf32>
  %bias = kiln.constant dense<[0.5, -1.0]> : tensor<2xf32>
  %y = kiln.gemm %a, %w, %bias {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %r = kiln.relu %y : tensor<2x2xf32>
  %os = kiln.constant dense<0.25> : tensor<f32>
  %d = kiln.div %r, %os : tensor<2x2xf32>, tensor<f32>
  return %d : tensor<2x2xf32>
}

// -----

// A bias that is not a constant cannot take the output scale: the division
// stays.
// CHECK-LABEL: func @qdq_gemm_argument_bias
// CHECK: kiln.matmul_integer
// CHECK: %[[D:.*]] = kiln.div
// CHECK: return %[[D]]
func.func @qdq_gemm_argument_bias(%q: tensor<2x3xi8>, %bias: tensor<2xf32>) -> tensor<2x2xf32> {
  %f = kiln.cast %q : tensor<2x3xi8> -> tensor<2x3xf32>
  %s = kiln.constant dense<0.25> : tensor<f32>
  %a = kiln.mul %f, %s : tensor<2x3xf32>, tensor<f32>
  %w = kiln.constant dense<[[1.27, -0.5, 0.03], [0.02, -0.64, 0.1]]> : tensor<2x3xf32>
  %y = kiln.gemm %a, %w, %bias {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %os = kiln.constant dense<0.25> : tensor<f32>
  %d = kiln.div %y, %os : tensor<2x2xf32>, tensor<f32>
  return %d : tensor<2x2xf32>
}

// -----

// A depthwise conv of a dequantized input with a zero point, divided by the
// output scale: conv(cast(q) - 10, w * 0.5 / 2, b / 2) -- weights 0.25 ->
// 0.0625 (0x3D800000), bias [1, 3] -> [0.5, 1.5] (0x3F000000, 0x3FC00000).
// CHECK-LABEL: func @qdq_depthwise_output_scale
// CHECK-SAME: (%[[Q:.*]]: tensor<1x4x4x2xui8>)
// CHECK: kiln.constant dense<[1.000000e+00, 3.000000e+00]>
// CHECK-NEXT: %[[F:.*]] = kiln.cast %[[Q]]
// CHECK: %[[Z:.*]] = kiln.constant dense_resource<int8_zero> : tensor<f32>
// CHECK: %[[S:.*]] = kiln.sub %[[F]], %[[Z]]
// CHECK: %[[Y:.*]] = kiln.conv %[[S]], %{{.*}}, %{{.*}} {{{.*}}layout = #kiln.layout<nhwc>
// CHECK-NOT: kiln.div
// CHECK: return %[[Y]]
// CHECK: int8_zero: "0x0400000000002041"
// CHECK: int8_dw_weight: "0x040000000000803D0000803D
// CHECK: int8_bias: "0x040000000000003F0000C03F"
func.func @qdq_depthwise_output_scale(%q: tensor<1x4x4x2xui8>) -> tensor<1x4x4x2xf32> {
  %f = kiln.cast %q : tensor<1x4x4x2xui8> -> tensor<1x4x4x2xf32>
  %z = kiln.constant dense<10.0> : tensor<f32>
  %s = kiln.constant dense<0.5> : tensor<f32>
  %c = kiln.sub %f, %z : tensor<1x4x4x2xf32>, tensor<f32>
  %a = kiln.mul %c, %s : tensor<1x4x4x2xf32>, tensor<f32>
  %w = kiln.constant dense<0.25> : tensor<2x1x3x3xf32>
  %b = kiln.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %y = kiln.conv %a, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64, layout = #kiln.layout<nhwc>} : (tensor<1x4x4x2xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>
  %os = kiln.constant dense<2.0> : tensor<f32>
  %d = kiln.div %y, %os : tensor<1x4x4x2xf32>, tensor<f32>
  return %d : tensor<1x4x4x2xf32>
}

// -----

// Through a clip (ReLU6) the division goes into the conv's weights and bias
// and the clip's bounds: clip(y, 0, 6) / 2 = clip(y / 2, 0, 3).
// CHECK-LABEL: func @qdq_depthwise_clip_output_scale
// CHECK: %[[Y:.*]] = kiln.conv
// CHECK: %[[C:.*]] = kiln.clip %[[Y]] {max = 3.000000e+00 : f32, min = 0.000000e+00 : f32}
// CHECK-NOT: kiln.div
// CHECK: return %[[C]]
// CHECK: int8_dw_weight: "0x040000000000803D0000803D
func.func @qdq_depthwise_clip_output_scale(%q: tensor<1x4x4x2xui8>) -> tensor<1x4x4x2xf32> {
  %f = kiln.cast %q : tensor<1x4x4x2xui8> -> tensor<1x4x4x2xf32>
  %z = kiln.constant dense<10.0> : tensor<f32>
  %s = kiln.constant dense<0.5> : tensor<f32>
  %c = kiln.sub %f, %z : tensor<1x4x4x2xf32>, tensor<f32>
  %a = kiln.mul %c, %s : tensor<1x4x4x2xf32>, tensor<f32>
  %w = kiln.constant dense<0.25> : tensor<2x1x3x3xf32>
  %b = kiln.constant dense<[1.0, 3.0]> : tensor<2xf32>
  %y = kiln.conv %a, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64, layout = #kiln.layout<nhwc>} : (tensor<1x4x4x2xf32>, tensor<2x1x3x3xf32>, tensor<2xf32>) -> tensor<1x4x4x2xf32>
  %r = kiln.clip %y {min = 0.0 : f32, max = 6.0 : f32} : tensor<1x4x4x2xf32>
  %os = kiln.constant dense<2.0> : tensor<f32>
  %d = kiln.div %r, %os : tensor<1x4x4x2xf32>, tensor<f32>
  return %d : tensor<1x4x4x2xf32>
}

// -----

// A ReLU6 quantized over [0, 6] (scale 6 / 255 = 0.0235294, zero point 0):
// after the division's fold the clip's bounds are [0, 255], which the
// quantization's clamp covers, so the clip goes; the ReLU before a zero
// point of 10 clamps values the quantization keeps ([-10, 0) -> [0, 10)),
// so it stays.
// CHECK-LABEL: func @qdq_saturated_activation
// CHECK: kiln.matmul_integer
// CHECK-NOT: kiln.clip
// CHECK: kiln.round
// CHECK: kiln.matmul_integer
// CHECK: %[[R:.*]] = kiln.relu
// CHECK: kiln.round %[[R]]
func.func @qdq_saturated_activation(%q: tensor<2x3xui8>) -> (tensor<2x2xui8>, tensor<2x2xui8>) {
  %f = kiln.cast %q : tensor<2x3xui8> -> tensor<2x3xf32>
  %s = kiln.constant dense<0.5> : tensor<f32>
  %a = kiln.mul %f, %s : tensor<2x3xf32>, tensor<f32>
  %w = kiln.constant dense<[[1.27, -0.5, 0.03], [0.02, -0.64, 0.1]]> : tensor<2x3xf32>
  %y = kiln.gemm %a, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  %r = kiln.clip %y {min = 0.0 : f32, max = 6.0 : f32} : tensor<2x2xf32>
  %os = kiln.constant dense<0.0235294122> : tensor<f32>
  %lo = kiln.constant dense<0.0> : tensor<f32>
  %hi = kiln.constant dense<255.0> : tensor<f32>
  %z0 = kiln.constant dense<0.0> : tensor<f32>
  %d = kiln.div %r, %os : tensor<2x2xf32>, tensor<f32>
  %n = kiln.round %d : tensor<2x2xf32>
  %nz = kiln.add %n, %z0 : tensor<2x2xf32>, tensor<f32>
  %c0 = kiln.max %nz, %lo : tensor<2x2xf32>, tensor<f32>
  %c1 = kiln.min %c0, %hi : tensor<2x2xf32>, tensor<f32>
  %o = kiln.cast %c1 : tensor<2x2xf32> -> tensor<2x2xui8>
  %y2 = kiln.gemm %a, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  %r2 = kiln.relu %y2 : tensor<2x2xf32>
  %z10 = kiln.constant dense<10.0> : tensor<f32>
  %d2 = kiln.div %r2, %os : tensor<2x2xf32>, tensor<f32>
  %n2 = kiln.round %d2 : tensor<2x2xf32>
  %nz2 = kiln.add %n2, %z10 : tensor<2x2xf32>, tensor<f32>
  %c2 = kiln.max %nz2, %lo : tensor<2x2xf32>, tensor<f32>
  %c3 = kiln.min %c2, %hi : tensor<2x2xf32>, tensor<f32>
  %o2 = kiln.cast %c3 : tensor<2x2xf32> -> tensor<2x2xui8>
  return %o, %o2 : tensor<2x2xui8>, tensor<2x2xui8>
}

// -----

// A QDQ model quantizes a reshape's and a transpose's results again with
// the same scale and zero point: those quantizations give back the bytes,
// so the reshape and the transpose move the uint8 values themselves. A
// quantization with another scale stays.
// CHECK-LABEL: func @qdq_requantization
// CHECK-SAME: (%[[Q:.*]]: tensor<2x6xui8>)
// CHECK: %[[R:.*]] = kiln.reshape %[[Q]] : tensor<2x6xui8> -> tensor<2x3x2xui8>
// CHECK: %[[T:.*]] = kiln.transpose %[[R]] {perm = array<i64: 0, 2, 1>} : tensor<2x3x2xui8> -> tensor<2x2x3xui8>
// CHECK: %[[F:.*]] = kiln.cast %[[T]] : tensor<2x2x3xui8> -> tensor<2x2x3xf32>
// CHECK: %[[S:.*]] = kiln.sub %[[F]]
// CHECK: %[[D:.*]] = kiln.mul %[[S]]
// CHECK: kiln.div %[[D]], %{{.*}} : tensor<2x2x3xf32>, tensor<f32>
func.func @qdq_requantization(%q: tensor<2x6xui8>) -> (tensor<2x2x3xui8>, tensor<2x2x3xui8>) {
  %s = kiln.constant dense<0.5> : tensor<f32>
  %z = kiln.constant dense<3.0> : tensor<f32>
  %lo = kiln.constant dense<0.0> : tensor<f32>
  %hi = kiln.constant dense<255.0> : tensor<f32>
  %f = kiln.cast %q : tensor<2x6xui8> -> tensor<2x6xf32>
  %c = kiln.sub %f, %z : tensor<2x6xf32>, tensor<f32>
  %a = kiln.mul %c, %s : tensor<2x6xf32>, tensor<f32>
  %r = kiln.reshape %a : tensor<2x6xf32> -> tensor<2x3x2xf32>
  %d1 = kiln.div %r, %s : tensor<2x3x2xf32>, tensor<f32>
  %n1 = kiln.round %d1 : tensor<2x3x2xf32>
  %z1 = kiln.add %n1, %z : tensor<2x3x2xf32>, tensor<f32>
  %l1 = kiln.max %z1, %lo : tensor<2x3x2xf32>, tensor<f32>
  %h1 = kiln.min %l1, %hi : tensor<2x3x2xf32>, tensor<f32>
  %q1 = kiln.cast %h1 : tensor<2x3x2xf32> -> tensor<2x3x2xui8>
  %f1 = kiln.cast %q1 : tensor<2x3x2xui8> -> tensor<2x3x2xf32>
  %c1 = kiln.sub %f1, %z : tensor<2x3x2xf32>, tensor<f32>
  %a1 = kiln.mul %c1, %s : tensor<2x3x2xf32>, tensor<f32>
  %t = kiln.transpose %a1 {perm = array<i64: 0, 2, 1>} : tensor<2x3x2xf32> -> tensor<2x2x3xf32>
  %d2 = kiln.div %t, %s : tensor<2x2x3xf32>, tensor<f32>
  %n2 = kiln.round %d2 : tensor<2x2x3xf32>
  %z2 = kiln.add %n2, %z : tensor<2x2x3xf32>, tensor<f32>
  %l2 = kiln.max %z2, %lo : tensor<2x2x3xf32>, tensor<f32>
  %h2 = kiln.min %l2, %hi : tensor<2x2x3xf32>, tensor<f32>
  %q2 = kiln.cast %h2 : tensor<2x2x3xf32> -> tensor<2x2x3xui8>
  %f2 = kiln.cast %q2 : tensor<2x2x3xui8> -> tensor<2x2x3xf32>
  %c2 = kiln.sub %f2, %z : tensor<2x2x3xf32>, tensor<f32>
  %a2 = kiln.mul %c2, %s : tensor<2x2x3xf32>, tensor<f32>
  %s4 = kiln.constant dense<0.25> : tensor<f32>
  %d3 = kiln.div %a2, %s4 : tensor<2x2x3xf32>, tensor<f32>
  %n3 = kiln.round %d3 : tensor<2x2x3xf32>
  %z3 = kiln.add %n3, %z : tensor<2x2x3xf32>, tensor<f32>
  %l3 = kiln.max %z3, %lo : tensor<2x2x3xf32>, tensor<f32>
  %h3 = kiln.min %l3, %hi : tensor<2x2x3xf32>, tensor<f32>
  %q3 = kiln.cast %h3 : tensor<2x2x3xf32> -> tensor<2x2x3xui8>
  return %q2, %q3 : tensor<2x2x3xui8>, tensor<2x2x3xui8>
}

// -----

// A quantization whose bytes are only dequantized again (zero point 3,
// scale 0.25) stays in f32: clamp(round(x / 0.25), 0 - 3, 255 - 3) * 0.25
// (-3 = 0xC0400000, 252 = 0x437C0000). Bytes that something else reads
// (the second quantization's, scale 0.5, returned) keep the byte form.
// CHECK-LABEL: func @qdq_fake_quantize
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>)
// CHECK: %[[M:.*]] = kiln.div %[[X]], %{{.*}} : tensor<8xf32>, tensor<f32>
// CHECK-NEXT: %[[R:.*]] = kiln.round %[[M]]
// CHECK: %[[FMIN:.*]] = kiln.constant dense_resource<int8_fake_min>
// CHECK-NEXT: %[[LO:.*]] = kiln.max %[[R]], %[[FMIN]]
// CHECK-NEXT: %[[FMAX:.*]] = kiln.constant dense_resource<int8_fake_max>
// CHECK-NEXT: %[[HI:.*]] = kiln.min %[[LO]], %[[FMAX]]
// CHECK-NEXT: %[[FS:.*]] = kiln.constant dense_resource<int8_fake_scale>
// CHECK-NEXT: %[[Y:.*]] = kiln.mul %[[HI]], %[[FS]]
// CHECK: %[[M2:.*]] = kiln.div %[[Y]], %{{.*}}
// CHECK: %[[R2:.*]] = kiln.round %[[M2]]
// CHECK: %[[Q2:.*]] = kiln.cast %{{.*}} : tensor<8xf32> -> tensor<8xui8>
// CHECK: return %[[Y]], %[[Q2]] : tensor<8xf32>, tensor<8xui8>
// CHECK: int8_fake_min: "0x040000000000{{40C0}}"
// CHECK: int8_fake_max: "0x0400000000007C43"
func.func @qdq_fake_quantize(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xui8>) {
  %s = kiln.constant dense<0.25> : tensor<f32>
  %z = kiln.constant dense<3.0> : tensor<f32>
  %lo = kiln.constant dense<0.0> : tensor<f32>
  %hi = kiln.constant dense<255.0> : tensor<f32>
  %d = kiln.div %x, %s : tensor<8xf32>, tensor<f32>
  %n = kiln.round %d : tensor<8xf32>
  %a = kiln.add %n, %z : tensor<8xf32>, tensor<f32>
  %l = kiln.max %a, %lo : tensor<8xf32>, tensor<f32>
  %h = kiln.min %l, %hi : tensor<8xf32>, tensor<f32>
  %q = kiln.cast %h : tensor<8xf32> -> tensor<8xui8>
  %f = kiln.cast %q : tensor<8xui8> -> tensor<8xf32>
  %c = kiln.sub %f, %z : tensor<8xf32>, tensor<f32>
  %y = kiln.mul %c, %s : tensor<8xf32>, tensor<f32>
  %s2 = kiln.constant dense<0.5> : tensor<f32>
  %d2 = kiln.div %y, %s2 : tensor<8xf32>, tensor<f32>
  %n2 = kiln.round %d2 : tensor<8xf32>
  %a2 = kiln.add %n2, %z : tensor<8xf32>, tensor<f32>
  %l2 = kiln.max %a2, %lo : tensor<8xf32>, tensor<f32>
  %h2 = kiln.min %l2, %hi : tensor<8xf32>, tensor<f32>
  %q2 = kiln.cast %h2 : tensor<8xf32> -> tensor<8xui8>
  return %y, %q2 : tensor<8xf32>, tensor<8xui8>
}

// -----

// A product's ReLU quantized with zero point 0 and dequantized for an f32
// reader (a pool): the division goes into the product's scales, the round
// trip stays in f32, and the ReLU goes (the clamp at 0 does its work).
// CHECK-LABEL: func @qdq_relu_round_trip
// CHECK: kiln.matmul_integer
// CHECK-NOT: kiln.relu
// CHECK-NOT: kiln.cast %{{.*}} -> tensor<2x2xui8>
// CHECK: %[[R:.*]] = kiln.round
// CHECK: %[[FMIN:.*]] = kiln.constant dense_resource<int8_fake_min>
// CHECK-NEXT: kiln.max %[[R]], %[[FMIN]]
// CHECK: %[[Y:.*]] = kiln.mul %{{.*}}, %{{.*}} : tensor<2x2xf32>, tensor<f32>
// CHECK-NOT: kiln.relu
// CHECK: return %[[Y]]
func.func @qdq_relu_round_trip(%q: tensor<2x3xui8>) -> tensor<2x2xf32> {
  %f = kiln.cast %q : tensor<2x3xui8> -> tensor<2x3xf32>
  %s = kiln.constant dense<0.5> : tensor<f32>
  %a = kiln.mul %f, %s : tensor<2x3xf32>, tensor<f32>
  %w = kiln.constant dense<[[1.27, -0.5, 0.03], [0.02, -0.64, 0.1]]> : tensor<2x3xf32>
  %y = kiln.gemm %a, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
  %r = kiln.relu %y : tensor<2x2xf32>
  %os = kiln.constant dense<0.125> : tensor<f32>
  %z = kiln.constant dense<0.0> : tensor<f32>
  %hi = kiln.constant dense<255.0> : tensor<f32>
  %d = kiln.div %r, %os : tensor<2x2xf32>, tensor<f32>
  %n = kiln.round %d : tensor<2x2xf32>
  %nz = kiln.add %n, %z : tensor<2x2xf32>, tensor<f32>
  %c0 = kiln.max %nz, %z : tensor<2x2xf32>, tensor<f32>
  %c1 = kiln.min %c0, %hi : tensor<2x2xf32>, tensor<f32>
  %o = kiln.cast %c1 : tensor<2x2xf32> -> tensor<2x2xui8>
  %b = kiln.cast %o : tensor<2x2xui8> -> tensor<2x2xf32>
  %bz = kiln.sub %b, %z : tensor<2x2xf32>, tensor<f32>
  %dq = kiln.mul %bz, %os : tensor<2x2xf32>, tensor<f32>
  return %dq : tensor<2x2xf32>
}

// -----

// A QDQ Add's requantization (a residual of two dequantized activations,
// through a ReLU): ((a - 3) * 0.5 + (b - 7) * 0.25) / 0.125, rounded, is
// relu((a - 3) * 4 + (b - 7) * 2) rounded (4 = 0x40800000, 2 = 0x40000000).
// CHECK-LABEL: func @qdq_add_output_scale
// CHECK: %[[A:.*]] = kiln.mul %{{.*}}, %{{.*}} : tensor<2x4xf32>, tensor<f32>
// CHECK: %[[B:.*]] = kiln.mul %{{.*}}, %{{.*}} : tensor<2x4xf32>, tensor<f32>
// CHECK: %[[S:.*]] = kiln.add %[[A]], %[[B]]
// CHECK: %[[R:.*]] = kiln.relu %[[S]]
// CHECK-NOT: kiln.div
// CHECK: %[[Y:.*]] = kiln.round %[[R]]
// CHECK: return %[[Y]]
// CHECK: int8_scale: "0x0400000000008040"
// CHECK: int8_scale{{.*}}: "0x0400000000000040"
func.func @qdq_add_output_scale(%a: tensor<2x4xui8>, %b: tensor<2x4xui8>) -> tensor<2x4xf32> {
  %fa = kiln.cast %a : tensor<2x4xui8> -> tensor<2x4xf32>
  %fb = kiln.cast %b : tensor<2x4xui8> -> tensor<2x4xf32>
  %za = kiln.constant dense<3.0> : tensor<f32>
  %zb = kiln.constant dense<7.0> : tensor<f32>
  %sa = kiln.constant dense<0.5> : tensor<f32>
  %sb = kiln.constant dense<0.25> : tensor<f32>
  %ca = kiln.sub %fa, %za : tensor<2x4xf32>, tensor<f32>
  %cb = kiln.sub %fb, %zb : tensor<2x4xf32>, tensor<f32>
  %da = kiln.mul %ca, %sa : tensor<2x4xf32>, tensor<f32>
  %db = kiln.mul %cb, %sb : tensor<2x4xf32>, tensor<f32>
  %s = kiln.add %da, %db : tensor<2x4xf32>, tensor<2x4xf32>
  %r = kiln.relu %s : tensor<2x4xf32>
  %c = kiln.constant dense<0.125> : tensor<f32>
  %d = kiln.div %r, %c : tensor<2x4xf32>, tensor<f32>
  %y = kiln.round %d : tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// A division that no rounding follows is not a quantization: it stays.
// CHECK-LABEL: func @sum_division_kept
// CHECK: kiln.div
func.func @sum_division_kept(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %sa = kiln.constant dense<0.5> : tensor<f32>
  %da = kiln.mul %a, %sa : tensor<4xf32>, tensor<f32>
  %db = kiln.mul %b, %sa : tensor<4xf32>, tensor<f32>
  %s = kiln.add %da, %db : tensor<4xf32>, tensor<4xf32>
  %c = kiln.constant dense<0.125> : tensor<f32>
  %d = kiln.div %s, %c : tensor<4xf32>, tensor<f32>
  return %d : tensor<4xf32>
}
