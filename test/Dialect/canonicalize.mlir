// RUN: kiln-opt --split-input-file --canonicalize %s | FileCheck %s
// Folders of kiln ops.

// A reshape to the same type folds away; reshape chains collapse.
// CHECK-LABEL: func @reshape_chain
func.func @reshape_chain(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  // CHECK-NEXT: %[[R:.*]] = kiln.reshape %arg0 : tensor<2x3xf32> -> tensor<6xf32>
  // CHECK-NEXT: return %[[R]]
  %a = kiln.reshape %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %b = kiln.reshape %a : tensor<2x3xf32> -> tensor<3x2xf32>
  %c = kiln.reshape %b : tensor<3x2xf32> -> tensor<6xf32>
  return %c : tensor<6xf32>
}

// -----

// An identity transpose folds away.
// CHECK-LABEL: func @identity_transpose
func.func @identity_transpose(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // CHECK-NEXT: return %arg0
  %t = kiln.transpose %x {perm = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %t : tensor<2x3xf32>
}

// -----

// A reshape of a dense constant becomes a constant.
// CHECK-LABEL: func @reshape_constant
func.func @reshape_constant() -> tensor<2x2xf32> {
  // CHECK-NEXT: %[[C:.*]] = kiln.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
  // CHECK-NEXT: return %[[C]]
  %c = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %r = kiln.reshape %c : tensor<4xf32> -> tensor<2x2xf32>
  return %r : tensor<2x2xf32>
}

// -----

// A transpose that moves only size-1 dimensions keeps the element order: a
// reshape. The transpose of a constant is a constant.
// CHECK-LABEL: func @unit_dim_transpose
func.func @unit_dim_transpose(%x: tensor<1x1x1x8xf32>) -> (tensor<1x8x1x1xf32>, tensor<3x2xf32>) {
  // CHECK-DAG: %[[C:.*]] = kiln.constant dense<{{\[\[}}1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
  // CHECK-DAG: %[[R:.*]] = kiln.reshape %arg0 : tensor<1x1x1x8xf32> -> tensor<1x8x1x1xf32>
  // CHECK-NOT: kiln.transpose
  // CHECK: return %[[R]], %[[C]]
  %t = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : tensor<1x1x1x8xf32> -> tensor<1x8x1x1xf32>
  %c = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %ct = kiln.transpose %c {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return %t, %ct : tensor<1x8x1x1xf32>, tensor<3x2xf32>
}

// -----

// A transpose that really moves data stays.
// CHECK-LABEL: func @real_transpose
func.func @real_transpose(%x: tensor<1x2x1x8xf32>) -> tensor<1x8x2x1xf32> {
  // CHECK: kiln.transpose
  %t = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : tensor<1x2x1x8xf32> -> tensor<1x8x2x1xf32>
  return %t : tensor<1x8x2x1xf32>
}

// -----

// A slice of everything, in order, is its input.
// CHECK-LABEL: func @whole_slice
func.func @whole_slice(%x: tensor<2x6xf32>) -> tensor<2x6xf32> {
  // CHECK-NEXT: return %arg0
  %y = kiln.slice %x {offsets = array<i64: 0, 0>, sizes = array<i64: 2, 6>, strides = array<i64: 1, 1>} : tensor<2x6xf32> -> tensor<2x6xf32>
  return %y : tensor<2x6xf32>
}

// -----

// Casts: to the same type folds away; through a type that holds every
// value folds (f16 -> f32 -> f16 is x; f16 -> f32 -> f64 is one cast); a
// lossy round trip stays; constants convert at compile time (nearest even,
// ties to even: 1 + 2^-8 -> 1; float to int toward zero, i1 is x != 0).
// CHECK-LABEL: func @casts
// CHECK-DAG: %[[C1:.*]] = kiln.constant dense<[1.000000e+00, 3.000000e+00, -2.500000e+00]> : tensor<3xbf16>
// CHECK-DAG: %[[C2:.*]] = kiln.constant dense<[2, -1, 0]> : tensor<3xi32>
// CHECK-DAG: %[[C3:.*]] = kiln.constant dense<[true, true, false]> : tensor<3xi1>
// CHECK-DAG: %[[W:.*]] = kiln.cast %arg0 : tensor<3xf16> -> tensor<3xf64>
// CHECK-DAG: %[[L:.*]] = kiln.cast %arg1 : tensor<3xf32> -> tensor<3xf16>
// CHECK-DAG: %[[L2:.*]] = kiln.cast %[[L]] : tensor<3xf16> -> tensor<3xf32>
// CHECK: return %arg0, %[[W]], %[[L2]], %[[C1]], %[[C2]], %[[C3]]
func.func @casts(%h: tensor<3xf16>, %f: tensor<3xf32>)
    -> (tensor<3xf16>, tensor<3xf64>, tensor<3xf32>, tensor<3xbf16>, tensor<3xi32>, tensor<3xi1>) {
  %same = kiln.cast %h : tensor<3xf16> -> tensor<3xf16>
  %up = kiln.cast %same : tensor<3xf16> -> tensor<3xf32>
  %back = kiln.cast %up : tensor<3xf32> -> tensor<3xf16>
  %wide = kiln.cast %up : tensor<3xf32> -> tensor<3xf64>
  %lossy = kiln.cast %f : tensor<3xf32> -> tensor<3xf16>
  %round = kiln.cast %lossy : tensor<3xf16> -> tensor<3xf32>
  %c = kiln.constant dense<[1.00390625, 3.0, -2.5]> : tensor<3xf32>
  %cb = kiln.cast %c : tensor<3xf32> -> tensor<3xbf16>
  %c2 = kiln.constant dense<[2.9, -1.5, 0.4]> : tensor<3xf32>
  %ci = kiln.cast %c2 : tensor<3xf32> -> tensor<3xi32>
  %c3 = kiln.constant dense<[2, -1, 0]> : tensor<3xi64>
  %cz = kiln.cast %c3 : tensor<3xi64> -> tensor<3xi1>
  return %back, %wide, %round, %cb, %ci, %cz
      : tensor<3xf16>, tensor<3xf64>, tensor<3xf32>, tensor<3xbf16>, tensor<3xi32>, tensor<3xi1>
}

// -----

// A chain of transposes and reshapes that puts every element back in its
// row-major place is a reshape of the chain's start: NHWC taken to NCHW,
// [N, C, H*W], then [N, H*W, C] (a ViT's patch embedding after an NHWC conv).
// CHECK-LABEL: func @order_restoring_chain
func.func @order_restoring_chain(%x: tensor<1x14x14x768xf32>) -> tensor<1x196x768xf32> {
  // CHECK: %[[R:.*]] = kiln.reshape %arg0 : tensor<1x14x14x768xf32> -> tensor<1x196x768xf32>
  // CHECK-NOT: kiln.transpose
  // CHECK: return %[[R]]
  %t = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : tensor<1x14x14x768xf32> -> tensor<1x768x14x14xf32>
  %r = kiln.reshape %t : tensor<1x768x14x14xf32> -> tensor<1x768x196xf32>
  %u = kiln.transpose %r {perm = array<i64: 0, 2, 1>} : tensor<1x768x196xf32> -> tensor<1x196x768xf32>
  return %u : tensor<1x196x768xf32>
}

// -----

// The same chain with the spatial dimensions swapped on the way does not
// restore the order ([N, W*H, C]): its transposes stay. So does a chain
// through a slice that keeps part of the tensor.
// CHECK-LABEL: func @order_changing_chain
func.func @order_changing_chain(%x: tensor<1x4x6x8xf32>) -> (tensor<1x24x8xf32>, tensor<1x12x8xf32>) {
  // CHECK-COUNT-2: kiln.transpose
  // CHECK: kiln.slice
  // CHECK: kiln.transpose
  // CHECK: return
  %t = kiln.transpose %x {perm = array<i64: 0, 3, 2, 1>} : tensor<1x4x6x8xf32> -> tensor<1x8x6x4xf32>
  %r = kiln.reshape %t : tensor<1x8x6x4xf32> -> tensor<1x8x24xf32>
  %u = kiln.transpose %r {perm = array<i64: 0, 2, 1>} : tensor<1x8x24xf32> -> tensor<1x24x8xf32>
  %s = kiln.slice %x {offsets = array<i64: 0, 0, 0, 0>, sizes = array<i64: 1, 2, 6, 8>, strides = array<i64: 1, 1, 1, 1>} : tensor<1x4x6x8xf32> -> tensor<1x2x6x8xf32>
  %st = kiln.transpose %s {perm = array<i64: 0, 3, 1, 2>} : tensor<1x2x6x8xf32> -> tensor<1x8x2x6xf32>
  %sr = kiln.reshape %st : tensor<1x8x2x6xf32> -> tensor<1x8x12xf32>
  %su = kiln.transpose %sr {perm = array<i64: 0, 2, 1>} : tensor<1x8x12xf32> -> tensor<1x12x8xf32>
  return %u, %su : tensor<1x24x8xf32>, tensor<1x12x8xf32>
}

// -----

// An op whose results are all empty computes nothing: its results become
// empty constants (a batch-0 convolution, a product with no columns). An
// empty operand alone changes nothing.
// CHECK-LABEL: func @empty_results
func.func @empty_results(%x: tensor<0x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>,
                         %a: tensor<2x3xf32>, %e: tensor<3x0xf32>, %k: tensor<2x0xf32>,
                         %m: tensor<0x5xf32>)
    -> (tensor<0x4x8x8xf32>, tensor<2x0xf32>, tensor<2x5xf32>) {
  // CHECK-DAG: %[[C:.*]] = kiln.constant dense<> : tensor<0x4x8x8xf32>
  // CHECK-DAG: %[[M:.*]] = kiln.constant dense<> : tensor<2x0xf32>
  // CHECK-DAG: %[[P:.*]] = kiln.matmul %arg5, %arg6 : tensor<2x0xf32>, tensor<0x5xf32>
  // CHECK: return %[[C]], %[[M]], %[[P]]
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<0x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<0x4x8x8xf32>
  %p = kiln.matmul %a, %e : tensor<2x3xf32>, tensor<3x0xf32>
  %q = kiln.matmul %k, %m : tensor<2x0xf32>, tensor<0x5xf32>
  return %c, %p, %q : tensor<0x4x8x8xf32>, tensor<2x0xf32>, tensor<2x5xf32>
}

// -----

// A sum or product over an empty axis is its identity.
// CHECK-LABEL: func @empty_reductions
func.func @empty_reductions(%x: tensor<2x0x4xf32>, %i: tensor<0x3xf32>)
    -> (tensor<2x1x4xf32>, tensor<3xf32>) {
  // CHECK-DAG: %[[S:.*]] = kiln.constant dense<0.000000e+00> : tensor<2x1x4xf32>
  // CHECK-DAG: %[[P:.*]] = kiln.constant dense<1.000000e+00> : tensor<3xf32>
  // CHECK: return %[[S]], %[[P]]
  %s = kiln.reduce_sum %x {axes = array<i64: 1>, keepdims = true} : tensor<2x0x4xf32> -> tensor<2x1x4xf32>
  %p = kiln.reduce_prod %i {axes = array<i64: 0>, keepdims = false} : tensor<0x3xf32> -> tensor<3xf32>
  return %s, %p : tensor<2x1x4xf32>, tensor<3xf32>
}

// -----

// f32 arithmetic over constants folds (broadcasting): a QDQ weight's
// (cast(int8) - zero_point) * scale becomes its f32 values.
// CHECK-LABEL: func @dequantized_weight
func.func @dequantized_weight() -> tensor<2x3xf32> {
  // CHECK-NEXT: %[[C:.*]] = kiln.constant dense<{{\[\[}}-2.500000e-01, 0.000000e+00, 5.000000e-01], [4.000000e+00, -1.000000e+00, 0.000000e+00]]> : tensor<2x3xf32>
  // CHECK-NEXT: return %[[C]]
  %q = kiln.constant dense<[[-1, 0, 2], [8, -2, 0]]> : tensor<2x3xi8>
  %f = kiln.cast %q : tensor<2x3xi8> -> tensor<2x3xf32>
  %zp = kiln.constant dense<0.0> : tensor<f32>
  %s = kiln.constant dense<[[0.25], [0.5]]> : tensor<2x1xf32>
  %c = kiln.sub %f, %zp : tensor<2x3xf32>, tensor<f32>
  %w = kiln.mul %c, %s : tensor<2x3xf32>, tensor<2x1xf32>
  return %w : tensor<2x3xf32>
}

// -----

// add and div fold too; an operand that is not a constant keeps the op.
// CHECK-LABEL: func @add_div_constants
func.func @add_div_constants(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  // CHECK-DAG: %[[C:.*]] = kiln.constant dense<[2.000000e+00, 2.500000e+00]> : tensor<2xf32>
  // CHECK-DAG: %[[M:.*]] = kiln.mul %arg0, %{{.*}}
  // CHECK: return %[[C]], %[[M]]
  %a = kiln.constant dense<[3.0, 4.0]> : tensor<2xf32>
  %b = kiln.constant dense<[1.0, 1.0]> : tensor<2xf32>
  %two = kiln.constant dense<2.0> : tensor<f32>
  %s = kiln.add %a, %b : tensor<2xf32>, tensor<2xf32>
  %d = kiln.div %s, %two : tensor<2xf32>, tensor<f32>
  %m = kiln.mul %x, %a : tensor<2xf32>, tensor<2xf32>
  return %d, %m : tensor<2xf32>, tensor<2xf32>
}

// -----

// A broadcast that would store more than it computes stays a kernel.
// CHECK-LABEL: func @broadcast_grows
func.func @broadcast_grows() -> tensor<64x64xf32> {
  // CHECK: kiln.add
  %a = kiln.constant dense<1.0> : tensor<64x1xf32>
  %b = kiln.constant dense<2.0> : tensor<1x64xf32>
  %s = kiln.add %a, %b : tensor<64x1xf32>, tensor<1x64xf32>
  return %s : tensor<64x64xf32>
}
