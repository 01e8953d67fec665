// RUN: kiln-compile %s --emit=kernels --layout=nhwc --io-layout=nhwc | FileCheck %s
// Winograd's F(2x2, 3x3) from 7 x 7 output pixels on (ResNet-50's stage-4
// 3x3 convs: 4 x 4 tiles of 2 x 2): the 7 x 7 conv runs on
// kiln_uk_winograd_f23; the 5 x 5 one after it (no padding: 25 pixels)
// keeps the direct products.

// CHECK-LABEL: func.func @kiln_k0_conv(
// Arguments: in, u, out, scratch, H = 7, W = 7, C = 64, pads 1 and 1,
// OH = 7, OW = 7, O = 64, ...
// CHECK: call @kiln_uk_winograd_f23(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %c7_i64{{[_0-9]*}}, %c7_i64{{[_0-9]*}}, %c64_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c7_i64{{[_0-9]*}}, %c7_i64{{[_0-9]*}}, %c64_i64{{[_0-9]*}},
// CHECK-LABEL: func.func @kiln_k1_conv(
// CHECK-NOT: kiln_uk_winograd_f23
// CHECK: call @kiln_uk_sgemm_pbr(

func.func @main(%x: tensor<1x64x7x7xf32> {kiln.name = "x"}) -> (tensor<1x64x5x5xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<0.5> : tensor<64x64x3x3xf32>
  %b = kiln.constant dense<0.1> : tensor<64xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x64x7x7xf32>, tensor<64x64x3x3xf32>, tensor<64xf32>) -> tensor<1x64x7x7xf32>
  %d = kiln.conv %c, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x64x7x7xf32>, tensor<64x64x3x3xf32>, tensor<64xf32>) -> tensor<1x64x5x5xf32>
  return %d : tensor<1x64x5x5xf32>
}
