// RUN: kiln-compile %s --emit=kernels --layout=nhwc --io-layout=nhwc --winograd-f43 | FileCheck %s
// RUN: kiln-compile %s --emit=kernels --layout=nhwc --io-layout=nhwc --winograd-f43 --disable-pass=kiln-winograd | FileCheck %s --check-prefix=OFF
// RUN: kiln-compile %s --emit=kernels --layout=nhwc --io-layout=nhwc | FileCheck %s --check-prefix=DEFAULT
// With --winograd-f43, from 400 output pixels per image on, an f32 3x3
// stride-1 NHWC conv runs in Winograd's F(4x4, 3x3) form
// (kiln_uk_winograd_f43; below that, F(2x2, 3x3), as the second conv here:
// 12 x 10 = 120 pixels). Without the flag both take F(2x2, 3x3): F(4x4)
// rounds about 6x more. 20 x 24
// output pixels are 5 x 6 tiles of 4x4; bands of one tile row (5
// workgroups, the most bands there are) over all 48 channels, each with
// 6 * (6 * 32 + 36 * 48) + 32 = 11552 floats of scratch (V for six of the
// 36 positions at a time, the 36 products, a zero row). The bias is added
// by the output transform as it stores.

// CHECK-LABEL: func.func @kiln_k0_conv(
// CHECK-SAME: attributes {kiln.workgroups = 5 : i64}
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<11552xf32>
// Arguments: in, u, out, scratch, H = 20, W = 24, C = 32, pads 1 and 1,
// OH = 20, OW = 24, O = 48, the band's tile rows, c0, cols, no accumulate,
// the bias, lo, hi.
// CHECK: call @kiln_uk_winograd_f43(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %c20_i64{{[_0-9]*}}, %c24_i64{{[_0-9]*}}, %c32_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c20_i64{{[_0-9]*}}, %c24_i64{{[_0-9]*}}, %c48_i64{{[_0-9]*}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %c0_i64{{[_0-9]*}}, %{{[0-9]+}}, %cst{{[_0-9]*}}, %cst{{[_0-9]*}})
// CHECK-NOT: arith.addf
// CHECK-LABEL: func.func @kiln_k1_conv(
// CHECK-NOT: kiln_uk_winograd_f43
// CHECK: call @kiln_uk_winograd_f23(

// DEFAULT-NOT: call @kiln_uk_winograd_f43
// DEFAULT: call @kiln_uk_winograd_f23(
// DEFAULT: call @kiln_uk_winograd_f23(

// OFF-NOT: call @kiln_uk_winograd_f43
// OFF-NOT: call @kiln_uk_winograd_f23
// OFF: call @kiln_uk_sgemm_pbr(

func.func @main(%x: tensor<1x32x20x24xf32> {kiln.name = "x"}) -> (tensor<1x48x20x24xf32> {kiln.name = "c"}, tensor<1x32x12x10xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<0.5> : tensor<48x32x3x3xf32>
  %b = kiln.constant dense<0.1> : tensor<48xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x20x24xf32>, tensor<48x32x3x3xf32>, tensor<48xf32>) -> tensor<1x48x20x24xf32>
  %x2 = kiln.constant dense<0.25> : tensor<1x48x12x10xf32>
  %w2 = kiln.constant dense<0.25> : tensor<32x48x3x3xf32>
  %y = kiln.conv %x2, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x48x12x10xf32>, tensor<32x48x3x3xf32>) -> tensor<1x32x12x10xf32>
  return %c, %y : tensor<1x48x20x24xf32>, tensor<1x32x12x10xf32>
}
