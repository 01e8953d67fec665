// RUN: kiln-opt --split-input-file --kiln-select-layout=layout=nhwc --canonicalize %s | FileCheck %s --check-prefix=NHWC
// RUN: kiln-opt --split-input-file --kiln-select-layout --canonicalize %s | FileCheck %s --check-prefix=AUTO
// RUN: kiln-opt --split-input-file --kiln-select-layout=io-layout=nhwc --canonicalize %s | FileCheck %s --check-prefix=AUTOIO
// RUN: kiln-opt --split-input-file --kiln-select-layout="layout=nhwc io-layout=nhwc" --canonicalize %s | FileCheck %s --check-prefix=IO
// RUN: kiln-opt --split-input-file --kiln-select-layout="layout=nchw io-layout=nhwc" --canonicalize %s | FileCheck %s --check-prefix=IONCHW

// A residual block with pooling: the whole network is one region. In NHWC it
// keeps one transpose at the input; the per-channel constant is transposed
// at compile time; the pooled N x 1 x 1 x C result only reshapes back.
// NHWC-LABEL: func @block
// NHWC: kiln.constant dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00{{.*}} : tensor<1x1x1x16xf32>
// NHWC: %[[T:.*]] = kiln.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>} : tensor<1x16x8x8xf32> -> tensor<1x8x8x16xf32>
// NHWC: %[[C1:.*]] = kiln.conv %[[T]], %{{.*}}, %{{.*}} {{{.*}}layout = #kiln.layout<nhwc>{{.*}}} : (tensor<1x8x8x16xf32>, tensor<16x16x3x3xf32>, tensor<16xf32>) -> tensor<1x8x8x16xf32>
// NHWC: %[[R1:.*]] = kiln.relu %[[C1]] : tensor<1x8x8x16xf32>
// NHWC: %[[C2:.*]] = kiln.conv %[[R1]]{{.*}}layout = #kiln.layout<nhwc>
// NHWC: %[[S:.*]] = kiln.mul %[[C2]], %{{.*}} : tensor<1x8x8x16xf32>, tensor<1x1x1x16xf32>
// NHWC: %[[A:.*]] = kiln.add %[[S]], %[[T]] : tensor<1x8x8x16xf32>, tensor<1x8x8x16xf32>
// NHWC: %[[P:.*]] = kiln.max_pool %{{.*}} {{{.*}}layout = #kiln.layout<nhwc>{{.*}}} : tensor<1x8x8x16xf32> -> tensor<1x4x4x16xf32>
// NHWC: %[[G:.*]] = kiln.global_avg_pool %[[P]] {layout = #kiln.layout<nhwc>} : tensor<1x4x4x16xf32> -> tensor<1x1x1x16xf32>
// NHWC-NOT: kiln.transpose
// NHWC: kiln.reshape %[[G]] : tensor<1x1x1x16xf32> -> tensor<1x16xf32>
// The cost model: on 8x8 images the NHWC kernels gain less than the
// transpose of the input costs, so the block stays NCHW; when the input
// arrives NHWC (--io-layout=nhwc) NCHW would pay that transpose instead and
// NHWC wins (3x3 convolutions gather runs of contiguous channels, pools
// vectorize over channels).
// AUTO-LABEL: func @block
// AUTO-NOT: nhwc
// AUTO: return
// AUTOIO-LABEL: func @block
// AUTOIO-NOT: kiln.transpose
// AUTOIO: layout = #kiln.layout<nhwc>
// With NHWC model inputs there is no transpose at all.
// IO-LABEL: func @block(%arg0: tensor<1x8x8x16xf32>
// IO-NOT: kiln.transpose
// IO: kiln.conv %arg0
// Forced NCHW regions with NHWC model inputs: one transpose into NCHW.
// IONCHW-LABEL: func @block(%arg0: tensor<1x8x8x16xf32>
// IONCHW: kiln.transpose %arg0 {perm = array<i64: 0, 3, 1, 2>}
// IONCHW-NOT: nhwc
func.func @block(%x: tensor<1x16x8x8xf32>) -> tensor<1x16xf32> {
  %w = kiln.constant dense<0.5> : tensor<16x16x3x3xf32>
  %b = kiln.constant dense<0.1> : tensor<16xf32>
  %k = kiln.constant dense<[[[1.0]], [[2.0]], [[3.0]], [[4.0]], [[5.0]], [[6.0]], [[7.0]], [[8.0]], [[9.0]], [[10.0]], [[11.0]], [[12.0]], [[13.0]], [[14.0]], [[15.0]], [[16.0]]]> : tensor<16x1x1xf32>
  %c1 = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %r1 = kiln.relu %c1 : tensor<1x16x8x8xf32>
  %c2 = kiln.conv %r1, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %s = kiln.mul %c2, %k : tensor<1x16x8x8xf32>, tensor<16x1x1xf32>
  %a = kiln.add %s, %x : tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>
  %r2 = kiln.relu %a : tensor<1x16x8x8xf32>
  %p = kiln.max_pool %r2 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, count_include_pad = false} : tensor<1x16x8x8xf32> -> tensor<1x16x4x4xf32>
  %g = kiln.global_avg_pool %p : tensor<1x16x4x4xf32> -> tensor<1x16x1x1xf32>
  %f = kiln.reshape %g : tensor<1x16x1x1xf32> -> tensor<1x16xf32>
  return %f : tensor<1x16xf32>
}

// -----

// A concat joins two branches on channels: its axis moves to 3. A value
// that leaves the region for a layout-dependent op (a flattening reshape)
// is transposed back once.
// NHWC-LABEL: func @concat_and_exit
// NHWC: kiln.concat %{{.*}}, %{{.*}} {axis = 3 : i64} : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32> -> tensor<1x4x4x16xf32>
// NHWC: %[[B:.*]] = kiln.transpose %{{.*}} {perm = array<i64: 0, 3, 1, 2>} : tensor<1x4x4x16xf32> -> tensor<1x16x4x4xf32>
// NHWC: kiln.reshape %[[B]] : tensor<1x16x4x4xf32> -> tensor<1x256xf32>
func.func @concat_and_exit(%x: tensor<1x8x4x4xf32>) -> tensor<1x256xf32> {
  %w = kiln.constant dense<0.5> : tensor<8x8x3x3xf32>
  %c1 = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  %c2 = kiln.conv %c1, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  %j = kiln.concat %c1, %c2 {axis = 1 : i64} : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32> -> tensor<1x16x4x4xf32>
  %f = kiln.reshape %j : tensor<1x16x4x4xf32> -> tensor<1x256xf32>
  return %f : tensor<1x256xf32>
}

// -----

// A convolution whose weights are not constants cannot be repacked for the
// NHWC kernels: the cost model keeps it NCHW. Rank-4 elementwise ops with
// no convolution or pool are not a region at all.
// AUTO-LABEL: func @runtime_weights
// AUTO-NOT: nhwc
// AUTO-NOT: kiln.transpose
// AUTO: return
// With --io-layout=nhwc, the data input and output are NHWC (the weight
// input stays OIHW) and the elementwise op runs NHWC, with no transpose.
// AUTOIO-LABEL: func @runtime_weights(%arg0: tensor<1x16x16x4xf32>, %arg1: tensor<4x1x3x3xf32>, %arg2: tensor<1x16x16x4xf32>)
// AUTOIO: kiln.transpose %arg0 {perm = array<i64: 0, 3, 1, 2>}
// AUTOIO-NOT: nhwc
// AUTOIO: kiln.sigmoid %arg2 : tensor<1x16x16x4xf32>
// AUTOIO-NEXT: kiln.transpose %{{.*}} {perm = array<i64: 0, 2, 3, 1>}
// AUTOIO: return
func.func @runtime_weights(%x: tensor<1x4x16x16xf32>, %w: tensor<4x1x3x3xf32>, %y: tensor<1x4x16x16xf32>) -> (tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>) {
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 4 : i64} : (tensor<1x4x16x16xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x16x16xf32>
  %e = kiln.sigmoid %y : tensor<1x4x16x16xf32>
  return %c, %e : tensor<1x4x16x16xf32>, tensor<1x4x16x16xf32>
}

// -----

// Late stages (7x7 planes): NCHW tiles' columns are the 49 pixels, which
// fill 49 of a 32-wide panel pair's 64 columns; NHWC tiles' columns are the
// 512 channels. Over five 512-channel convolutions that outweighs the two
// transposes at the region's edges, and the region goes NHWC.
// AUTO-LABEL: func @late_stage
// AUTO: kiln.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>}
// AUTO-COUNT-5: layout = #kiln.layout<nhwc>
// AUTO: kiln.transpose {{.*}} {perm = array<i64: 0, 3, 1, 2>}
// AUTO: return
func.func @late_stage(%x: tensor<1x512x7x7xf32>) -> tensor<1x512x7x7xf32> {
  %w = kiln.constant dense<0.01> : tensor<512x512x1x1xf32>
  %c1 = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x512x7x7xf32>, tensor<512x512x1x1xf32>) -> tensor<1x512x7x7xf32>
  %r1 = kiln.relu %c1 : tensor<1x512x7x7xf32>
  %c2 = kiln.conv %r1, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x512x7x7xf32>, tensor<512x512x1x1xf32>) -> tensor<1x512x7x7xf32>
  %r2 = kiln.relu %c2 : tensor<1x512x7x7xf32>
  %c3 = kiln.conv %r2, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x512x7x7xf32>, tensor<512x512x1x1xf32>) -> tensor<1x512x7x7xf32>
  %r3 = kiln.relu %c3 : tensor<1x512x7x7xf32>
  %c4 = kiln.conv %r3, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x512x7x7xf32>, tensor<512x512x1x1xf32>) -> tensor<1x512x7x7xf32>
  %r4 = kiln.relu %c4 : tensor<1x512x7x7xf32>
  %c5 = kiln.conv %r4, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x512x7x7xf32>, tensor<512x512x1x1xf32>) -> tensor<1x512x7x7xf32>
  return %c5 : tensor<1x512x7x7xf32>
}

// -----

// A ViT's patch embedding: a 16x16 stride-16 conv whose result is reshaped to
// [N, C, H*W] and transposed to tokens [N, H*W, C]. In NHWC that chain is the
// conv's buffer as it lies (the canonicalizer makes it a reshape), so NHWC
// pays one transpose (the image) where NCHW paid one (the tokens) and the
// conv is cheaper in NHWC; the region goes NHWC.
// AUTO-LABEL: func @patch_embedding
// AUTO: %[[IN:.*]] = kiln.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>}
// AUTO: %[[C:.*]] = kiln.conv %[[IN]], {{.*}} layout = #kiln.layout<nhwc>{{.*}} -> tensor<1x14x14x768xf32>
// AUTO: %[[T:.*]] = kiln.reshape %[[C]] : tensor<1x14x14x768xf32> -> tensor<1x196x768xf32>
// AUTO-NOT: kiln.transpose
// AUTO: return %[[T]]
func.func @patch_embedding(%x: tensor<1x3x224x224xf32>) -> tensor<1x196x768xf32> {
  %w = kiln.constant dense<0.01> : tensor<768x3x16x16xf32>
  %c = kiln.conv %x, %w {strides = array<i64: 16, 16>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x224x224xf32>, tensor<768x3x16x16xf32>) -> tensor<1x768x14x14xf32>
  %r = kiln.reshape %c : tensor<1x768x14x14xf32> -> tensor<1x768x196xf32>
  %t = kiln.transpose %r {perm = array<i64: 0, 2, 1>} : tensor<1x768x196xf32> -> tensor<1x196x768xf32>
  return %t : tensor<1x196x768xf32>
}

// -----

// The same conv whose [N, C, H*W] result is used as it is (no transpose to
// tokens): NHWC would pay a transpose at each end for a 10% cheaper conv;
// it stays NCHW.
// AUTO-LABEL: func @patch_embedding_channels_first
// AUTO-NOT: layout = #kiln.layout<nhwc>
// AUTO: return
func.func @patch_embedding_channels_first(%x: tensor<1x3x224x224xf32>) -> tensor<1x768x196xf32> {
  %w = kiln.constant dense<0.01> : tensor<768x3x16x16xf32>
  %c = kiln.conv %x, %w {strides = array<i64: 16, 16>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x224x224xf32>, tensor<768x3x16x16xf32>) -> tensor<1x768x14x14xf32>
  %r = kiln.reshape %c : tensor<1x768x14x14xf32> -> tensor<1x768x196xf32>
  return %r : tensor<1x768x196xf32>
}

// -----

// A lone 3x3 stride-1 conv, 64 -> 64 channels at 16 x 16: in NHWC codegen
// computes it in Winograd's form (about 1.9x the direct products' rate, no
// gather), which pays for the two transposes; NCHW has only the direct
// products. Without Winograd (winograd=false: kiln-compile
// --disable-pass=kiln-winograd) NCHW keeps it.
// RUN: kiln-opt --split-input-file --kiln-select-layout="winograd=false" --canonicalize %s | FileCheck %s --check-prefix=NOWINO
// AUTO-LABEL: func @lone_conv3x3
// AUTO: kiln.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>}
// AUTO: kiln.conv {{.*}}layout = #kiln.layout<nhwc>{{.*}} -> tensor<1x16x16x64xf32>
// AUTO: kiln.transpose {{.*}} {perm = array<i64: 0, 3, 1, 2>}
// NOWINO-LABEL: func @lone_conv3x3
// NOWINO-NOT: nhwc
// NOWINO: return
func.func @lone_conv3x3(%x: tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32> {
  %w = kiln.constant dense<0.5> : tensor<64x64x3x3xf32>
  %b = kiln.constant dense<0.1> : tensor<64xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x64x16x16xf32>, tensor<64x64x3x3xf32>, tensor<64xf32>) -> tensor<1x64x16x16xf32>
  %r = kiln.relu %c : tensor<1x64x16x16xf32>
  return %r : tensor<1x64x16x16xf32>
}

// -----

// Four 3x3 stride-1 convs, 64 -> 64 channels at 8 x 8 (64 output pixels, as
// a 128-pixel input's deepest UNet level or a late CNN stage): Winograd's
// form from 7 x 7 on (ConvStrategy.h's kWinogradMinPixels, the threshold
// codegen applies) makes NHWC the cheaper layout. Measured on this stack:
// NHWC with Winograd 0.150 ms against NCHW's 0.238 (1 thread, bench/ab.py).
// AUTO-LABEL: func @conv3x3_stack_8x8
// AUTO: kiln.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>}
// AUTO-COUNT-4: kiln.conv {{.*}}layout = #kiln.layout<nhwc>
// AUTO: kiln.transpose {{.*}} {perm = array<i64: 0, 3, 1, 2>}
// NOWINO-LABEL: func @conv3x3_stack_8x8
// NOWINO-NOT: nhwc
// NOWINO: return
func.func @conv3x3_stack_8x8(%x: tensor<1x64x8x8xf32>) -> tensor<1x64x8x8xf32> {
  %w = kiln.constant dense<0.05> : tensor<64x64x3x3xf32>
  %b = kiln.constant dense<0.1> : tensor<64xf32>
  %c0 = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x64x8x8xf32>, tensor<64x64x3x3xf32>, tensor<64xf32>) -> tensor<1x64x8x8xf32>
  %r0 = kiln.relu %c0 : tensor<1x64x8x8xf32>
  %c1 = kiln.conv %r0, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x64x8x8xf32>, tensor<64x64x3x3xf32>, tensor<64xf32>) -> tensor<1x64x8x8xf32>
  %r1 = kiln.relu %c1 : tensor<1x64x8x8xf32>
  %c2 = kiln.conv %r1, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x64x8x8xf32>, tensor<64x64x3x3xf32>, tensor<64xf32>) -> tensor<1x64x8x8xf32>
  %r2 = kiln.relu %c2 : tensor<1x64x8x8xf32>
  %c3 = kiln.conv %r2, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x64x8x8xf32>, tensor<64x64x3x3xf32>, tensor<64xf32>) -> tensor<1x64x8x8xf32>
  %r3 = kiln.relu %c3 : tensor<1x64x8x8xf32>
  return %r3 : tensor<1x64x8x8xf32>
}

// -----

// A quantized region: two 8-bit convolutions joined by their int32 sums'
// rescale and the next activation's requantization (casts to uint8 and
// back). Every op of it, integer or float, is layout-agnostic or has an NHWC
// form, so the region is one: the casts run on NHWC values and no transpose
// sits between the convolutions.
// NHWC-LABEL: func @quantized
// NHWC: %[[T:.*]] = kiln.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>} : tensor<1x32x16x16xui8> -> tensor<1x16x16x32xui8>
// NHWC: %[[C1:.*]] = kiln.conv_integer %[[T]], {{.*}}layout = #kiln.layout<nhwc>{{.*}} -> tensor<1x16x16x32xi32>
// NHWC-NOT: kiln.transpose
// NHWC: kiln.cast %{{.*}} : tensor<1x16x16x32xf32> -> tensor<1x16x16x32xui8>
// NHWC-NOT: kiln.transpose
// NHWC: kiln.conv_integer {{.*}}layout = #kiln.layout<nhwc>{{.*}} -> tensor<1x16x16x32xi32>
// NHWC: kiln.transpose {{.*}} : tensor<1x16x16x32xf32> -> tensor<1x32x16x16xf32>
// The cost model: an 8-bit conv's NCHW form gathers single bytes and
// writes a channel at a time; NHWC wins here too.
// AUTO-LABEL: func @quantized
// AUTO: kiln.conv_integer {{.*}}layout = #kiln.layout<nhwc>
// AUTO: kiln.conv_integer {{.*}}layout = #kiln.layout<nhwc>
func.func @quantized(%q: tensor<1x32x16x16xui8>) -> tensor<1x32x16x16xf32> {
  %w = kiln.constant dense<3> : tensor<32x32x3x3xi8>
  %zq = kiln.constant dense<128> : tensor<ui8>
  %zw = kiln.constant dense<0> : tensor<i8>
  %s = kiln.constant dense<0.01> : tensor<32x1x1xf32>
  %inv = kiln.constant dense<0.5> : tensor<f32>
  %c1 = kiln.conv_integer %q, %w, %zq, %zw {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x16x16xui8>, tensor<32x32x3x3xi8>, tensor<ui8>, tensor<i8>) -> tensor<1x32x16x16xi32>
  %f1 = kiln.cast %c1 : tensor<1x32x16x16xi32> -> tensor<1x32x16x16xf32>
  %y1 = kiln.mul %f1, %s : tensor<1x32x16x16xf32>, tensor<32x1x1xf32>
  %r1 = kiln.relu %y1 : tensor<1x32x16x16xf32>
  %d1 = kiln.mul %r1, %inv : tensor<1x32x16x16xf32>, tensor<f32>
  %q1 = kiln.cast %d1 : tensor<1x32x16x16xf32> -> tensor<1x32x16x16xui8>
  %c2 = kiln.conv_integer %q1, %w, %zq, %zw {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x16x16xui8>, tensor<32x32x3x3xi8>, tensor<ui8>, tensor<i8>) -> tensor<1x32x16x16xi32>
  %f2 = kiln.cast %c2 : tensor<1x32x16x16xi32> -> tensor<1x32x16x16xf32>
  %y2 = kiln.mul %f2, %s : tensor<1x32x16x16xf32>, tensor<32x1x1xf32>
  return %y2 : tensor<1x32x16x16xf32>
}
