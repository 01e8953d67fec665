// RUN: kiln-compile %s --emit=kernels --layout=nhwc --io-layout=nhwc | FileCheck %s
// RUN: kiln-compile %s --emit=kernels --layout=nhwc --io-layout=nhwc --disable-pass=kiln-winograd | FileCheck %s --check-prefix=OFF
// An f32 3x3 stride-1 NHWC conv with 16 or more channels and 100 or more
// output pixels runs in Winograd's F(2x2, 3x3) form: one
// kiln_uk_winograd_f23 call per workgroup, the weights transformed at
// compile time; the output transform adds the bias as it stores (its
// address; no clamp: -inf, inf), no epilogue pass. The workgroups are bands
// of tile rows: 14 x 12 output pixels are 7 x 6 tiles; bands of one tile
// row (7 workgroups, the most bands there are) over all 48 channels, each
// with 6 * (32 + 16 * 48) + 32 = 4832 floats of scratch. The stride-2 conv
// after it keeps the direct products.

// CHECK-LABEL: func.func @kiln_k0_conv(
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<4832xf32>
// Arguments: in, u, out, scratch, H = 14, W = 12, C = 32, pads 1 and 1,
// OH = 14, OW = 12, O = 48, the band's tile rows, c0, cols, no accumulate,
// the bias, lo, hi.
// CHECK: call @kiln_uk_winograd_f23(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %c14_i64{{[_0-9]*}}, %c12_i64{{[_0-9]*}}, %c32_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %c14_i64{{[_0-9]*}}, %c12_i64{{[_0-9]*}}, %c48_i64{{[_0-9]*}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %c0_i64{{[_0-9]*}}, %{{[0-9]+}}, %cst{{[_0-9]*}}, %cst{{[_0-9]*}})
// CHECK-NOT: arith.addf
// CHECK-LABEL: func.func @kiln_k1_conv(
// CHECK-NOT: kiln_uk_winograd_f23
// CHECK: call @kiln_uk_sgemm_pbr(

// OFF-NOT: call @kiln_uk_winograd_f23
// OFF: call @kiln_uk_sgemm_pbr(

func.func @main(%x: tensor<1x32x14x12xf32> {kiln.name = "x"}) -> (tensor<1x16x7x6xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<0.5> : tensor<48x32x3x3xf32>
  %b = kiln.constant dense<0.1> : tensor<48xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x14x12xf32>, tensor<48x32x3x3xf32>, tensor<48xf32>) -> tensor<1x48x14x12xf32>
  %w2 = kiln.constant dense<0.25> : tensor<16x48x3x3xf32>
  %y = kiln.conv %c, %w2 {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x48x14x12xf32>, tensor<16x48x3x3xf32>) -> tensor<1x16x7x6xf32>
  return %y : tensor<1x16x7x6xf32>
}
