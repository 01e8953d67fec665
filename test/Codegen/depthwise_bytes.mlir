// RUN: kiln-compile %s --emit=kernels --layout=nhwc --io-layout=nhwc | FileCheck %s
// A depthwise conv between 8-bit activations (kiln-fuse's byte conv): one
// kernel reads the ui8 input and writes the ui8 result. Per block of 16
// channels (24 channels: a block and a tail of 8 one channel at a time),
// each input row goes through the dequantization -- uitofp, minus the zero
// point -- once, into a ring of the 3 rows the window spans (3 rows x 25
// padded columns x 16 floats); nine taps a pixel read the ring; the
// requantization's conversion stores bytes.

func.func @main(%q: tensor<1x24x6x23xui8> {kiln.name = "q"}) -> (tensor<1x24x6x23xui8> {kiln.name = "y"}) {
  %w = kiln.constant dense<0.5> : tensor<24x1x3x3xf32>
  %b = kiln.constant dense<0.1> : tensor<24xf32>
  %z = kiln.constant dense<3.0> : tensor<f32>
  %c0 = kiln.constant dense<0.0> : tensor<f32>
  %c255 = kiln.constant dense<255.0> : tensor<f32>
  %f = kiln.cast %q : tensor<1x24x6x23xui8> -> tensor<1x24x6x23xf32>
  %x = kiln.sub %f, %z : tensor<1x24x6x23xf32>, tensor<f32>
  %y = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 24 : i64} : (tensor<1x24x6x23xf32>, tensor<24x1x3x3xf32>, tensor<24xf32>) -> tensor<1x24x6x23xf32>
  %r = kiln.round %y : tensor<1x24x6x23xf32>
  %a = kiln.add %r, %z : tensor<1x24x6x23xf32>, tensor<f32>
  %lo = kiln.max %a, %c0 : tensor<1x24x6x23xf32>, tensor<f32>
  %hi = kiln.min %lo, %c255 : tensor<1x24x6x23xf32>, tensor<f32>
  %o = kiln.cast %hi : tensor<1x24x6x23xf32> -> tensor<1x24x6x23xui8>
  return %o : tensor<1x24x6x23xui8>
}

// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_conv(
// CHECK-SAME: memref<3312xi8>
// CHECK-SAME: memref<3312xi8>
// CHECK: %[[RING:.*]] = memref.alloca() {alignment = 64 : i64} : memref<1200xf32>
// CHECK: vector.load {{.*}} : memref<3312xi8>, vector<16xi8>
// CHECK-NEXT: arith.uitofp {{.*}} : vector<16xi8> to vector<16xf32>
// CHECK-NEXT: arith.constant dense<3.000000e+00> : vector<16xf32>
// CHECK-NEXT: arith.subf
// CHECK-NEXT: vector.store {{.*}}, %[[RING]]
// CHECK-COUNT-36: math.fma
// CHECK: arith.fptoui {{.*}} : vector<16xf32> to vector<16xi8>
// CHECK: vector.store {{.*}} : memref<3312xi8>, vector<16xi8>
// CHECK: memref.load {{.*}} : memref<3312xi8>
// CHECK-NEXT: arith.uitofp {{.*}} : i8 to f32
// CHECK: arith.fptoui {{.*}} : f32 to i8
// CHECK: return
// CHECK-NOT: func.func @kiln_k{{[0-9]+}}_cast
