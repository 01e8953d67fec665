// RUN: kiln-opt --split-input-file --kiln-fuse %s | FileCheck %s

// A convolution with a residual add and a ReLU: one fusion, the conv first.
// CHECK-LABEL: func @conv_add_relu
// CHECK: %[[F:.*]] = kiln.fusion %arg0, %{{.*}}, %arg1 : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<1x4x8x8xf32>, %[[W:.*]]: tensor<4x4x3x3xf32>, %[[R:.*]]: tensor<1x4x8x8xf32>):
// CHECK-NEXT: %[[C:.*]] = kiln.conv %[[X]], %[[W]]
// CHECK-NEXT: %[[S:.*]] = kiln.add %[[C]], %[[R]]
// CHECK-NEXT: %[[Y:.*]] = kiln.relu %[[S]]
// CHECK-NEXT: kiln.yield %[[Y]]
// CHECK: return %[[F]]
func.func @conv_add_relu(%x: tensor<1x4x8x8xf32>, %r: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = kiln.constant dense<0.5> : tensor<4x4x3x3xf32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %s = kiln.add %c, %r : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
  %y = kiln.relu %s : tensor<1x4x8x8xf32>
  return %y : tensor<1x4x8x8xf32>
}

// -----

// A value with two consumers ends the group: the conv and its ReLU fuse,
// the two users of the ReLU stay separate.
// CHECK-LABEL: func @two_consumers
// CHECK: kiln.fusion
// CHECK: kiln.conv
// CHECK: kiln.relu
// CHECK: kiln.yield
// CHECK: kiln.sigmoid
// CHECK: kiln.tanh
func.func @two_consumers(%x: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) {
  %w = kiln.constant dense<0.5> : tensor<4x4x1x1xf32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %r = kiln.relu %c : tensor<1x4x8x8xf32>
  %a = kiln.sigmoid %r : tensor<1x4x8x8xf32>
  %b = kiln.tanh %r : tensor<1x4x8x8xf32>
  return %a, %b : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
}

// -----

// Elementwise chains fuse on their own; a side operand broadcast along one
// spatial dimension does not join a conv epilogue.
// CHECK-LABEL: func @chains
// CHECK: kiln.conv
// CHECK-NEXT: kiln.fusion
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.clip
// CHECK-NEXT: kiln.yield
func.func @chains(%x: tensor<1x4x8x8xf32>, %row: tensor<1x1x1x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = kiln.constant dense<0.5> : tensor<4x4x1x1xf32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %m = kiln.mul %c, %row : tensor<1x4x8x8xf32>, tensor<1x1x1x8xf32>
  %y = kiln.clip %m {min = 0.0 : f32, max = 6.0 : f32} : tensor<1x4x8x8xf32>
  return %y : tensor<1x4x8x8xf32>
}

// -----

// Gemm with a per-column scale and a sigmoid.
// CHECK-LABEL: func @gemm_epilogue
// CHECK: kiln.fusion
// CHECK: kiln.gemm
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.sigmoid
func.func @gemm_epilogue(%a: tensor<2x8xf32>, %s: tensor<4xf32>) -> tensor<2x4xf32> {
  %w = kiln.constant dense<0.5> : tensor<4x8xf32>
  %g = kiln.gemm %a, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x4xf32>
  %m = kiln.mul %g, %s : tensor<2x4xf32>, tensor<4xf32>
  %y = kiln.sigmoid %m : tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// Both operands of an add end chains (a residual block with a projection):
// the add joins the first group only.
// CHECK-LABEL: func @shared_add
// CHECK: %[[A:.*]] = kiln.fusion
// CHECK: kiln.conv
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.relu
// CHECK: kiln.yield
// CHECK-NOT: kiln.fusion
// CHECK: return %[[A]]
func.func @shared_add(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = kiln.constant dense<0.5> : tensor<4x4x1x1xf32>
  %p = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %q = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x1x1xf32>) -> tensor<1x4x8x8xf32>
  %s = kiln.add %q, %p : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>
  %y = kiln.relu %s : tensor<1x4x8x8xf32>
  return %y : tensor<1x4x8x8xf32>
}

// -----

// Attention takes the transposes that split and merge heads: one kernel
// reads [batch, seq, heads, dim] and writes it back.
// CHECK-LABEL: func @attention_heads
// CHECK: %[[F:.*]] = kiln.fusion %arg0, %arg1, %arg2 : (tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>, tensor<1x16x2x8xf32>) -> tensor<1x16x2x8xf32> {
// CHECK-NEXT: ^bb0(%[[Q:.*]]: tensor<1x16x2x8xf32>, %[[K:.*]]: tensor<1x16x2x8xf32>, %[[V:.*]]: tensor<1x16x2x8xf32>):
// CHECK-NEXT: %[[TQ:.*]] = kiln.transpose %[[Q]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: %[[TK:.*]] = kiln.transpose %[[K]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: %[[TV:.*]] = kiln.transpose %[[V]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: %[[A:.*]] = kiln.attention %[[TQ]], %[[TK]], %[[TV]] {scale = 1.250000e-01 : f32}
// CHECK-NEXT: %[[TO:.*]] = kiln.transpose %[[A]] {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT: kiln.yield %[[TO]]
// CHECK: return %[[F]]
func.func @attention_heads(%q: tensor<1x16x2x8xf32>, %k: tensor<1x16x2x8xf32>, %v: tensor<1x16x2x8xf32>) -> tensor<1x16x2x8xf32> {
  %tq = kiln.transpose %q {perm = array<i64: 0, 2, 1, 3>} : tensor<1x16x2x8xf32> -> tensor<1x2x16x8xf32>
  %tk = kiln.transpose %k {perm = array<i64: 0, 2, 1, 3>} : tensor<1x16x2x8xf32> -> tensor<1x2x16x8xf32>
  %tv = kiln.transpose %v {perm = array<i64: 0, 2, 1, 3>} : tensor<1x16x2x8xf32> -> tensor<1x2x16x8xf32>
  %a = kiln.attention %tq, %tk, %tv {scale = 0.125 : f32} : tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x16x8xf32>
  %o = kiln.transpose %a {perm = array<i64: 0, 2, 1, 3>} : tensor<1x2x16x8xf32> -> tensor<1x16x2x8xf32>
  return %o : tensor<1x16x2x8xf32>
}

// -----

// A key transpose that moves the last dimension stays outside (the kernel
// needs contiguous key rows); a result with two users is not transposed
// in the kernel; alone, the attention needs no fusion region.
// CHECK-LABEL: func @attention_strided_key
// CHECK: %[[K:.*]] = kiln.transpose %arg1 {perm = array<i64: 0, 2, 1>}
// CHECK-NEXT: %[[A:.*]] = kiln.attention %arg0, %[[K]], %arg2
// CHECK-NEXT: kiln.transpose %[[A]]
// CHECK-NOT: kiln.fusion
func.func @attention_strided_key(%q: tensor<2x16x8xf32>, %kt: tensor<2x8x16xf32>, %v: tensor<2x16x8xf32>) -> (tensor<2x16x8xf32>, tensor<2x8x16xf32>) {
  %k = kiln.transpose %kt {perm = array<i64: 0, 2, 1>} : tensor<2x8x16xf32> -> tensor<2x16x8xf32>
  %a = kiln.attention %q, %k, %v {scale = 0.125 : f32} : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32> -> tensor<2x16x8xf32>
  %o = kiln.transpose %a {perm = array<i64: 0, 2, 1>} : tensor<2x16x8xf32> -> tensor<2x8x16xf32>
  return %a, %o : tensor<2x16x8xf32>, tensor<2x8x16xf32>
}

// -----

// The cost model recomputes a cheap value with several elementwise users
// (computed from inputs) inside each user's kernel instead of writing it
// out: two kernels, no intermediate tensor.
// CHECK-LABEL: func @recompute_shared
// CHECK: kiln.fusion %arg0, %arg1 : {{.*}} {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[S1:.*]] = kiln.add
// CHECK-NEXT: %[[A:.*]] = kiln.sigmoid %[[S1]]
// CHECK-NEXT: kiln.yield %[[A]]
// CHECK: kiln.fusion %arg0, %arg1 : {{.*}} {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[S2:.*]] = kiln.add
// CHECK-NEXT: %[[B:.*]] = kiln.tanh %[[S2]]
// CHECK-NEXT: kiln.yield %[[B]]
// CHECK-NOT: kiln.add
func.func @recompute_shared(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = kiln.add %x, %y : tensor<4x8xf32>, tensor<4x8xf32>
  %a = kiln.sigmoid %s : tensor<4x8xf32>
  %b = kiln.tanh %s : tensor<4x8xf32>
  return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Recomputed into an anchor's epilogue: the scale shared by two gemm
// epilogues is computed in both.
// CHECK-LABEL: func @recompute_into_epilogue
// CHECK: kiln.fusion
// CHECK: kiln.gemm
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.add
// CHECK: kiln.fusion
// CHECK: kiln.gemm
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.sub
func.func @recompute_into_epilogue(%a: tensor<8x16xf32>, %w: tensor<16x4xf32>, %k: tensor<8x4xf32>, %z: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>) {
  %s = kiln.mul %k, %z : tensor<8x4xf32>, tensor<8x4xf32>
  %g1 = kiln.gemm %a, %w {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = false} : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %y1 = kiln.add %g1, %s : tensor<8x4xf32>, tensor<8x4xf32>
  %g2 = kiln.gemm %a, %w {alpha = 1.0 : f32, beta = 0.0 : f32, trans_a = false, trans_b = false} : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %y2 = kiln.sub %g2, %s : tensor<8x4xf32>, tensor<8x4xf32>
  return %y1, %y2 : tensor<8x4xf32>, tensor<8x4xf32>
}

// -----

// Horizontal fusion: the Q, K and V projections of one input (constant
// weights; biases, V without one) become one matmul by the weights side by
// side plus one bias add (zeros for V); the attention kernel takes the
// slices, head reshapes and transposes and reads its operands in place.
// CHECK-LABEL: func @qkv_projections
// CHECK-DAG: %[[W:.*]] = kiln.constant dense_resource<qkv_weight> : tensor<8x24xf32>
// CHECK-DAG: %[[B:.*]] = kiln.constant dense_resource<qkv_bias> : tensor<24xf32>
// CHECK: %[[P:.*]] = kiln.fusion %arg0, %[[W]], %[[B]]
// CHECK: kiln.matmul {{.*}} : tensor<1x4x8xf32>, tensor<8x24xf32>
// CHECK-NEXT: kiln.add {{.*}} : tensor<1x4x24xf32>, tensor<24xf32>
// CHECK: kiln.fusion %[[P]] : (tensor<1x4x24xf32>) -> tensor<1x2x4x4xf32>
// CHECK: kiln.slice %{{.*}} {offsets = array<i64: 0, 0, 0>, sizes = array<i64: 1, 4, 8>
// CHECK: kiln.slice %{{.*}} {offsets = array<i64: 0, 0, 8>, sizes = array<i64: 1, 4, 8>
// CHECK: kiln.slice %{{.*}} {offsets = array<i64: 0, 0, 16>, sizes = array<i64: 1, 4, 8>
// CHECK: kiln.attention
// CHECK-NEXT: kiln.yield
// CHECK: qkv_bias: "0x04000000{{(0000803F)+(00000040)+(00000000)+}}"
func.func @qkv_projections(%x: tensor<1x4x8xf32>) -> tensor<1x2x4x4xf32> {
  %wq = kiln.constant dense<0.5> : tensor<8x8xf32>
  %wk = kiln.constant dense<0.25> : tensor<8x8xf32>
  %wv = kiln.constant dense<2.0> : tensor<8x8xf32>
  %bq = kiln.constant dense<1.0> : tensor<8xf32>
  %bk = kiln.constant dense<2.0> : tensor<8xf32>
  %q0 = kiln.matmul %x, %wq : tensor<1x4x8xf32>, tensor<8x8xf32>
  %q1 = kiln.add %q0, %bq : tensor<1x4x8xf32>, tensor<8xf32>
  %k0 = kiln.matmul %x, %wk : tensor<1x4x8xf32>, tensor<8x8xf32>
  %k1 = kiln.add %k0, %bk : tensor<1x4x8xf32>, tensor<8xf32>
  %v0 = kiln.matmul %x, %wv : tensor<1x4x8xf32>, tensor<8x8xf32>
  %q2 = kiln.reshape %q1 : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
  %k2 = kiln.reshape %k1 : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
  %v2 = kiln.reshape %v0 : tensor<1x4x8xf32> -> tensor<1x4x2x4xf32>
  %q = kiln.transpose %q2 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
  %k = kiln.transpose %k2 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
  %v = kiln.transpose %v2 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x4x2x4xf32> -> tensor<1x2x4x4xf32>
  %a = kiln.attention %q, %k, %v {scale = 0.5 : f32} : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32>
  return %a : tensor<1x2x4x4xf32>
}

// -----

// Matmuls that share an input but do not feed attention stay apart (their
// slices would be copies).
// CHECK-LABEL: func @shared_input_no_attention
// CHECK-NOT: kiln.slice
// CHECK-COUNT-2: kiln.matmul
func.func @shared_input_no_attention(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %w1 = kiln.constant dense<0.5> : tensor<8x8xf32>
  %w2 = kiln.constant dense<0.25> : tensor<8x8xf32>
  %a = kiln.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x8xf32>
  %b = kiln.matmul %x, %w2 : tensor<4x8xf32>, tensor<8x8xf32>
  return %a, %b : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A reduction with its elementwise producers (computing its input, here
// (x - mean)^2 with the mean broadcast; d * d reads d twice but d has one
// user) and consumers (+ eps, sqrt): one kernel. The broadcast mean comes
// from an earlier reduction, which stays its own kernel.
// CHECK-LABEL: func @reduction_prologue_epilogue
// CHECK: %[[M:.*]] = kiln.reduce_mean %arg0
// CHECK: kiln.fusion %arg0, %[[M]], %{{.*}} : {{.*}} -> tensor<2x1xf32> {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[D:.*]] = kiln.sub
// CHECK-NEXT: %[[S:.*]] = kiln.mul %[[D]], %[[D]]
// CHECK-NEXT: %[[V:.*]] = kiln.reduce_mean %[[S]]
// CHECK-NEXT: %[[E:.*]] = kiln.add %[[V]]
// CHECK-NEXT: %[[R:.*]] = kiln.sqrt %[[E]]
// CHECK-NEXT: kiln.yield %[[R]]
func.func @reduction_prologue_epilogue(%x: tensor<2x16xf32>) -> tensor<2x1xf32> {
  %eps = kiln.constant dense<1.0e-5> : tensor<f32>
  %m = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : tensor<2x16xf32> -> tensor<2x1xf32>
  %d = kiln.sub %x, %m : tensor<2x16xf32>, tensor<2x1xf32>
  %s = kiln.mul %d, %d : tensor<2x16xf32>, tensor<2x16xf32>
  %v = kiln.reduce_mean %s {axes = array<i64: 1>, keepdims = true} : tensor<2x16xf32> -> tensor<2x1xf32>
  %e = kiln.add %v, %eps : tensor<2x1xf32>, tensor<f32>
  %r = kiln.sqrt %e : tensor<2x1xf32>
  return %r : tensor<2x1xf32>
}

// -----

// Casts (from kiln-legalize-types): one starts an elementwise chain, one
// ends it (the kernel stores f16); a matmul's epilogue and a reduction's
// epilogue keep their element type, so the casts after them are kernels of
// their own (with what follows), while a cast computing a reduction's
// input joins it as prologue.
// CHECK-LABEL: func @casts
// CHECK: %[[E:.*]] = kiln.fusion %arg0 : (tensor<4x8xf16>) -> tensor<4x8xf16>
// CHECK:   kiln.cast {{.*}} -> tensor<4x8xf32>
// CHECK:   kiln.relu
// CHECK:   kiln.cast {{.*}} -> tensor<4x8xf16>
// CHECK: %[[M:.*]] = kiln.fusion %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK:   kiln.matmul
// CHECK:   kiln.tanh
// CHECK-NEXT: kiln.yield
// CHECK: %[[R:.*]] = kiln.fusion %[[E]] : (tensor<4x8xf16>) -> tensor<4x1xf32>
// CHECK:   kiln.cast {{.*}} -> tensor<4x8xf32>
// CHECK:   kiln.reduce_sum
// CHECK:   kiln.sqrt
// CHECK-NEXT: kiln.yield
// CHECK: kiln.cast %[[R]] : tensor<4x1xf32> -> tensor<4x1xf16>
// CHECK: kiln.cast %[[M]] : tensor<4x8xf32> -> tensor<4x8xf16>
func.func @casts(%x: tensor<4x8xf16>, %w: tensor<8x8xf32>) -> (tensor<4x8xf16>, tensor<4x1xf16>) {
  %a = kiln.cast %x : tensor<4x8xf16> -> tensor<4x8xf32>
  %r = kiln.relu %a : tensor<4x8xf32>
  %e = kiln.cast %r : tensor<4x8xf32> -> tensor<4x8xf16>
  %e32 = kiln.cast %e : tensor<4x8xf16> -> tensor<4x8xf32>
  %m = kiln.matmul %e32, %w : tensor<4x8xf32>, tensor<8x8xf32>
  %t = kiln.tanh %m : tensor<4x8xf32>
  %e2 = kiln.cast %e : tensor<4x8xf16> -> tensor<4x8xf32>
  %s = kiln.reduce_sum %e2 {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %q = kiln.sqrt %s : tensor<4x1xf32>
  %q16 = kiln.cast %q : tensor<4x1xf32> -> tensor<4x1xf16>
  %t16 = kiln.cast %t : tensor<4x8xf32> -> tensor<4x8xf16>
  return %t16, %q16 : tensor<4x8xf16>, tensor<4x1xf16>
}

// -----

// A reduction's epilogue keeps its element type: a comparison of the sum
// (i1) is a kernel of its own.
// CHECK-LABEL: func @reduce_then_compare
// CHECK: %[[S:.*]] = kiln.fusion %arg0 : (tensor<4x8xi1>) -> tensor<4x1xf32>
// CHECK:   kiln.cast
// CHECK:   kiln.reduce_sum
// CHECK-NEXT: kiln.yield
// CHECK: kiln.compare %[[S]], %{{.*}} {predicate = "gt"} : tensor<4x1xf32>, tensor<f32>
func.func @reduce_then_compare(%m: tensor<4x8xi1>) -> tensor<4x1xi1> {
  %h = kiln.constant dense<0.5> : tensor<f32>
  %f = kiln.cast %m : tensor<4x8xi1> -> tensor<4x8xf32>
  %s = kiln.reduce_sum %f {axes = array<i64: 1>, keepdims = true} : tensor<4x8xf32> -> tensor<4x1xf32>
  %c = kiln.compare %s, %h {predicate = "gt"} : tensor<4x1xf32>, tensor<f32>
  return %c : tensor<4x1xi1>
}

// -----

// A rounding pair (f32 -> bf16 -> f32, kiln-lower-precision on the CPU)
// joins the conv's epilogue: the kernel rounds in registers and keeps f32.
// A lone cast to bf16 (the value stored narrow) does not.
// CHECK-LABEL: func @conv_rounding_pair
// CHECK: kiln.fusion
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.conv
// CHECK-NEXT: kiln.cast {{.*}} -> tensor<1x4x8x8xbf16>
// CHECK-NEXT: kiln.cast {{.*}} -> tensor<1x4x8x8xf32>
// CHECK-NEXT: kiln.relu
// CHECK-NEXT: kiln.yield
// CHECK: kiln.conv
// CHECK-NEXT: kiln.cast {{.*}} -> tensor<1x4x8x8xbf16>
// CHECK-NEXT: return
func.func @conv_rounding_pair(%x: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x4x8x8xbf16>) {
  %w = kiln.constant dense<0.5> : tensor<4x4x3x3xf32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %d = kiln.cast %c : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xbf16>
  %u = kiln.cast %d : tensor<1x4x8x8xbf16> -> tensor<1x4x8x8xf32>
  %y = kiln.relu %u : tensor<1x4x8x8xf32>
  %c2 = kiln.conv %y, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %n = kiln.cast %c2 : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xbf16>
  return %y, %n : tensor<1x4x8x8xf32>, tensor<1x4x8x8xbf16>
}

// -----

// A QDQ model's quantize-dequantize of a conv's output (round, clamp, cast
// to uint8 and back, less the zero point, times the scale) joins the conv's
// epilogue too: the 8-bit value lives in registers only.
// CHECK-LABEL: func @conv_qdq_pair
// CHECK: kiln.fusion
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.conv
// CHECK-NEXT: kiln.round
// CHECK-NEXT: kiln.clip
// CHECK-NEXT: kiln.cast {{.*}} -> tensor<1x4x8x8xui8>
// CHECK-NEXT: kiln.cast {{.*}} -> tensor<1x4x8x8xf32>
// CHECK-NEXT: kiln.sub
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.yield
// CHECK-NOT: kiln.fusion
// CHECK: return
func.func @conv_qdq_pair(%x: tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32> {
  %w = kiln.constant dense<0.5> : tensor<4x4x3x3xf32>
  %z = kiln.constant dense<3.0> : tensor<f32>
  %s = kiln.constant dense<0.25> : tensor<f32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x8x8xf32>
  %r = kiln.round %c : tensor<1x4x8x8xf32>
  %k = kiln.clip %r {min = 0.0 : f32, max = 255.0 : f32} : tensor<1x4x8x8xf32>
  %q = kiln.cast %k : tensor<1x4x8x8xf32> -> tensor<1x4x8x8xui8>
  %f = kiln.cast %q : tensor<1x4x8x8xui8> -> tensor<1x4x8x8xf32>
  %d = kiln.sub %f, %z : tensor<1x4x8x8xf32>, tensor<f32>
  %y = kiln.mul %d, %s : tensor<1x4x8x8xf32>, tensor<f32>
  return %y : tensor<1x4x8x8xf32>
}

// -----

// A rounding pair whose up half feeds another anchor's epilogue (a kept-fp32
// matmul minus a rounded bf16 one, as --precision=auto builds it) stays
// whole in the rounded matmul's epilogue: the other epilogue reads f32, and
// no anchor kernel ends on a bf16 value.
// CHECK-LABEL: func @rounding_pair_not_split
// CHECK: kiln.fusion
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.matmul {{.*}} {kiln.precision = #kiln.precision<bf16>}
// CHECK-NEXT: kiln.cast {{.*}} -> tensor<4x8xbf16>
// CHECK-NEXT: kiln.cast {{.*}} -> tensor<4x8xf32>
// CHECK-NEXT: kiln.yield {{.*}} : tensor<4x8xf32>
// CHECK: kiln.fusion {{.*}} -> tensor<4x8xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.matmul
// CHECK-NEXT: kiln.sub
// CHECK-NEXT: kiln.yield
func.func @rounding_pair_not_split(%x: tensor<4x8xf32>, %r: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %wa = kiln.constant dense<0.3> : tensor<8x8xf32>
  %wb = kiln.constant dense<0.30078125> : tensor<8x8xf32>
  %a = kiln.matmul %x, %wa : tensor<4x8xf32>, tensor<8x8xf32>
  %b = kiln.matmul %r, %wb {kiln.precision = #kiln.precision<bf16>} : tensor<4x8xf32>, tensor<8x8xf32>
  %bd = kiln.cast %b : tensor<4x8xf32> -> tensor<4x8xbf16>
  %bu = kiln.cast %bd : tensor<4x8xbf16> -> tensor<4x8xf32>
  %s = kiln.sub %a, %bu : tensor<4x8xf32>, tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

// The CUDA form: a tensor-core product's bf16 result cast up for an f32
// epilogue is not evaluated inside it (an epilogue reads its sides in the
// anchor's element type): the cast stays a kernel of its own and the f32
// matmul's epilogue reads its f32 result.
// CHECK-LABEL: func @narrow_side_not_in_epilogue
// CHECK: %[[B:.*]] = kiln.matmul {{.*}} : tensor<4x8xbf16>, tensor<8x8xbf16>
// CHECK: %[[BU:.*]] = kiln.cast %[[B]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK: kiln.fusion {{.*}}%[[BU]]{{.*}} -> tensor<4x8xf32>
// CHECK-NEXT: ^bb0({{.*}}: tensor<4x8xf32>, {{.*}}: tensor<8x8xf32>, {{.*}}: tensor<4x8xf32>)
// CHECK-NEXT: kiln.matmul
// CHECK-NEXT: kiln.sub
// CHECK-NEXT: kiln.yield
func.func @narrow_side_not_in_epilogue(%x: tensor<4x8xf32>, %r: tensor<4x8xbf16>) -> tensor<4x8xf32> {
  %wa = kiln.constant dense<0.3> : tensor<8x8xf32>
  %wb = kiln.constant dense<0.5> : tensor<8x8xbf16>
  %a = kiln.matmul %x, %wa : tensor<4x8xf32>, tensor<8x8xf32>
  %b = kiln.matmul %r, %wb {kiln.precision = #kiln.precision<bf16>} : tensor<4x8xbf16>, tensor<8x8xbf16>
  %bu = kiln.cast %b : tensor<4x8xbf16> -> tensor<4x8xf32>
  %s = kiln.sub %a, %bu : tensor<4x8xf32>, tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

// An 8-bit product's epilogue is typed: a residual that is another
// layer's quantized output (read by a second product too) is read as bytes
// and dequantized in the epilogue, its cast up inside the fusion -- no f32
// copy of it written by a cast kernel of its own.
// CHECK-LABEL: func @quantized_residual_in_epilogue
// CHECK: %[[Q:.*]] = kiln.fusion
// CHECK: kiln.fusion %[[Q]], {{.*}} -> tensor<1x6x6x16xui8>
// CHECK: kiln.conv_integer
// CHECK: kiln.cast %{{.*}} : tensor<1x6x6x16xui8> -> tensor<1x6x6x16xf32>
// CHECK: kiln.yield
// CHECK-NOT: kiln.cast
// CHECK: return
func.func @quantized_residual_in_epilogue(%x: tensor<1x6x6x16xui8>) -> tensor<1x6x6x16xui8> {
  %w = kiln.constant dense<3> : tensor<16x16x1x1xi8>
  %zx = kiln.constant dense<128> : tensor<ui8>
  %zw = kiln.constant dense<0> : tensor<i8>
  %s = kiln.constant dense<0.01> : tensor<16xf32>
  %z = kiln.constant dense<128.0> : tensor<f32>
  %c0 = kiln.constant dense<0.0> : tensor<f32>
  %c255 = kiln.constant dense<255.0> : tensor<f32>
  %a = kiln.conv_integer %x, %w, %zx, %zw {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #kiln.layout<nhwc>} : (tensor<1x6x6x16xui8>, tensor<16x16x1x1xi8>, tensor<ui8>, tensor<i8>) -> tensor<1x6x6x16xi32>
  %af = kiln.cast %a : tensor<1x6x6x16xi32> -> tensor<1x6x6x16xf32>
  %as = kiln.mul %af, %s : tensor<1x6x6x16xf32>, tensor<16xf32>
  %ar = kiln.round %as : tensor<1x6x6x16xf32>
  %az = kiln.add %ar, %z : tensor<1x6x6x16xf32>, tensor<f32>
  %am = kiln.max %az, %c0 : tensor<1x6x6x16xf32>, tensor<f32>
  %an = kiln.min %am, %c255 : tensor<1x6x6x16xf32>, tensor<f32>
  %q = kiln.cast %an : tensor<1x6x6x16xf32> -> tensor<1x6x6x16xui8>
  %b = kiln.conv_integer %q, %w, %zx, %zw {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #kiln.layout<nhwc>} : (tensor<1x6x6x16xui8>, tensor<16x16x1x1xi8>, tensor<ui8>, tensor<i8>) -> tensor<1x6x6x16xi32>
  %bf = kiln.cast %b : tensor<1x6x6x16xi32> -> tensor<1x6x6x16xf32>
  %bs = kiln.mul %bf, %s : tensor<1x6x6x16xf32>, tensor<16xf32>
  %qf = kiln.cast %q : tensor<1x6x6x16xui8> -> tensor<1x6x6x16xf32>
  %qd = kiln.sub %qf, %z : tensor<1x6x6x16xf32>, tensor<f32>
  %qs = kiln.mul %qd, %s : tensor<1x6x6x16xf32>, tensor<16xf32>
  %sum = kiln.add %bs, %qs : tensor<1x6x6x16xf32>, tensor<1x6x6x16xf32>
  %sr = kiln.round %sum : tensor<1x6x6x16xf32>
  %sz = kiln.add %sr, %z : tensor<1x6x6x16xf32>, tensor<f32>
  %sm = kiln.max %sz, %c0 : tensor<1x6x6x16xf32>, tensor<f32>
  %sn = kiln.min %sm, %c255 : tensor<1x6x6x16xf32>, tensor<f32>
  %y = kiln.cast %sn : tensor<1x6x6x16xf32> -> tensor<1x6x6x16xui8>
  return %y : tensor<1x6x6x16xui8>
}
