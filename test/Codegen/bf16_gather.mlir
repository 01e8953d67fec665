// RUN: kiln-compile %s --emit=kernels --layout=nhwc --precision=bf16 | FileCheck %s
// --precision=bf16 on the CPU, two shapes the bf16 ukernels take beyond the
// plain ones (numerics: test/e2e/precision.py, conv_nhwc_stem and
// gemm_one_row):
// - an NHWC RGB stem: 3 channels (odd) gathered in one chunk of K = 27, so
//   bf16 still applies; the rows are rounded to bf16 as they are gathered,
//   padded to an even 28 with a zero, and each kernel row's 3 taps x 3
//   channels are one 9-element copy where they lie inside the input;
// - a one-row gemm (a batch-1 classifier) on the bf16 ukernel, not the f32
//   dot products.

func.func @main(%x: tensor<1x3x8x8xf32> {kiln.name = "x"}, %a: tensor<1x64xf32> {kiln.name = "a"}) -> (tensor<1x8x8x8xf32> {kiln.name = "y"}, tensor<1x40xf32> {kiln.name = "g"}) {
  %w = kiln.constant dense<0.5> : tensor<8x3x3x3xf32>
  %b = kiln.constant dense<0.1> : tensor<8xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %gw = kiln.constant dense<0.25> : tensor<64x40xf32>
  %gb = kiln.constant dense<0.5> : tensor<40xf32>
  %g = kiln.gemm %a, %gw, %gb {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = false} : (tensor<1x64xf32>, tensor<64x40xf32>, tensor<40xf32>) -> tensor<1x40xf32>
  return %c, %g : tensor<1x8x8x8xf32>, tensor<1x40xf32>
}

// 24 pixel rows a workgroup x 28 bf16 of gathered rows.
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_conv(
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<672xbf16>
// A kernel row inside the input: one copy of 3 taps x 3 channels, a
// masked vector of 9 lanes rounded to bf16.
// CHECK: arith.constant dense<[true, true, true, true, true, true, true, true, true, false, false, false, false, false, false, false]> : vector<16xi1>
// CHECK: vector.maskedload
// CHECK: arith.truncf {{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK: vector.maskedstore
// Each row's pad at column 27 (zero), then the product over K = 27 with
// lda 28 and B's one panel of 32 x 28.
// CHECK: arith.constant 27 : index
// CHECK: call @kiln_uk_sbgemm_pb_a16({{.*}}, %c28_i64, {{.*}}, %c896_i64,

// The one-row gemm: K = 64, 40 columns in two 32-column panels
// of 32 x 64 bf16 (ldb 2048).
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_gemm(
// CHECK: call @kiln_uk_sbgemm_pb({{.*}}, %c64_i64, {{.*}}, %c2048_i64,
