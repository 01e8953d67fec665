// RUN: kiln-opt --split-input-file --kiln-fold-batchnorm %s | FileCheck %s

// A batch norm after a convolution with constant weights folds into new
// weights and bias: a = scale / sqrt(var + eps) = 2 / sqrt(3 + 1) = 1,
// w' = w * a, b' = (b - mean) * a + shift = (1 - 4) * 1 + 5 = 2 for channel 0;
// channel 1: a = 4 / sqrt(15 + 1) = 1, b' = (2 - 1) * 1 + 0 = 1.
// CHECK-LABEL: func @conv_bn
// CHECK-DAG: %[[W:.*]] = kiln.constant dense_resource<conv_weight.bn> : tensor<2x1x1x1xf32>
// CHECK-DAG: %[[B:.*]] = kiln.constant dense_resource<conv_weight.bn_bias> : tensor<2xf32>
// CHECK: %[[C:.*]] = kiln.conv %arg0, %[[W]], %[[B]]
// CHECK-NOT: kiln.batch_norm
// CHECK: return %[[C]]
// CHECK: conv_weight.bn: "0x040000000000C0400000E040"
// CHECK: conv_weight.bn_bias: "0x04000000000000400000803F"
func.func @conv_bn(%x: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %w = kiln.constant dense<[[[[6.0]]], [[[7.0]]]]> : tensor<2x1x1x1xf32>
  %b = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %s = kiln.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %t = kiln.constant dense<[5.0, 0.0]> : tensor<2xf32>
  %m = kiln.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %v = kiln.constant dense<[3.0, 15.0]> : tensor<2xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %y = kiln.batch_norm %c, %s, %t, %m, %v {epsilon = 1.0 : f32} : tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// -----

// A convolution whose result is also used elsewhere keeps its weights; the
// batch norm becomes a per-channel multiply-add (a = 1 / sqrt(1 + 1e-5),
// b' = 1 - a).
// CHECK-LABEL: func @conv_two_uses
// CHECK: %[[C:.*]] = kiln.conv %arg0
// CHECK-DAG: %[[A:.*]] = kiln.constant dense_resource<{{.*}}.bn_scale> : tensor<2x1x1xf32>
// CHECK-DAG: %[[B:.*]] = kiln.constant dense_resource<{{.*}}.bn_shift> : tensor<2x1x1xf32>
// CHECK-NOT: kiln.batch_norm
// CHECK: %[[M:.*]] = kiln.mul %[[C]], %[[A]]
// CHECK: %[[Y:.*]] = kiln.add %[[M]], %[[B]]
// CHECK: return %[[Y]], %[[C]]
func.func @conv_two_uses(%x: tensor<1x1x2x2xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %w = kiln.constant dense<1.0> : tensor<2x1x1x1xf32>
  %p = kiln.constant dense<1.0> : tensor<2xf32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %y = kiln.batch_norm %c, %p, %p, %p, %p {epsilon = 1.0e-05 : f32} : tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  return %y, %c : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}

// -----

// Weights known only at run time: the batch norm stays outside the
// convolution, as a multiply-add.
// CHECK-LABEL: func @runtime_weights
// CHECK: %[[C:.*]] = kiln.conv %arg0, %arg1
// CHECK: %[[M:.*]] = kiln.mul %[[C]]
// CHECK-NEXT: kiln.add %[[M]]
// CHECK-NOT: kiln.batch_norm
func.func @runtime_weights(%x: tensor<1x1x2x2xf32>, %w: tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32> {
  %p = kiln.constant dense<1.0> : tensor<2xf32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %y = kiln.batch_norm %c, %p, %p, %p, %p {epsilon = 1.0e-05 : f32} : tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  return %y : tensor<1x2x2x2xf32>
}

// -----

// An f16 conv folds into f16 weights and bias (computed in float, rounded
// to nearest even): w' = w * 2 / sqrt(3 + 1) = w, b' = (0 - 4) * 1 + 5 = 1.
// CHECK-LABEL: func @f16_conv
// CHECK-DAG: %[[W:.*]] = kiln.constant dense_resource<{{.*}}.bn> : tensor<2x1x1x1xf16>
// CHECK-DAG: %[[B:.*]] = kiln.constant dense_resource<{{.*}}.bn_bias> : tensor<2xf16>
// CHECK: kiln.conv %arg0, %[[W]], %[[B]]
// CHECK-NOT: kiln.batch_norm
// CHECK: conv_weight.bn: "0x02000000003E00B4"
// CHECK: conv_weight.bn_bias: "0x02000000003C003C"
func.func @f16_conv(%x: tensor<1x1x4x4xf16>) -> tensor<1x2x4x4xf16> {
  %w = kiln.constant dense<[[[[1.5]]], [[[-0.25]]]]> : tensor<2x1x1x1xf16>
  %s = kiln.constant dense<2.0> : tensor<2xf16>
  %b = kiln.constant dense<5.0> : tensor<2xf16>
  %m = kiln.constant dense<4.0> : tensor<2xf16>
  %v = kiln.constant dense<3.0> : tensor<2xf16>
  %c = kiln.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x4x4xf16>, tensor<2x1x1x1xf16>) -> tensor<1x2x4x4xf16>
  %y = kiln.batch_norm %c, %s, %b, %m, %v {epsilon = 1.0 : f32} : tensor<1x2x4x4xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>
  return %y : tensor<1x2x4x4xf16>
}

// -----

// A pre-activation batch norm (after a pool, before the ReLU and the next
// conv) becomes x * a + b' with a = scale / sqrt(var + eps), b' = shift -
// mean * a, shaped [C, 1, 1]: channel 0: a = 2 / sqrt(3 + 1) = 1, b' = 5 - 4
// = 1; channel 1: a = 4 / sqrt(15 + 1) = 1, b' = 0 - 1 = -1.
// CHECK-LABEL: func @pool_bn
// CHECK: %[[P:.*]] = kiln.max_pool
// CHECK-DAG: %[[A:.*]] = kiln.constant dense_resource<{{.*}}.bn_scale> : tensor<2x1x1xf32>
// CHECK-DAG: %[[B:.*]] = kiln.constant dense_resource<{{.*}}.bn_shift> : tensor<2x1x1xf32>
// CHECK: %[[M:.*]] = kiln.mul %[[P]], %[[A]] : tensor<1x2x2x2xf32>, tensor<2x1x1xf32>
// CHECK-NEXT: %[[Y:.*]] = kiln.add %[[M]], %[[B]]
// CHECK-NEXT: kiln.relu %[[Y]]
// CHECK: bn_scale: "0x040000000000803F0000803F"
// CHECK: bn_shift: "0x040000000000803F000080BF"
func.func @pool_bn(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %s = kiln.constant dense<[2.0, 4.0]> : tensor<2xf32>
  %t = kiln.constant dense<[5.0, 0.0]> : tensor<2xf32>
  %m = kiln.constant dense<[4.0, 1.0]> : tensor<2xf32>
  %v = kiln.constant dense<[3.0, 15.0]> : tensor<2xf32>
  %p = kiln.max_pool %x {ceil_mode = false, count_include_pad = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : tensor<1x2x4x4xf32> -> tensor<1x2x2x2xf32>
  %n = kiln.batch_norm %p, %s, %t, %m, %v {epsilon = 1.0 : f32} : tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  %r = kiln.relu %n : tensor<1x2x2x2xf32>
  return %r : tensor<1x2x2x2xf32>
}

// -----

// A rank-2 batch norm ([N, C]) broadcasts constants of shape [C]; an f16
// one, or one whose parameters are inputs, stays a batch norm.
// CHECK-LABEL: func @rank2_f16_inputs
// CHECK: kiln.mul %arg0, %{{.*}} : tensor<3x2xf32>, tensor<2xf32>
// CHECK: kiln.add
// CHECK: kiln.batch_norm %arg1
// CHECK: kiln.batch_norm %arg0, %arg2
func.func @rank2_f16_inputs(%x: tensor<3x2xf32>, %h: tensor<1x2x2x2xf16>, %s: tensor<2xf32>) -> (tensor<3x2xf32>, tensor<1x2x2x2xf16>, tensor<3x2xf32>) {
  %p = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %q = kiln.constant dense<[1.0, 2.0]> : tensor<2xf16>
  %y = kiln.batch_norm %x, %p, %p, %p, %p {epsilon = 1.0e-05 : f32} : tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  %z = kiln.batch_norm %h, %q, %q, %q, %q {epsilon = 1.0e-05 : f32} : tensor<1x2x2x2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>, tensor<2xf16>
  %w = kiln.batch_norm %x, %s, %p, %p, %p {epsilon = 1.0e-05 : f32} : tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  return %y, %z, %w : tensor<3x2xf32>, tensor<1x2x2x2xf16>, tensor<3x2xf32>
}
