// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// Every kiln op prints in a form that parses back to the same IR.

// CHECK-LABEL: func @cnn
func.func @cnn(%x: tensor<1x3x8x8xf32>) -> tensor<1x10xf32> {
  // CHECK: kiln.constant dense<{{.*}}> : tensor<4xf32>
  %b = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %w = kiln.constant dense<0.5> : tensor<4x3x3x3xf32>
  // CHECK: kiln.conv %{{.*}}, %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  // CHECK: kiln.batch_norm
  %n = kiln.batch_norm %c, %b, %b, %b, %b {epsilon = 1.0e-05 : f32} : tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
  // CHECK: kiln.relu %{{.*}} : tensor<1x4x8x8xf32>
  %r = kiln.relu %n : tensor<1x4x8x8xf32>
  // CHECK: kiln.clip %{{.*}} {max = 6.000000e+00 : f32, min = 0.000000e+00 : f32}
  %r6 = kiln.clip %r {min = 0.0 : f32, max = 6.0 : f32} : tensor<1x4x8x8xf32>
  // CHECK: kiln.max_pool
  %p = kiln.max_pool %r6 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
  // CHECK: kiln.avg_pool
  %a = kiln.avg_pool %p {kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = true} : tensor<1x4x4x4xf32> -> tensor<1x4x5x5xf32>
  // CHECK: kiln.sigmoid
  %s = kiln.sigmoid %a : tensor<1x4x5x5xf32>
  // CHECK: kiln.tanh
  %t = kiln.tanh %s : tensor<1x4x5x5xf32>
  // CHECK: kiln.add {{.*}} : tensor<1x4x5x5xf32>, tensor<4x1x1xf32>
  %bias = kiln.constant dense<1.0> : tensor<4x1x1xf32>
  %sum = kiln.add %t, %bias : tensor<1x4x5x5xf32>, tensor<4x1x1xf32>
  %sub = kiln.sub %sum, %bias : tensor<1x4x5x5xf32>, tensor<4x1x1xf32>
  %mul = kiln.mul %sub, %bias : tensor<1x4x5x5xf32>, tensor<4x1x1xf32>
  %div = kiln.div %mul, %bias : tensor<1x4x5x5xf32>, tensor<4x1x1xf32>
  // CHECK: kiln.global_avg_pool
  %g = kiln.global_avg_pool %div : tensor<1x4x5x5xf32> -> tensor<1x4x1x1xf32>
  // CHECK: kiln.reshape %{{.*}} : tensor<1x4x1x1xf32> -> tensor<1x4xf32>
  %f = kiln.reshape %g : tensor<1x4x1x1xf32> -> tensor<1x4xf32>
  %cat = kiln.concat %f, %f {axis = 1 : i64} : tensor<1x4xf32>, tensor<1x4xf32> -> tensor<1x8xf32>
  %fw = kiln.constant dense<0.1> : tensor<10x8xf32>
  %fb = kiln.constant dense<0.0> : tensor<10xf32>
  // CHECK: kiln.gemm {{.*}} : (tensor<1x8xf32>, tensor<10x8xf32>, tensor<10xf32>) -> tensor<1x10xf32>
  %y = kiln.gemm %cat, %fw, %fb {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<1x8xf32>, tensor<10x8xf32>, tensor<10xf32>) -> tensor<1x10xf32>
  // CHECK: kiln.softmax %{{.*}} {axis = 1 : i64}
  %sm = kiln.softmax %y {axis = 1 : i64} : tensor<1x10xf32>
  return %sm : tensor<1x10xf32>
}

// CHECK-LABEL: func @matmul_transpose
func.func @matmul_transpose(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x5x3xf32> {
  // CHECK: kiln.matmul %{{.*}}, %{{.*}} : tensor<2x3x4xf32>, tensor<4x5xf32>
  %m = kiln.matmul %a, %b : tensor<2x3x4xf32>, tensor<4x5xf32>
  // CHECK: kiln.transpose %{{.*}} {perm = array<i64: 0, 2, 1>} : tensor<2x3x5xf32> -> tensor<2x5x3xf32>
  %t = kiln.transpose %m {perm = array<i64: 0, 2, 1>} : tensor<2x3x5xf32> -> tensor<2x5x3xf32>
  return %t : tensor<2x5x3xf32>
}

// CHECK-LABEL: func @transformer_ops
func.func @transformer_ops(%x: tensor<2x4x8xf32>, %g: tensor<8xf32>, %m: tensor<1x1x4x4xf32>) -> tensor<2x4xf32> {
  // CHECK: kiln.exp %{{.*}} : tensor<2x4x8xf32>
  %e = kiln.exp %x : tensor<2x4x8xf32>
  // CHECK: kiln.log
  %l = kiln.log %e : tensor<2x4x8xf32>
  // CHECK: kiln.sqrt
  %s = kiln.sqrt %e : tensor<2x4x8xf32>
  // CHECK: kiln.erf
  %er = kiln.erf %s : tensor<2x4x8xf32>
  // CHECK: kiln.neg
  %n = kiln.neg %er : tensor<2x4x8xf32>
  // CHECK: kiln.reciprocal
  %r = kiln.reciprocal %n : tensor<2x4x8xf32>
  // CHECK: kiln.abs
  %a = kiln.abs %r : tensor<2x4x8xf32>
  // CHECK: kiln.silu
  %si = kiln.silu %a : tensor<2x4x8xf32>
  // CHECK: kiln.hard_swish
  %hs = kiln.hard_swish %si : tensor<2x4x8xf32>
  // CHECK: kiln.gelu %{{.*}} {approximate = true}
  %ge = kiln.gelu %hs {approximate = true} : tensor<2x4x8xf32>
  // CHECK: kiln.hard_sigmoid %{{.*}} {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32}
  %hg = kiln.hard_sigmoid %ge {alpha = 0.2 : f32, beta = 0.5 : f32} : tensor<2x4x8xf32>
  // CHECK: kiln.leaky_relu
  %lr = kiln.leaky_relu %hg {alpha = 0.01 : f32} : tensor<2x4x8xf32>
  // CHECK: kiln.pow %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<8xf32>
  %p = kiln.pow %lr, %g : tensor<2x4x8xf32>, tensor<8xf32>
  // CHECK: kiln.max
  %mx = kiln.max %p, %g : tensor<2x4x8xf32>, tensor<8xf32>
  // CHECK: kiln.min
  %mn = kiln.min %mx, %l : tensor<2x4x8xf32>, tensor<2x4x8xf32>
  // CHECK: kiln.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i64, epsilon = 9.99999974E-6 : f32} : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  %ln = kiln.layer_norm %mn, %g, %g {axis = 2 : i64, epsilon = 1.0e-5 : f32} : tensor<2x4x8xf32>, tensor<8xf32>, tensor<8xf32>
  // CHECK: kiln.layer_norm %{{.*}}, %{{.*}} {axis = 2 : i64, epsilon = 1.000000e-03 : f32} : tensor<2x4x8xf32>, tensor<8xf32>{{$}}
  %ln2 = kiln.layer_norm %ln, %g {axis = 2 : i64, epsilon = 1.0e-3 : f32} : tensor<2x4x8xf32>, tensor<8xf32>
  %q = kiln.reshape %ln2 : tensor<2x4x8xf32> -> tensor<1x2x4x8xf32>
  // CHECK: kiln.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 0.353553385 : f32} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xf32> -> tensor<1x2x4x8xf32>
  %att = kiln.attention %q, %q, %q, %m {scale = 0.353553385 : f32} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x4x4xf32> -> tensor<1x2x4x8xf32>
  // CHECK: kiln.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.000000e+00 : f32} : {{.*}} -> tensor<1x2x4x8xf32>
  %att2 = kiln.attention %att, %att, %att {scale = 1.0 : f32} : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32> -> tensor<1x2x4x8xf32>
  %back = kiln.reshape %att2 : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  // CHECK: kiln.reduce_mean %{{.*}} {axes = array<i64: 2>, keepdims = false} : tensor<2x4x8xf32> -> tensor<2x4xf32>
  %rm = kiln.reduce_mean %back {axes = array<i64: 2>, keepdims = false} : tensor<2x4x8xf32> -> tensor<2x4xf32>
  // CHECK: kiln.reduce_sum
  %rs = kiln.reduce_sum %rm {axes = array<i64: 0>, keepdims = true} : tensor<2x4xf32> -> tensor<1x4xf32>
  // CHECK: kiln.reduce_max
  %rx = kiln.reduce_max %rs {axes = array<i64: 0, 1>, keepdims = true} : tensor<1x4xf32> -> tensor<1x1xf32>
  // CHECK: kiln.reduce_min
  %rn = kiln.reduce_min %rm {axes = array<i64: 1>, keepdims = true} : tensor<2x4xf32> -> tensor<2x1xf32>
  %sum = kiln.add %rm, %rn : tensor<2x4xf32>, tensor<2x1xf32>
  %out = kiln.add %sum, %rx : tensor<2x4xf32>, tensor<1x1xf32>
  return %out : tensor<2x4xf32>
}

// Channels-last forms: the result shape follows the layout.
// CHECK-LABEL: func @nhwc
func.func @nhwc(%x: tensor<1x8x8x3xf32>) -> tensor<1x1x1x4xf32> {
  %w = kiln.constant dense<0.5> : tensor<4x3x3x3xf32>
  // CHECK: kiln.conv {{.*}}layout = #kiln.layout<nhwc>{{.*}} -> tensor<1x8x8x4xf32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #kiln.layout<nhwc>} : (tensor<1x8x8x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x8x8x4xf32>
  // CHECK: kiln.avg_pool {{.*}}layout = #kiln.layout<nhwc>{{.*}} : tensor<1x8x8x4xf32> -> tensor<1x4x4x4xf32>
  %p = kiln.avg_pool %c {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false, layout = #kiln.layout<nhwc>} : tensor<1x8x8x4xf32> -> tensor<1x4x4x4xf32>
  // CHECK: kiln.global_avg_pool %{{.*}} {layout = #kiln.layout<nhwc>} : tensor<1x4x4x4xf32> -> tensor<1x1x1x4xf32>
  %g = kiln.global_avg_pool %p {layout = #kiln.layout<nhwc>} : tensor<1x4x4x4xf32> -> tensor<1x1x1x4xf32>
  return %g : tensor<1x1x1x4xf32>
}

// CHECK-LABEL: func @slice
func.func @slice(%x: tensor<2x6x10xf32>) -> tensor<2x2x3xf32> {
  // CHECK: kiln.slice %arg0 {offsets = array<i64: 0, 1, 9>, sizes = array<i64: 2, 2, 3>, strides = array<i64: 1, 2, -3>} : tensor<2x6x10xf32> -> tensor<2x2x3xf32>
  %y = kiln.slice %x {offsets = array<i64: 0, 1, 9>, sizes = array<i64: 2, 2, 3>, strides = array<i64: 1, 2, -3>} : tensor<2x6x10xf32> -> tensor<2x2x3xf32>
  return %y : tensor<2x2x3xf32>
}

// CHECK-LABEL: func @where
func.func @where(%c: tensor<4x1xf32>, %x: tensor<4x8xf32>, %f: tensor<f32>) -> tensor<4x8xf32> {
  // CHECK: kiln.where %arg0, %arg1, %arg2 : tensor<4x1xf32>, tensor<4x8xf32>, tensor<f32>
  %y = kiln.where %c, %x, %f : tensor<4x1xf32>, tensor<4x8xf32>, tensor<f32>
  return %y : tensor<4x8xf32>
}

// Integer, bool and comparison ops; float functions.
// CHECK-LABEL: func @logic
func.func @logic(%x: tensor<2x3xf32>, %a: tensor<3xi32>, %u: tensor<3xui8>, %c: tensor<2x3xi1>) -> (tensor<2x3xf32>, tensor<3xi32>, tensor<3xui8>, tensor<2x3xi1>, tensor<4x2x3xf32>) {
  // CHECK: kiln.compare %{{.*}}, %{{.*}} {predicate = "ge"} : tensor<2x3xf32>, tensor<2x3xf32>
  %ge = kiln.compare %x, %x {predicate = "ge"} : tensor<2x3xf32>, tensor<2x3xf32>
  // CHECK: kiln.xor {{.*}} : tensor<2x3xi1>, tensor<2x3xi1>
  %b = kiln.xor %ge, %c : tensor<2x3xi1>, tensor<2x3xi1>
  // CHECK: kiln.not {{.*}} : tensor<2x3xi1>
  %nb = kiln.not %b : tensor<2x3xi1>
  // CHECK: kiln.where {{.*}} : tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>
  %w = kiln.where %nb, %x, %x : tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>
  // CHECK: kiln.atanh
  %t = kiln.atanh %w : tensor<2x3xf32>
  // CHECK: kiln.round
  %r = kiln.round %t : tensor<2x3xf32>
  // CHECK: kiln.mod {{.*}} {fmod = true} : tensor<3xi32>, tensor<3xi32>
  %m = kiln.mod %a, %a {fmod = true} : tensor<3xi32>, tensor<3xi32>
  // CHECK: kiln.sign {{.*}} : tensor<3xi32>
  %s = kiln.sign %m : tensor<3xi32>
  // CHECK: kiln.shl {{.*}} : tensor<3xui8>, tensor<3xui8>
  %sh = kiln.shl %u, %u : tensor<3xui8>, tensor<3xui8>
  // CHECK: kiln.is_nan {{.*}} : tensor<2x3xf32> -> tensor<2x3xi1>
  %n = kiln.is_nan %r : tensor<2x3xf32> -> tensor<2x3xi1>
  // CHECK: kiln.expand {{.*}} : tensor<2x3xf32> -> tensor<4x2x3xf32>
  %e = kiln.expand %r : tensor<2x3xf32> -> tensor<4x2x3xf32>
  return %r, %s, %sh, %n, %e : tensor<2x3xf32>, tensor<3xi32>, tensor<3xui8>, tensor<2x3xi1>, tensor<4x2x3xf32>
}

// CHECK-LABEL: func.func @scatters
func.func @scatters(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xf32>,
                    %t: tensor<2x1xi64>, %v: tensor<2x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) {
  // CHECK: kiln.scatter_elements {{.*}} {axis = 1 : i64, reduction = "add"} : tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>
  %a = kiln.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "add"} : tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>
  // CHECK: kiln.scatter_nd {{.*}} : tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>
  // CHECK-NOT: reduction
  %b = kiln.scatter_nd %x, %t, %v : tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>
  // CHECK: kiln.topk_indices {{.*}} {axis = 0 : i64, k = 2 : i64, largest = true} : tensor<3x4xf32> -> tensor<2x4xi64>
  %c = kiln.topk_indices %b {axis = 0 : i64, k = 2 : i64, largest = true} : tensor<3x4xf32> -> tensor<2x4xi64>
  return %a, %b : tensor<3x4xf32>, tensor<3x4xf32>
}

// CHECK-LABEL: func.func @nms
func.func @nms(%b: tensor<2x6x4xf32>, %s: tensor<2x3x6xf32>, %n: tensor<1xi64>,
               %iou: tensor<1xf32>) -> tensor<2x3x6xi64> {
  // CHECK: kiln.non_max_suppression {{.*}} {center_point_box = true, has_score_threshold = false} : tensor<2x6x4xf32>, tensor<2x3x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xf32>, tensor<1xf32> -> tensor<2x3x6xi64>
  %k = kiln.non_max_suppression %b, %s, %n, %n, %iou, %iou {center_point_box = true, has_score_threshold = false} : tensor<2x6x4xf32>, tensor<2x3x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xf32>, tensor<1xf32> -> tensor<2x3x6xi64>
  return %k : tensor<2x3x6xi64>
}

// Narrow storage types: casts into them (saturate, round_mode) and
// kiln.narrow on their carriers.
// CHECK-LABEL: func @narrow
// CHECK: kiln.cast %arg0 {saturate = false} : tensor<4xf32> -> tensor<4xf8E4M3FN>
// CHECK: kiln.cast %arg0 {round_mode = "down"} : tensor<4xf32> -> tensor<4xf8E8M0FNU>
// CHECK: kiln.narrow %arg0 {format = f4E2M1FN} : tensor<4xf32>
// CHECK: kiln.narrow %arg1 {format = ui2} : tensor<4xui8>
func.func @narrow(%x: tensor<4xf32>, %u: tensor<4xui8>)
    -> (tensor<4xf8E4M3FN>, tensor<4xf8E8M0FNU>, tensor<4xf32>, tensor<4xui8>) {
  %a = kiln.cast %x {saturate = false} : tensor<4xf32> -> tensor<4xf8E4M3FN>
  %b = kiln.cast %x {round_mode = "down"} : tensor<4xf32> -> tensor<4xf8E8M0FNU>
  %c = kiln.narrow %x {format = f4E2M1FN} : tensor<4xf32>
  %d = kiln.narrow %u {format = ui2} : tensor<4xui8>
  return %a, %b, %c, %d : tensor<4xf8E4M3FN>, tensor<4xf8E8M0FNU>, tensor<4xf32>, tensor<4xui8>
}

// Ceil mode, a window longer than the padded input: one output where it
// falls short by less than a stride (W: 3 + 1 padded against 5, stride 3),
// none where by a stride or more (H: 2 + 1 padded against 6, stride 3).
// CHECK-LABEL: func @pool_window_past_input
func.func @pool_window_past_input(%x: tensor<1x2x2x3xf32>) -> (tensor<1x2x1x1xf32>, tensor<1x2x0x1xf32>) {
  // CHECK: kiln.max_pool {{.*}} -> tensor<1x2x1x1xf32>
  %a = kiln.max_pool %x {kernel_shape = array<i64: 3, 5>, strides = array<i64: 3, 3>, pads = array<i64: 0, 1, 1, 0>, dilations = array<i64: 1, 1>, ceil_mode = true, count_include_pad = false} : tensor<1x2x2x3xf32> -> tensor<1x2x1x1xf32>
  // CHECK: kiln.avg_pool {{.*}} -> tensor<1x2x0x1xf32>
  %b = kiln.avg_pool %x {kernel_shape = array<i64: 6, 5>, strides = array<i64: 3, 3>, pads = array<i64: 0, 1, 1, 0>, dilations = array<i64: 1, 1>, ceil_mode = true, count_include_pad = false} : tensor<1x2x2x3xf32> -> tensor<1x2x0x1xf32>
  return %a, %b : tensor<1x2x1x1xf32>, tensor<1x2x0x1xf32>
}

// CHECK-LABEL: func.func @roi_align
func.func @roi_align(%x: tensor<1x8x16x16xf32>, %r: tensor<5x4xf32>, %i: tensor<5xi64>)
    -> tensor<5x8x7x7xf32> {
  // CHECK: kiln.roi_align %arg0, %arg1, %arg2 {half_pixel = true, max = false, sampling_ratio = 2 : i64, spatial_scale = 2.500000e-01 : f32} : tensor<1x8x16x16xf32>, tensor<5x4xf32>, tensor<5xi64> -> tensor<5x8x7x7xf32>
  %y = kiln.roi_align %x, %r, %i {half_pixel = true, max = false, sampling_ratio = 2 : i64, spatial_scale = 0.25 : f32} : tensor<1x8x16x16xf32>, tensor<5x4xf32>, tensor<5xi64> -> tensor<5x8x7x7xf32>
  return %y : tensor<5x8x7x7xf32>
}

// An 8-bit integer product: a batch of uint8 rows times int8 weights.
// CHECK-LABEL: func @matmul_integer
func.func @matmul_integer(%a: tensor<2x3x4xui8>, %w: tensor<4x5xi8>, %az: tensor<ui8>,
                          %wz: tensor<i8>) -> tensor<2x3x5xi32> {
  // CHECK: kiln.matmul_integer %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x3x4xui8>, tensor<4x5xi8>, tensor<ui8>, tensor<i8>
  %y = kiln.matmul_integer %a, %w, %az, %wz : tensor<2x3x4xui8>, tensor<4x5xi8>, tensor<ui8>, tensor<i8>
  return %y : tensor<2x3x5xi32>
}

// A product on 4-bit codes in blocks of 32 k (K = 80: the last block short).
// CHECK-LABEL: func @matmul_nbits
func.func @matmul_nbits(%a: tensor<2x3x80xf32>, %w: tensor<6x80xui8>, %s: tensor<6x3xf32>,
                        %z: tensor<6x3xui8>) -> tensor<2x3x6xf32> {
  // CHECK: kiln.matmul_nbits %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {bits = 4 : i64, block_size = 32 : i64} : tensor<2x3x80xf32>, tensor<6x80xui8>, tensor<6x3xf32>, tensor<6x3xui8>
  %y = kiln.matmul_nbits %a, %w, %s, %z {bits = 4 : i64, block_size = 32 : i64} : tensor<2x3x80xf32>, tensor<6x80xui8>, tensor<6x3xf32>, tensor<6x3xui8>
  return %y : tensor<2x3x6xf32>
}

// An 8-bit convolution: NHWC uint8 input, OIHW int8 weights, int32 sums.
// CHECK-LABEL: func @conv_integer
func.func @conv_integer(%x: tensor<1x8x8x4xui8>, %w: tensor<6x2x3x3xi8>, %xz: tensor<ui8>,
                        %wz: tensor<i8>) -> tensor<1x4x4x6xi32> {
  // CHECK: kiln.conv_integer %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, group = 2 : i64, layout = #kiln.layout<nhwc>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x8x8x4xui8>, tensor<6x2x3x3xi8>, tensor<ui8>, tensor<i8>) -> tensor<1x4x4x6xi32>
  %y = kiln.conv_integer %x, %w, %xz, %wz {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64, layout = #kiln.layout<nhwc>} : (tensor<1x8x8x4xui8>, tensor<6x2x3x3xi8>, tensor<ui8>, tensor<i8>) -> tensor<1x4x4x6xi32>
  return %y : tensor<1x4x4x6xi32>
}
