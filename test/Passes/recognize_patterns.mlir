// RUN: kiln-opt --split-input-file --kiln-recognize-patterns %s | FileCheck %s

// LayerNorm as torch.onnx exports it below opset 17, with the affine part.
// CHECK-LABEL: func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x8xf32>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[Y:.*]] = kiln.layer_norm %[[X]], %[[G]], %[[B]] {axis = 2 : i64, epsilon = 9.99999974E-6 : f32} : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @layer_norm(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %two = kiln.constant dense<2.0> : tensor<f32>
  %eps = kiln.constant dense<1.0e-5> : tensor<f32>
  %m = kiln.reduce_mean %x {axes = array<i64: 2>, keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %d = kiln.sub %x, %m : tensor<2x4x8xf32>, tensor<2x4x1xf32>
  %sq = kiln.pow %d, %two : tensor<2x4x8xf32>, tensor<f32>
  %v = kiln.reduce_mean %sq {axes = array<i64: 2>, keepdims = true} : tensor<2x4x8xf32> -> tensor<2x4x1xf32>
  %ve = kiln.add %v, %eps : tensor<2x4x1xf32>, tensor<f32>
  %s = kiln.sqrt %ve : tensor<2x4x1xf32>
  %n = kiln.div %d, %s : tensor<2x4x8xf32>, tensor<2x4x1xf32>
  %sc = kiln.mul %n, %g : tensor<2x4x8xf32>, tensor<8xf32>
  %y = kiln.add %sc, %b : tensor<2x4x8xf32>, tensor<8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// Without the affine part, over the two last axes, with d * d: the scale is
// a constant 1.
// CHECK-LABEL: func @layer_norm_two_axes
// CHECK: %[[ONE:.*]] = kiln.constant dense_resource<layer_norm_unit_scale> : tensor<1xf32>
// CHECK: kiln.layer_norm %arg0, %[[ONE]] {axis = 1 : i64, epsilon = 1.000000e-03 : f32} : tensor<2x4x8xf32>, tensor<1xf32>
// CHECK-NOT: kiln.reduce_mean
func.func @layer_norm_two_axes(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %eps = kiln.constant dense<1.0e-3> : tensor<1xf32>
  %m = kiln.reduce_mean %x {axes = array<i64: 1, 2>, keepdims = true} : tensor<2x4x8xf32> -> tensor<2x1x1xf32>
  %d = kiln.sub %x, %m : tensor<2x4x8xf32>, tensor<2x1x1xf32>
  %sq = kiln.mul %d, %d : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %v = kiln.reduce_mean %sq {axes = array<i64: 1, 2>, keepdims = true} : tensor<2x4x8xf32> -> tensor<2x1x1xf32>
  %ve = kiln.add %eps, %v : tensor<1xf32>, tensor<2x1x1xf32>
  %s = kiln.sqrt %ve : tensor<2x1x1xf32>
  %n = kiln.div %d, %s : tensor<2x4x8xf32>, tensor<2x1x1xf32>
  return %n : tensor<2x4x8xf32>
}

// -----

// Not a LayerNorm: the mean runs over a leading axis.
// CHECK-LABEL: func @not_layer_norm
// CHECK-NOT: kiln.layer_norm
func.func @not_layer_norm(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %eps = kiln.constant dense<1.0e-3> : tensor<f32>
  %m = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<2x4x8xf32> -> tensor<2x1x8xf32>
  %d = kiln.sub %x, %m : tensor<2x4x8xf32>, tensor<2x1x8xf32>
  %sq = kiln.mul %d, %d : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  %v = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<2x4x8xf32> -> tensor<2x1x8xf32>
  %ve = kiln.add %v, %eps : tensor<2x1x8xf32>, tensor<f32>
  %s = kiln.sqrt %ve : tensor<2x1x8xf32>
  %n = kiln.div %d, %s : tensor<2x4x8xf32>, tensor<2x1x8xf32>
  return %n : tensor<2x4x8xf32>
}

// -----

// GELU, erf form: x * 0.5 first, then * (1 + erf(x / sqrt 2)).
// CHECK-LABEL: func @gelu_erf
// CHECK-NEXT: %[[Y:.*]] = kiln.gelu %arg0 {approximate = false} : tensor<4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_erf(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = kiln.constant dense<0.5> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %r2 = kiln.constant dense<1.41421354> : tensor<f32>
  %h = kiln.mul %x, %half : tensor<4x8xf32>, tensor<f32>
  %d = kiln.div %x, %r2 : tensor<4x8xf32>, tensor<f32>
  %e = kiln.erf %d : tensor<4x8xf32>
  %p = kiln.add %one, %e : tensor<f32>, tensor<4x8xf32>
  %y = kiln.mul %h, %p : tensor<4x8xf32>, tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// GELU, tanh form (GPT-2's gelu_new), x^3 as x * x * x.
// CHECK-LABEL: func @gelu_tanh
// CHECK-NEXT: %[[Y:.*]] = kiln.gelu %arg0 {approximate = true} : tensor<4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gelu_tanh(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = kiln.constant dense<0.5> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %c = kiln.constant dense<0.044715> : tensor<f32>
  %k = kiln.constant dense<0.797884583> : tensor<f32>
  %x2 = kiln.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32>
  %x3 = kiln.mul %x2, %x : tensor<4x8xf32>, tensor<4x8xf32>
  %cx3 = kiln.mul %x3, %c : tensor<4x8xf32>, tensor<f32>
  %in = kiln.add %x, %cx3 : tensor<4x8xf32>, tensor<4x8xf32>
  %kin = kiln.mul %k, %in : tensor<f32>, tensor<4x8xf32>
  %t = kiln.tanh %kin : tensor<4x8xf32>
  %p = kiln.add %t, %one : tensor<4x8xf32>, tensor<f32>
  %xp = kiln.mul %x, %p : tensor<4x8xf32>, tensor<4x8xf32>
  %y = kiln.mul %xp, %half : tensor<4x8xf32>, tensor<f32>
  return %y : tensor<4x8xf32>
}

// -----

// Not GELU: the constant is 0.6, not 0.5.
// CHECK-LABEL: func @not_gelu
// CHECK-NOT: kiln.gelu
// CHECK: kiln.erf
func.func @not_gelu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = kiln.constant dense<0.6> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %r2 = kiln.constant dense<1.41421354> : tensor<f32>
  %h = kiln.mul %x, %half : tensor<4x8xf32>, tensor<f32>
  %d = kiln.div %x, %r2 : tensor<4x8xf32>, tensor<f32>
  %e = kiln.erf %d : tensor<4x8xf32>
  %p = kiln.add %one, %e : tensor<f32>, tensor<4x8xf32>
  %y = kiln.mul %h, %p : tensor<4x8xf32>, tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func @silu
// CHECK-NEXT: %[[Y:.*]] = kiln.silu %arg0 : tensor<4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @silu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = kiln.sigmoid %x : tensor<4x8xf32>
  %y = kiln.mul %s, %x : tensor<4x8xf32>, tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// The sigmoid has another user: it stays, and so does the mul.
// CHECK-LABEL: func @silu_shared
// CHECK-NOT: kiln.silu
func.func @silu_shared(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = kiln.sigmoid %x : tensor<4x8xf32>
  %y = kiln.mul %s, %x : tensor<4x8xf32>, tensor<4x8xf32>
  return %y, %s : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// MobileNetV3's hard swish as x * relu6(x + 3) / 6, and a hard sigmoid as
// relu6(x + 3) / 6.
// CHECK-LABEL: func @hard_swish
// CHECK-NEXT: %[[S:.*]] = kiln.hard_swish %arg0 : tensor<4x8xf32>
// CHECK-NEXT: %[[G:.*]] = kiln.hard_sigmoid %arg1 {alpha = 0.166666672 : f32, beta = 5.000000e-01 : f32} : tensor<4x8xf32>
// CHECK-NEXT: return %[[S]], %[[G]]
func.func @hard_swish(%x: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %three = kiln.constant dense<3.0> : tensor<f32>
  %six = kiln.constant dense<6.0> : tensor<f32>
  %a = kiln.add %x, %three : tensor<4x8xf32>, tensor<f32>
  %c = kiln.clip %a {min = 0.0 : f32, max = 6.0 : f32} : tensor<4x8xf32>
  %m = kiln.mul %x, %c : tensor<4x8xf32>, tensor<4x8xf32>
  %y = kiln.div %m, %six : tensor<4x8xf32>, tensor<f32>
  %a2 = kiln.add %three, %z : tensor<f32>, tensor<4x8xf32>
  %c2 = kiln.clip %a2 {min = 0.0 : f32, max = 6.0 : f32} : tensor<4x8xf32>
  %g = kiln.div %c2, %six : tensor<4x8xf32>, tensor<f32>
  return %y, %g : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// x * hard_sigmoid(x) with the PyTorch constants is a hard swish.
// CHECK-LABEL: func @hard_swish_from_hard_sigmoid
// CHECK-NEXT: kiln.hard_swish %arg0
func.func @hard_swish_from_hard_sigmoid(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %g = kiln.hard_sigmoid %x {alpha = 0.166666672 : f32, beta = 0.5 : f32} : tensor<4x8xf32>
  %y = kiln.mul %x, %g : tensor<4x8xf32>, tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func @softmax
// CHECK-NEXT: %[[Y:.*]] = kiln.softmax %arg0 {axis = 1 : i64} : tensor<4x8xf32>
// CHECK-NEXT: return %[[Y]]
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = kiln.reduce_max %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %d = kiln.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32>
  %e = kiln.exp %d : tensor<4x8xf32>
  %s = kiln.reduce_sum %e {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %y = kiln.div %e, %s : tensor<4x8xf32>, tensor<4x1xf32>
  return %y : tensor<4x8xf32>
}

// -----

// BERT's attention: K^T from a transpose, scores / sqrt(d), an additive
// mask; the transpose the op needs cancels the exporter's.
// CHECK-LABEL: func @attention
// CHECK-SAME: (%[[Q:.*]]: tensor<1x2x16x8xf32>, %[[K:.*]]: tensor<1x2x16x8xf32>, %[[V:.*]]: tensor<1x2x16x8xf32>, %[[M:.*]]: tensor<1x1x1x16xf32>)
// CHECK-NEXT: %[[O:.*]] = kiln.attention %[[Q]], %[[K]], %[[V]], %[[M]] {scale = 0.353553385 : f32} : tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x1x1x16xf32> -> tensor<1x2x16x8xf32>
// CHECK-NEXT: return %[[O]]
func.func @attention(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %mask: tensor<1x1x1x16xf32>) -> tensor<1x2x16x8xf32> {
  %c = kiln.constant dense<2.82842708> : tensor<f32>
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x16x8xf32> -> tensor<1x2x8x16xf32>
  %s = kiln.matmul %q, %kt : tensor<1x2x16x8xf32>, tensor<1x2x8x16xf32>
  %sc = kiln.div %s, %c : tensor<1x2x16x16xf32>, tensor<f32>
  %sm = kiln.add %sc, %mask : tensor<1x2x16x16xf32>, tensor<1x1x1x16xf32>
  %p = kiln.softmax %sm {axis = 3 : i64} : tensor<1x2x16x16xf32>
  %o = kiln.matmul %p, %v : tensor<1x2x16x16xf32>, tensor<1x2x16x8xf32>
  return %o : tensor<1x2x16x8xf32>
}

// -----

// K^T given directly (no transpose): the op gets a transpose of it; Q
// scaled before the product; no mask.
// CHECK-LABEL: func @attention_kt
// CHECK: %[[K:.*]] = kiln.transpose %arg1 {perm = array<i64: 0, 2, 1>} : tensor<3x8x10xf32> -> tensor<3x10x8xf32>
// CHECK-NEXT: kiln.attention %arg0, %[[K]], %arg2 {scale = 5.000000e-01 : f32} : tensor<3x5x8xf32>, tensor<3x10x8xf32>, tensor<3x10x4xf32> -> tensor<3x5x4xf32>
func.func @attention_kt(%q: tensor<3x5x8xf32>, %kt: tensor<3x8x10xf32>, %v: tensor<3x10x4xf32>) -> tensor<3x5x4xf32> {
  %c = kiln.constant dense<0.5> : tensor<f32>
  %qs = kiln.mul %q, %c : tensor<3x5x8xf32>, tensor<f32>
  %s = kiln.matmul %qs, %kt : tensor<3x5x8xf32>, tensor<3x8x10xf32>
  %p = kiln.softmax %s {axis = 2 : i64} : tensor<3x5x10xf32>
  %o = kiln.matmul %p, %v : tensor<3x5x10xf32>, tensor<3x10x4xf32>
  return %o : tensor<3x5x4xf32>
}

// -----

// The probabilities are an output too: no attention op (they would be lost).
// CHECK-LABEL: func @attention_probs_used
// CHECK-NOT: kiln.attention
func.func @attention_probs_used(%q: tensor<3x5x8xf32>, %kt: tensor<3x8x10xf32>, %v: tensor<3x10x4xf32>) -> (tensor<3x5x4xf32>, tensor<3x5x10xf32>) {
  %s = kiln.matmul %q, %kt : tensor<3x5x8xf32>, tensor<3x8x10xf32>
  %p = kiln.softmax %s {axis = 2 : i64} : tensor<3x5x10xf32>
  %o = kiln.matmul %p, %v : tensor<3x5x10xf32>, tensor<3x10x4xf32>
  return %o, %p : tensor<3x5x4xf32>, tensor<3x5x10xf32>
}

// -----

// Plain clips and scales stay as they are.
// CHECK-LABEL: func @plain_clip
// CHECK: kiln.clip
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.clip
func.func @plain_clip(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %k = kiln.constant dense<0.25> : tensor<f32>
  %c = kiln.clip %x {min = -1.0 : f32, max = 1.0 : f32} : tensor<4x8xf32>
  %m = kiln.mul %c, %k : tensor<4x8xf32>, tensor<f32>
  %y = kiln.clip %m {min = 0.0 : f32, max = 1.0 : f32} : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// A causal mask through Where (constant condition, fill -inf or float32's
// lowest): an additive mask of 0 and the fill, then one attention op.
// CHECK-LABEL: func @attention_where_mask
// CHECK: %[[M:.*]] = kiln.constant dense_resource<where_mask> : tensor<1x1x4x4xf32>
// CHECK: kiln.attention %arg0, %{{.*}}, %arg2, %[[M]] {scale = 5.000000e-01 : f32}
// CHECK-NOT: kiln.where
// CHECK: where_mask: "0x0400000000000000FFFF7FFFFFFF7FFFFFFF7FFF00000000000000
func.func @attention_where_mask(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  %c = kiln.constant dense<[[[[1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]]]]> : tensor<1x1x4x4xf32>
  %fill = kiln.constant dense<-3.40282347E+38> : tensor<f32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %kt = kiln.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x4x8xf32> -> tensor<1x2x8x4xf32>
  %s = kiln.matmul %q, %kt : tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>
  %ss = kiln.mul %s, %half : tensor<1x2x4x4xf32>, tensor<f32>
  %w = kiln.where %c, %ss, %fill : tensor<1x1x4x4xf32>, tensor<1x2x4x4xf32>, tensor<f32>
  %p = kiln.softmax %w {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %o = kiln.matmul %p, %v : tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// A moderate fill (-10) is not an additive mask (masked scores would still
// count): the where stays.
// CHECK-LABEL: func @where_moderate_fill
// CHECK: kiln.where
// CHECK-NOT: kiln.attention
func.func @where_moderate_fill(%q: tensor<1x4x8xf32>, %k: tensor<1x8x4xf32>, %v: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %c = kiln.constant dense<1.0> : tensor<4x4xf32>
  %fill = kiln.constant dense<-10.0> : tensor<f32>
  %s = kiln.matmul %q, %k : tensor<1x4x8xf32>, tensor<1x8x4xf32>
  %w = kiln.where %c, %s, %fill : tensor<4x4xf32>, tensor<1x4x4xf32>, tensor<f32>
  %p = kiln.softmax %w {axis = 2 : i64} : tensor<1x4x4xf32>
  %o = kiln.matmul %p, %v : tensor<1x4x4xf32>, tensor<1x4x8xf32>
  return %o : tensor<1x4x8xf32>
}

// -----

// f16 models match too (before kiln-legalize-types): the constants are the
// model's f16 roundings of the scalars, the unit scale is an f16 constant.
// CHECK-LABEL: func @f16_layer_norm_gelu
// CHECK: %[[ONE:.*]] = kiln.constant dense_resource<layer_norm_unit_scale> : tensor<1xf16>
// CHECK: %[[N:.*]] = kiln.layer_norm %arg0, %[[ONE]] {axis = 1 : i64, epsilon = 0.00100040436 : f32} : tensor<4x8xf16>, tensor<1xf16>
// CHECK: kiln.gelu %[[N]] {approximate = false} : tensor<4x8xf16>
func.func @f16_layer_norm_gelu(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %eps = kiln.constant dense<1.0e-3> : tensor<1xf16>
  %m = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf16> -> tensor<4x1xf16>
  %d = kiln.sub %x, %m : tensor<4x8xf16>, tensor<4x1xf16>
  %sq = kiln.mul %d, %d : tensor<4x8xf16>, tensor<4x8xf16>
  %v = kiln.reduce_mean %sq {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf16> -> tensor<4x1xf16>
  %ve = kiln.add %v, %eps : tensor<4x1xf16>, tensor<1xf16>
  %s = kiln.sqrt %ve : tensor<4x1xf16>
  %n = kiln.div %d, %s : tensor<4x8xf16>, tensor<4x1xf16>
  %half = kiln.constant dense<0.5> : tensor<f16>
  %one = kiln.constant dense<1.0> : tensor<f16>
  %r2 = kiln.constant dense<1.41421354> : tensor<f16>
  %h = kiln.mul %n, %half : tensor<4x8xf16>, tensor<f16>
  %q = kiln.div %n, %r2 : tensor<4x8xf16>, tensor<f16>
  %e = kiln.erf %q : tensor<4x8xf16>
  %p = kiln.add %one, %e : tensor<f16>, tensor<4x8xf16>
  %y = kiln.mul %h, %p : tensor<4x8xf16>, tensor<4x8xf16>
  return %y : tensor<4x8xf16>
}

// -----

// A float square by pow: one multiply (RMSNorm's x.pow(2)); any other
// exponent, and an integer square, stay pow.
// CHECK-LABEL: func @pow_square
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xf32>, %[[N:.*]]: tensor<4xi64>)
// CHECK-NEXT: %[[C3:.*]] = kiln.constant dense<3.000000e+00>
// CHECK-NEXT: %[[I2:.*]] = kiln.constant dense<2>
// CHECK-NEXT: %[[SQ:.*]] = kiln.mul %[[X]], %[[X]] : tensor<2x8xf32>, tensor<2x8xf32>
// CHECK-NEXT: %[[CUBE:.*]] = kiln.pow %[[X]], %[[C3]]
// CHECK-NEXT: %[[ISQ:.*]] = kiln.pow %[[N]], %[[I2]]
// CHECK-NEXT: return %[[SQ]], %[[CUBE]], %[[ISQ]]
func.func @pow_square(%x: tensor<2x8xf32>, %n: tensor<4xi64>) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<4xi64>) {
  %two = kiln.constant dense<2.0> : tensor<f32>
  %three = kiln.constant dense<3.0> : tensor<f32>
  %itwo = kiln.constant dense<2> : tensor<i64>
  %sq = kiln.pow %x, %two : tensor<2x8xf32>, tensor<f32>
  %cube = kiln.pow %x, %three : tensor<2x8xf32>, tensor<f32>
  %isq = kiln.pow %n, %itwo : tensor<4xi64>, tensor<i64>
  return %sq, %cube, %isq : tensor<2x8xf32>, tensor<2x8xf32>, tensor<4xi64>
}
