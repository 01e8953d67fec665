// RUN: kiln-opt --split-input-file --kiln-fuse --kiln-rematerialize %s | FileCheck %s
// RUN: kiln-opt --split-input-file --kiln-fuse --kiln-rematerialize=limit=0 %s | FileCheck %s --check-prefix=NONE

// A BN-ReLU whose only reader is a 1x1 convolution: its ops become the
// convolution kernel's prologue (one fusion, the BN-ReLU before the conv,
// the conv's epilogue after it); the BN-ReLU tensor is never stored.
// CHECK-LABEL: func @bn_relu_conv
// CHECK: %[[F:.*]] = kiln.fusion %arg0, {{.*}} -> tensor<1x8x8x8xf32> {
// CHECK-NEXT: ^bb0(%[[X:[^:]*]]: tensor<1x16x8x8xf32>
// CHECK-NEXT: %[[N:.*]] = kiln.batch_norm %[[X]]
// CHECK-NEXT: %[[R:.*]] = kiln.relu %[[N]]
// CHECK-NEXT: %[[C:.*]] = kiln.conv %[[R]]
// CHECK-NEXT: %[[Y:.*]] = kiln.relu %[[C]]
// CHECK-NEXT: kiln.yield %[[Y]]
// CHECK-NOT: kiln.fusion
// CHECK: return %[[F]]
// With limit=0 nothing moves: two fusions.
// NONE-LABEL: func @bn_relu_conv
// NONE: kiln.fusion
// NONE: kiln.batch_norm
// NONE: kiln.yield
// NONE: kiln.fusion
// NONE-NEXT: ^bb0
// NONE-NEXT: kiln.conv
func.func @bn_relu_conv(%x: tensor<1x16x8x8xf32>) -> tensor<1x8x8x8xf32> {
  %s = kiln.constant dense<0.5> : tensor<16xf32>
  %t = kiln.constant dense<0.25> : tensor<16xf32>
  %m = kiln.constant dense<0.125> : tensor<16xf32>
  %v = kiln.constant dense<2.0> : tensor<16xf32>
  %w = kiln.constant dense<0.0625> : tensor<8x16x1x1xf32>
  %n = kiln.batch_norm %x, %s, %t, %m, %v {epsilon = 1.0e-05 : f32} : tensor<1x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  %r = kiln.relu %n : tensor<1x16x8x8xf32>
  %c = kiln.conv %r, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x8x8xf32>
  %y = kiln.relu %c : tensor<1x8x8x8xf32>
  return %y : tensor<1x8x8x8xf32>
}

// -----

// A lone per-channel op (a scale by a [C,1,1] constant) before a padded
// 3x3 conv joins it too (the padding stays zero: it pads the prologue's
// result).
// CHECK-LABEL: func @scale_conv3x3
// CHECK: kiln.fusion
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.conv
// CHECK-NEXT: kiln.yield
func.func @scale_conv3x3(%x: tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32> {
  %s = kiln.constant dense<1.5> : tensor<8x1x1xf32>
  %w = kiln.constant dense<0.0625> : tensor<8x8x3x3xf32>
  %a = kiln.mul %x, %s : tensor<1x8x6x6xf32>, tensor<8x1x1xf32>
  %c = kiln.conv %a, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x6x6xf32>
  return %c : tensor<1x8x6x6xf32>
}

// -----

// Not candidates: the BN-ReLU has a second reader (it must be stored
// anyway); an add of two full-size tensors (not per channel); a depthwise
// conv (the direct kernel, no prologue). Nothing moves.
// CHECK-LABEL: func @not_candidates
// CHECK: kiln.fusion
// CHECK: kiln.batch_norm
// CHECK: kiln.yield
// CHECK-NEXT: }
// CHECK-NEXT: kiln.conv
// CHECK-NEXT: kiln.exp
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.conv
// CHECK-NEXT: kiln.tanh
// CHECK-NEXT: kiln.conv
func.func @not_candidates(%x: tensor<1x16x8x8xf32>, %z: tensor<1x16x8x8xf32>) -> (tensor<1x8x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x8x8x8xf32>, tensor<1x16x8x8xf32>) {
  %s = kiln.constant dense<0.5> : tensor<16xf32>
  %w = kiln.constant dense<0.0625> : tensor<8x16x1x1xf32>
  %dw = kiln.constant dense<0.0625> : tensor<16x1x3x3xf32>
  %n = kiln.batch_norm %x, %s, %s, %s, %s {epsilon = 1.0e-05 : f32} : tensor<1x16x8x8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  %r = kiln.relu %n : tensor<1x16x8x8xf32>
  %c1 = kiln.conv %r, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x8x8xf32>
  %e = kiln.exp %r : tensor<1x16x8x8xf32>
  %a = kiln.add %z, %x : tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>
  %c2 = kiln.conv %a, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<8x16x1x1xf32>) -> tensor<1x8x8x8xf32>
  %t = kiln.tanh %z : tensor<1x16x8x8xf32>
  %c3 = kiln.conv %t, %dw {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 16 : i64} : (tensor<1x16x8x8xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x8x8xf32>
  return %c1, %e, %c2, %c3 : tensor<1x8x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x8x8x8xf32>, tensor<1x16x8x8xf32>
}

// -----

// Not recomputed at a conv over a concat: %p is read by the concat alone
// (held for no one else; nothing is saved by computing it twice), %e comes
// from the input through an exp (not a chain of convolutions), %q is read
// right after it is computed (not held long). The concats stay.
// CHECK-LABEL: func @not_recomputed
// CHECK-NOT: kiln.recomputed
// CHECK: kiln.concat
// CHECK: kiln.concat
// CHECK-NOT: kiln.recomputed
// CHECK: return
func.func @not_recomputed(%x: tensor<1x4x8x8xf32>, %z: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %w = kiln.constant dense<0.0625> : tensor<4x4x3x3xf32>
  %w2 = kiln.constant dense<0.0625> : tensor<4x8x3x3xf32>
  %p = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %e = kiln.exp %x : tensor<1x4x8x8xf32>
  %k = kiln.conv %e, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %f1 = kiln.conv %z, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %f2 = kiln.conv %f1, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %f3 = kiln.conv %f2, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %f4 = kiln.conv %f3, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %c = kiln.concat %p, %e {axis = 1 : i64} : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<1x8x8x8xf32>
  %y = kiln.conv %c, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x8x8xf32>, tensor<4x8x3x3xf32>) -> tensor<1x4x8x8xf32>
  %q = kiln.conv %z, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %qt = kiln.tanh %q : tensor<1x4x8x8xf32>
  %c2 = kiln.concat %q, %f4 {axis = 1 : i64} : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<1x8x8x8xf32>
  %y2 = kiln.conv %c2, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x8x8xf32>, tensor<4x8x3x3xf32>) -> tensor<1x4x8x8xf32>
  return %y, %k, %f4, %y2, %qt, %e : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}
