// RUN: kiln-opt --split-input-file --verify-diagnostics %s
// Verifier and type-inference errors of kiln ops.

// Conv whose groups do not divide the channels.
func.func @conv_bad_group(%x: tensor<1x3x8x8xf32>, %w: tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{group 2 must divide the input channels (3)}}
  %y = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x3x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %y : tensor<1x4x6x6xf32>
}

// -----

// Conv weight channels that do not match the input.
func.func @conv_bad_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  // expected-error @+1 {{weight has 2 input channels per group}}
  %y = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %y : tensor<1x4x6x6xf32>
}

// -----

// Shapes that do not broadcast.
func.func @add_no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{operand shapes do not broadcast}}
  %y = kiln.add %a, %b : tensor<2x3xf32>, tensor<4xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Gemm with mismatched inner dimensions.
func.func @gemm_inner(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{inner dimensions differ: 3 vs 4}}
  %y = kiln.gemm %a, %b {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = false} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %y : tensor<2x5xf32>
}

// -----

// MatMul with mismatched inner dimensions.
func.func @matmul_inner(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{inner dimensions differ}}
  %y = kiln.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32>
  return %y : tensor<2x5xf32>
}

// -----

// Reshape that changes the element count.
func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{changes the number of elements from 6 to 7}}
  %y = kiln.reshape %a : tensor<2x3xf32> -> tensor<7xf32>
  return %y : tensor<7xf32>
}

// -----

// Transpose with a non-permutation.
func.func @transpose_perm(%a: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // expected-error @+2 {{perm must be a permutation}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.transpose %a {perm = array<i64: 0, 0>} : tensor<2x3xf32> -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// Clip with min above max.
func.func @clip_range(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{min must not exceed max}}
  %y = kiln.clip %a {min = 6.0 : f32, max = 0.0 : f32} : tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

// Softmax axis out of range.
func.func @softmax_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{axis 2 is out of range}}
  %y = kiln.softmax %a {axis = 2 : i64} : tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Batch norm parameters of the wrong length.
func.func @bn_params(%x: tensor<1x4x2x2xf32>, %p: tensor<3xf32>) -> tensor<1x4x2x2xf32> {
  // expected-error @+1 {{must be vectors of 4 values}}
  %y = kiln.batch_norm %x, %p, %p, %p, %p {epsilon = 1.0e-05 : f32} : tensor<1x4x2x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
  return %y : tensor<1x4x2x2xf32>
}

// -----

// Concat inputs that differ off the axis.
func.func @concat_shapes(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+2 {{inputs differ in dimension 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.concat %a, %b {axis = 1 : i64} : tensor<2x3xf32>, tensor<3x3xf32> -> tensor<2x6xf32>
  return %y : tensor<2x6xf32>
}

// -----

// A convolution window larger than its padded input (onnxruntime refuses it).
func.func @conv_window(%x: tensor<1x1x2x2xf32>, %w: tensor<1x1x3x3xf32>, %b: tensor<1xf32>) -> tensor<1x1x0x0xf32> {
  // expected-error @+2 {{the window spans 3 positions along spatial axis 0, more than the padded input's 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x2x2xf32>, tensor<1x1x3x3xf32>, tensor<1xf32>) -> tensor<1x1x0x0xf32>
  return %y : tensor<1x1x0x0xf32>
}

// -----

func.func @reduce_axes_unsorted(%x: tensor<2x3x4xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axes must be sorted and distinct}}
  %y = kiln.reduce_sum %x {axes = array<i64: 2, 1>, keepdims = false} : tensor<2x3x4xf32> -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

func.func @reduce_axis_range(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %y = kiln.reduce_max %x {axes = array<i64: 2>, keepdims = false} : tensor<2x3xf32> -> tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

func.func @layer_norm_scale(%x: tensor<2x4x8xf32>, %g: tensor<4xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{scale and bias must hold 1 or 8 values, not 4}}
  %y = kiln.layer_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-5 : f32} : tensor<2x4x8xf32>, tensor<4xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

func.func @layer_norm_axis(%x: tensor<2x4xf32>, %g: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %y = kiln.layer_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-5 : f32} : tensor<2x4xf32>, tensor<4xf32>
  return %y : tensor<2x4xf32>
}

// -----

func.func @attention_head_size(%q: tensor<1x4x8xf32>, %k: tensor<1x4x6xf32>) -> tensor<1x4x8xf32> {
  // expected-error @+1 {{query and key differ in head size: 8 vs 6}}
  %y = kiln.attention %q, %k, %q {scale = 1.0 : f32} : tensor<1x4x8xf32>, tensor<1x4x6xf32>, tensor<1x4x8xf32> -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

// -----

func.func @attention_mask(%q: tensor<1x4x8xf32>, %m: tensor<3x4xf32>) -> tensor<1x4x8xf32> {
  // expected-error @+1 {{mask does not broadcast to the score shape}}
  %y = kiln.attention %q, %q, %q, %m {scale = 1.0 : f32} : tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<3x4xf32> -> tensor<1x4x8xf32>
  return %y : tensor<1x4x8xf32>
}

// -----

func.func @string_layout(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+1 {{attribute 'layout' failed to satisfy constraint: a layout: #kiln.layout<nchw> or #kiln.layout<nhwc>}}
  %y = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = "nhwc"} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return %y : tensor<1x4x8x8xf32>
}

// -----

func.func @bad_layout(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  // expected-error @+2 {{expected ::kiln::Layout to be one of: nchw, nhwc}}
  // expected-error @+1 {{failed to parse Kiln_LayoutAttr parameter 'value'}}
  %y = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #kiln.layout<nchw16c>} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return %y : tensor<1x4x8x8xf32>
}

// -----

func.func @string_precision(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'kiln.precision' holds the wrong kind of value: "bf16"}}
  %y = kiln.matmul %x, %w {kiln.precision = "bf16"} : tensor<4x8xf32>, tensor<8x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @nhwc_channels(%x: tensor<1x8x8x3xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x8x8x4xf32> {
  // expected-error @+1 {{weight has 2 input channels per group; the input has 3 channels}}
  %y = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #kiln.layout<nhwc>} : (tensor<1x8x8x3xf32>, tensor<4x2x3x3xf32>) -> tensor<1x8x8x4xf32>
  return %y : tensor<1x8x8x4xf32>
}

// -----

func.func @slice_outside(%x: tensor<2x6xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{dimension 1: the slice reads outside the input's 6 elements}}
  %y = kiln.slice %x {offsets = array<i64: 0, 2>, sizes = array<i64: 2, 3>, strides = array<i64: 1, 2>} : tensor<2x6xf32> -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

func.func @slice_zero_stride(%x: tensor<2x6xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{dimension 1: sizes must be non-negative and strides non-zero}}
  %y = kiln.slice %x {offsets = array<i64: 0, 2>, sizes = array<i64: 2, 3>, strides = array<i64: 1, 0>} : tensor<2x6xf32> -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Arithmetic operands share one element type (kiln.cast converts).
func.func @add_mixed(%x: tensor<4xf16>, %y: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error@+1 {{operand element types differ}}
  %z = kiln.add %x, %y : tensor<4xf16>, tensor<4xf32>
  return %z : tensor<4xf16>
}

// -----

func.func @cast_shape(%x: tensor<4xf16>) -> tensor<2x2xf32> {
  // expected-error@+1 {{requires the same shape for all operands and results}}
  %z = kiln.cast %x : tensor<4xf16> -> tensor<2x2xf32>
  return %z : tensor<2x2xf32>
}

// -----

func.func @compare_mixed(%x: tensor<4xi32>, %y: tensor<4xi64>) -> tensor<4xi1> {
  // expected-error@+1 {{operand element types differ}}
  %z = kiln.compare %x, %y {predicate = "lt"} : tensor<4xi32>, tensor<4xi64>
  return %z : tensor<4xi1>
}

// -----

func.func @compare_predicate(%x: tensor<4xf32>) -> tensor<4xi1> {
  // expected-error@+1 {{whose value is eq, lt, le, gt or ge}}
  %z = kiln.compare %x, %x {predicate = "ne"} : tensor<4xf32>, tensor<4xf32>
  return %z : tensor<4xi1>
}

// -----

// Bitwise and logical ops take integers or bools only.
func.func @and_float(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{must be statically shaped tensor of integer values}}
  %z = kiln.and %x, %x : tensor<4xf32>, tensor<4xf32>
  return %z : tensor<4xf32>
}

// -----

func.func @expand_shape(%x: tensor<3x2xf32>) -> tensor<2x3xf32> {
  // expected-error@+1 {{input shape does not broadcast to the result shape}}
  %z = kiln.expand %x : tensor<3x2xf32> -> tensor<2x3xf32>
  return %z : tensor<2x3xf32>
}

// -----

func.func @scatter_updates(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>, %u: tensor<3x3xf32>) -> tensor<3x4xf32> {
  // expected-error@+1 {{updates must have the indices' shape and the data's element type}}
  %z = kiln.scatter_elements %x, %i, %u {axis = 1 : i64} : tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x3xf32>
  return %z : tensor<3x4xf32>
}

// -----

func.func @scatter_reduction(%x: tensor<3x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>) -> tensor<3x4xf32> {
  // expected-error@+1 {{unknown reduction 'sum'}}
  %z = kiln.scatter_nd %x, %i, %u {reduction = "sum"} : tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>
  return %z : tensor<3x4xf32>
}

// -----

func.func @scatter_nd_tuple(%x: tensor<3x4xf32>, %i: tensor<2x3xi64>, %u: tensor<2xf32>) -> tensor<3x4xf32> {
  // expected-error@+1 {{index tuples of 3 entries for data of rank 2}}
  %z = kiln.scatter_nd %x, %i, %u : tensor<3x4xf32>, tensor<2x3xi64>, tensor<2xf32>
  return %z : tensor<3x4xf32>
}

// -----

func.func @nms_scores(%b: tensor<1x6x4xf32>, %s: tensor<1x2x5xf32>, %n: tensor<1xi64>,
                      %t: tensor<1xf32>) -> tensor<1x2x5xi64> {
  // expected-error@+2 {{scores must be [batches, classes, boxes] for the boxes' batches and boxes}}
  // expected-error@+1 {{'kiln.non_max_suppression' op failed to infer returned types}}
  %k = kiln.non_max_suppression %b, %s, %n, %n, %t, %t {center_point_box = false, has_score_threshold = true} : tensor<1x6x4xf32>, tensor<1x2x5xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xf32>, tensor<1xf32> -> tensor<1x2x5xi64>
  return %k : tensor<1x2x5xi64>
}

// -----

func.func @topk_k(%x: tensor<3x4xf32>) -> tensor<3x5xi64> {
  // expected-error@+2 {{k = 5 is not within the axis' size 4}}
  // expected-error@+1 {{'kiln.topk_indices' op failed to infer returned types}}
  %z = kiln.topk_indices %x {axis = 1 : i64, k = 5 : i64, largest = true} : tensor<3x4xf32> -> tensor<3x5xi64>
  return %z : tensor<3x5xi64>
}

// -----

func.func @narrow_format(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{format must be a narrow type (float8, float4, 4- or 2-bit integer), not 'f16'}}
  %y = kiln.narrow %x {format = f16} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @narrow_carrier(%x: tensor<4xi8>) -> tensor<4xi8> {
  // expected-error@+1 {{carries 'f8E5M2' in 'f32', not 'i8'}}
  %y = kiln.narrow %x {format = f8E5M2} : tensor<4xi8>
  return %y : tensor<4xi8>
}

// -----

func.func @cast_round_mode(%x: tensor<4xf32>) -> tensor<4xf8E8M0FNU> {
  // expected-error@+1 {{round_mode must be "up", "down" or "nearest", not "even"}}
  %y = kiln.cast %x {round_mode = "even"} : tensor<4xf32> -> tensor<4xf8E8M0FNU>
  return %y : tensor<4xf8E8M0FNU>
}

// -----

func.func @undeclared(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{has 'kiln.precison', which the kiln dialect does not declare}}
  %y = kiln.relu %x {kiln.precison = #kiln.precision<bf16>} : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

func.func @roi_align_rois(%x: tensor<1x8x16x16xf32>, %r: tensor<5x5xf32>, %i: tensor<5xi64>)
    -> tensor<5x8x7x7xf32> {
  // expected-error @+1 {{rois must be [R, 4]}}
  %y = kiln.roi_align %x, %r, %i {half_pixel = true, max = false, sampling_ratio = 0 : i64, spatial_scale = 1.0 : f32} : tensor<1x8x16x16xf32>, tensor<5x5xf32>, tensor<5xi64> -> tensor<5x8x7x7xf32>
  return %y : tensor<5x8x7x7xf32>
}

// -----

func.func @roi_align_result(%x: tensor<1x8x16x16xf32>, %r: tensor<5x4xf32>, %i: tensor<5xi64>)
    -> tensor<5x4x7x7xf32> {
  // expected-error @+1 {{result must be [R, C, H', W'] for the rois' R and the input's C}}
  %y = kiln.roi_align %x, %r, %i {half_pixel = true, max = false, sampling_ratio = 0 : i64, spatial_scale = 1.0 : f32} : tensor<1x8x16x16xf32>, tensor<5x4xf32>, tensor<5xi64> -> tensor<5x4x7x7xf32>
  return %y : tensor<5x4x7x7xf32>
}

// -----

func.func @roi_align_ratio(%x: tensor<1x8x16x16xf32>, %r: tensor<5x4xf32>, %i: tensor<5xi64>)
    -> tensor<5x8x7x7xf32> {
  // expected-error @+1 {{sampling_ratio must be 0 or more}}
  %y = kiln.roi_align %x, %r, %i {half_pixel = true, max = false, sampling_ratio = -1 : i64, spatial_scale = 1.0 : f32} : tensor<1x8x16x16xf32>, tensor<5x4xf32>, tensor<5xi64> -> tensor<5x8x7x7xf32>
  return %y : tensor<5x8x7x7xf32>
}

// -----

// An 8-bit product whose inner dimensions differ.
func.func @matmul_integer_inner(%a: tensor<3x4xui8>, %w: tensor<5x2xi8>, %az: tensor<ui8>,
                                %wz: tensor<i8>) -> tensor<3x2xi32> {
  // expected-error @+1 {{inner dimensions differ: 4 vs 5}}
  %y = kiln.matmul_integer %a, %w, %az, %wz : tensor<3x4xui8>, tensor<5x2xi8>, tensor<ui8>, tensor<i8>
  return %y : tensor<3x2xi32>
}

// -----

// An 8-bit product whose zero point is not its operand's type.
func.func @matmul_integer_zero_type(%a: tensor<3x4xui8>, %w: tensor<4x2xi8>, %az: tensor<i8>,
                                    %wz: tensor<i8>) -> tensor<3x2xi32> {
  // expected-error @+1 {{a zero point must have its operand's element type}}
  %y = kiln.matmul_integer %a, %w, %az, %wz : tensor<3x4xui8>, tensor<4x2xi8>, tensor<i8>, tensor<i8>
  return %y : tensor<3x2xi32>
}

// -----

// An 8-bit product of 32-bit integers.
func.func @matmul_integer_wide(%a: tensor<3x4xi32>, %w: tensor<4x2xi8>, %az: tensor<i32>,
                               %wz: tensor<i8>) -> tensor<3x2xi32> {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 8-bit signless integer or 8-bit unsigned integer values}}
  %y = kiln.matmul_integer %a, %w, %az, %wz : tensor<3x4xi32>, tensor<4x2xi8>, tensor<i32>, tensor<i8>
  return %y : tensor<3x2xi32>
}

// -----

// An 8-bit convolution whose groups do not divide the channels.
func.func @conv_integer_groups(%x: tensor<1x3x8x8xui8>, %w: tensor<4x1x3x3xi8>, %xz: tensor<ui8>,
                               %wz: tensor<i8>) -> tensor<1x4x6x6xi32> {
  // expected-error @+1 {{group 2 must divide the input channels (3) and output channels (4)}}
  %y = kiln.conv_integer %x, %w, %xz, %wz {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x3x8x8xui8>, tensor<4x1x3x3xi8>, tensor<ui8>, tensor<i8>) -> tensor<1x4x6x6xi32>
  return %y : tensor<1x4x6x6xi32>
}

// -----

// An 8-bit convolution whose zero point is not a scalar.
func.func @conv_integer_zero_shape(%x: tensor<1x3x8x8xui8>, %w: tensor<4x3x3x3xi8>,
                                   %xz: tensor<1xui8>, %wz: tensor<i8>) -> tensor<1x4x6x6xi32> {
  // expected-error @+2 {{the zero points must be scalars}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.conv_integer %x, %w, %xz, %wz {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xui8>, tensor<4x3x3x3xi8>, tensor<1xui8>, tensor<i8>) -> tensor<1x4x6x6xi32>
  return %y : tensor<1x4x6x6xi32>
}

// -----

// Block-quantized weights whose scales miss a block (K = 80 in blocks of 32: 3).
func.func @matmul_nbits_blocks(%a: tensor<3x80xf32>, %w: tensor<6x80xui8>, %s: tensor<6x2xf32>,
                               %z: tensor<6x2xui8>) -> tensor<3x6xf32> {
  // expected-error @+1 {{the scale and zero point must be 6x3 (a value per column and block)}}
  %y = kiln.matmul_nbits %a, %w, %s, %z {bits = 4 : i64, block_size = 32 : i64} : tensor<3x80xf32>, tensor<6x80xui8>, tensor<6x2xf32>, tensor<6x2xui8>
  return %y : tensor<3x6xf32>
}

// -----

// Block-quantized weights of 9-bit codes.
func.func @matmul_nbits_bits(%a: tensor<3x64xf32>, %w: tensor<6x64xui8>, %s: tensor<6x2xf32>,
                             %z: tensor<6x2xui8>) -> tensor<3x6xf32> {
  // expected-error @+1 {{bits must be 2 to 8}}
  %y = kiln.matmul_nbits %a, %w, %s, %z {bits = 9 : i64, block_size = 32 : i64} : tensor<3x64xf32>, tensor<6x64xui8>, tensor<6x2xf32>, tensor<6x2xui8>
  return %y : tensor<3x6xf32>
}

// -----

// Block-quantized weights whose rows are not the lhs's.
func.func @matmul_nbits_inner(%a: tensor<3x60xf32>, %w: tensor<6x64xui8>, %s: tensor<6x2xf32>,
                              %z: tensor<6x2xui8>) -> tensor<3x6xf32> {
  // expected-error @+1 {{the lhs's rows have 60 values; the weight's columns 64}}
  %y = kiln.matmul_nbits %a, %w, %s, %z {bits = 4 : i64, block_size = 32 : i64} : tensor<3x60xf32>, tensor<6x64xui8>, tensor<6x2xf32>, tensor<6x2xui8>
  return %y : tensor<3x6xf32>
}
