// RUN: kiln-opt --split-input-file --kiln-fuse="byte-convs=true" %s | FileCheck %s --check-prefix=BYTES
// RUN: kiln-opt --split-input-file --kiln-fuse %s | FileCheck %s --check-prefix=F32

// A depthwise NHWC conv between 8-bit activations (the QDQ form after
// kiln-integer-contractions: its input cast(q) - zero, its result
// requantized). With byte-convs its kernel takes the input's cast and
// subtraction as a prologue and ends in the cast to ui8: the producer's
// epilogue ends at its own 8-bit result (it writes bytes, not the f32 of its
// rounding pair), and no cast kernel is left.
// BYTES-LABEL: func @byte_depthwise
// BYTES: %[[Q:.*]] = kiln.fusion %arg0, {{.*}} -> tensor<1x8x8x16xui8> {
// BYTES: kiln.conv_integer
// BYTES-NOT: kiln.cast %{{.*}} : tensor<1x8x8x16xui8> -> tensor<1x8x8x16xf32>
// BYTES: kiln.yield
// BYTES: %[[D:.*]] = kiln.fusion %[[Q]], {{.*}} -> tensor<1x8x8x16xui8> {
// BYTES: ^bb0(%[[IN:.*]]: tensor<1x8x8x16xui8>
// BYTES-NEXT: %[[F:.*]] = kiln.cast %[[IN]] : tensor<1x8x8x16xui8> -> tensor<1x8x8x16xf32>
// BYTES-NEXT: %[[S:.*]] = kiln.sub %[[F]],
// BYTES-NEXT: kiln.conv %[[S]],
// BYTES: kiln.round
// BYTES: kiln.min
// BYTES-NEXT: %[[OUT:.*]] = kiln.cast %{{.*}} : tensor<1x8x8x16xf32> -> tensor<1x8x8x16xui8>
// BYTES-NEXT: kiln.yield %[[OUT]]
// BYTES: return %[[D]]
// Without the option (the CUDA targets) the conv reads f32 and a cast
// kernel writes the bytes.
// F32-LABEL: func @byte_depthwise
// F32: kiln.fusion {{.*}} -> tensor<1x8x8x16xf32> {
// F32: kiln.conv_integer
// F32: kiln.fusion {{.*}} -> tensor<1x8x8x16xf32> {
// F32-NEXT: ^bb0
// F32-NEXT: kiln.conv
// F32: %[[C:.*]] = kiln.cast %{{.*}} : tensor<1x8x8x16xf32> -> tensor<1x8x8x16xui8>
// F32: return %[[C]]
func.func @byte_depthwise(%x: tensor<1x8x8x16xui8>) -> tensor<1x8x8x16xui8> {
  %w = kiln.constant dense<3> : tensor<16x16x1x1xi8>
  %zx = kiln.constant dense<128> : tensor<ui8>
  %zw = kiln.constant dense<0> : tensor<i8>
  %s = kiln.constant dense<0.01> : tensor<16xf32>
  %z = kiln.constant dense<128.0> : tensor<f32>
  %c0 = kiln.constant dense<0.0> : tensor<f32>
  %c255 = kiln.constant dense<255.0> : tensor<f32>
  %dw = kiln.constant dense<0.5> : tensor<16x1x3x3xf32>
  %db = kiln.constant dense<0.25> : tensor<16xf32>
  %a = kiln.conv_integer %x, %w, %zx, %zw {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout = #kiln.layout<nhwc>} : (tensor<1x8x8x16xui8>, tensor<16x16x1x1xi8>, tensor<ui8>, tensor<i8>) -> tensor<1x8x8x16xi32>
  %af = kiln.cast %a : tensor<1x8x8x16xi32> -> tensor<1x8x8x16xf32>
  %as = kiln.mul %af, %s : tensor<1x8x8x16xf32>, tensor<16xf32>
  %ar = kiln.round %as : tensor<1x8x8x16xf32>
  %az = kiln.add %ar, %z : tensor<1x8x8x16xf32>, tensor<f32>
  %am = kiln.max %az, %c0 : tensor<1x8x8x16xf32>, tensor<f32>
  %an = kiln.min %am, %c255 : tensor<1x8x8x16xf32>, tensor<f32>
  %q = kiln.cast %an : tensor<1x8x8x16xf32> -> tensor<1x8x8x16xui8>
  %qf = kiln.cast %q : tensor<1x8x8x16xui8> -> tensor<1x8x8x16xf32>
  %qd = kiln.sub %qf, %z : tensor<1x8x8x16xf32>, tensor<f32>
  %d = kiln.conv %qd, %dw, %db {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 16 : i64, layout = #kiln.layout<nhwc>} : (tensor<1x8x8x16xf32>, tensor<16x1x3x3xf32>, tensor<16xf32>) -> tensor<1x8x8x16xf32>
  %dr = kiln.round %d : tensor<1x8x8x16xf32>
  %dz = kiln.add %dr, %z : tensor<1x8x8x16xf32>, tensor<f32>
  %dm = kiln.max %dz, %c0 : tensor<1x8x8x16xf32>, tensor<f32>
  %dn = kiln.min %dm, %c255 : tensor<1x8x8x16xf32>, tensor<f32>
  %y = kiln.cast %dn : tensor<1x8x8x16xf32> -> tensor<1x8x8x16xui8>
  return %y : tensor<1x8x8x16xui8>
}

// -----

// A byte conv's result that is not quantized again (an f32 output): the
// prologue alone, the epilogue in f32. A signed input without a zero point:
// the cast alone.
// BYTES-LABEL: func @byte_input_only
// BYTES: kiln.fusion %arg0, {{.*}} -> tensor<1x5x7x20xf32> {
// BYTES-NEXT: ^bb0(%[[IN:.*]]: tensor<1x5x7x20xi8>
// BYTES-NEXT: %[[F:.*]] = kiln.cast %[[IN]] : tensor<1x5x7x20xi8> -> tensor<1x5x7x20xf32>
// BYTES-NEXT: kiln.conv %[[F]],
// BYTES-NEXT: kiln.relu
// BYTES-NEXT: kiln.yield
// F32-LABEL: func @byte_input_only
// F32: kiln.cast %arg0
// F32: kiln.fusion
// F32-NEXT: ^bb0
// F32-NEXT: kiln.conv
func.func @byte_input_only(%q: tensor<1x5x7x20xi8>) -> tensor<1x5x7x20xf32> {
  %dw = kiln.constant dense<0.5> : tensor<20x1x5x5xf32>
  %f = kiln.cast %q : tensor<1x5x7x20xi8> -> tensor<1x5x7x20xf32>
  %d = kiln.conv %f, %dw {strides = array<i64: 1, 1>, pads = array<i64: 4, 2, 4, 6>, dilations = array<i64: 2, 2>, group = 20 : i64, layout = #kiln.layout<nhwc>} : (tensor<1x5x7x20xf32>, tensor<20x1x5x5xf32>) -> tensor<1x5x7x20xf32>
  %r = kiln.relu %d : tensor<1x5x7x20xf32>
  return %r : tensor<1x5x7x20xf32>
}

// -----

// Not byte convs: two outputs per channel (the direct kernel's general
// form), weights that are not constants, NCHW, and a dilated window over
// 8004 padded columns (in the register form, but its ring of 5 rows x 8004
// pixels x 16 floats would not fit 64K floats). Their inputs' casts stay
// kernels of their own.
// BYTES-LABEL: func @not_byte_convs
// BYTES-COUNT-2: kiln.cast %arg0 : tensor<1x6x6x8xui8> -> tensor<1x6x6x8xf32>
// BYTES: kiln.cast %arg2 : tensor<1x8x6x6xui8> -> tensor<1x8x6x6xf32>
// BYTES: kiln.cast %arg3 : tensor<1x4x8000x1xui8> -> tensor<1x4x8000x1xf32>
// BYTES-NOT: kiln.fusion
// BYTES: return
func.func @not_byte_convs(%q: tensor<1x6x6x8xui8>, %wv: tensor<8x1x3x3xf32>, %qc: tensor<1x8x6x6xui8>, %qw: tensor<1x4x8000x1xui8>) -> (tensor<1x6x6x16xf32>, tensor<1x6x6x8xf32>, tensor<1x8x6x6xf32>, tensor<1x4x8000x1xf32>) {
  %w2 = kiln.constant dense<0.5> : tensor<16x1x3x3xf32>
  %w1 = kiln.constant dense<0.5> : tensor<8x1x3x3xf32>
  %f1 = kiln.cast %q : tensor<1x6x6x8xui8> -> tensor<1x6x6x8xf32>
  %a = kiln.conv %f1, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64, layout = #kiln.layout<nhwc>} : (tensor<1x6x6x8xf32>, tensor<16x1x3x3xf32>) -> tensor<1x6x6x16xf32>
  %f2 = kiln.cast %q : tensor<1x6x6x8xui8> -> tensor<1x6x6x8xf32>
  %b = kiln.conv %f2, %wv {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64, layout = #kiln.layout<nhwc>} : (tensor<1x6x6x8xf32>, tensor<8x1x3x3xf32>) -> tensor<1x6x6x8xf32>
  %f3 = kiln.cast %qc : tensor<1x8x6x6xui8> -> tensor<1x8x6x6xf32>
  %c = kiln.conv %f3, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64} : (tensor<1x8x6x6xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x6x6xf32>
  %ww = kiln.constant dense<0.5> : tensor<1x1x3x3xf32>
  %f4 = kiln.cast %qw : tensor<1x4x8000x1xui8> -> tensor<1x4x8000x1xf32>
  %d = kiln.conv %f4, %ww {strides = array<i64: 1, 1>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>, group = 1 : i64, layout = #kiln.layout<nhwc>} : (tensor<1x4x8000x1xf32>, tensor<1x1x3x3xf32>) -> tensor<1x4x8000x1xf32>
  return %a, %b, %c, %d : tensor<1x6x6x16xf32>, tensor<1x6x6x8xf32>, tensor<1x8x6x6xf32>, tensor<1x4x8000x1xf32>
}
