// RUN: kiln-compile %s --emit=kernels --layout=nchw --precision=fp16 | FileCheck %s
// RUN: kiln-compile %s --emit=kernels --layout=nhwc --precision=fp16 | FileCheck %s --check-prefix=NHWC
// --precision=fp16 on the CPU: the contractions kiln-lower-precision marked
// f16 keep the f32 ukernels' layouts with the weights stored as IEEE half
// (half the bytes), widened to f32 inside the ukernel: an NCHW
// convolution's weights are the packed A (kiln_uk_hgemm_pa: 6-row groups,
// lda = 6 * K half), a matmul's (any M) and an NHWC convolution's are B
// (kiln_uk_hgemm: [K, N] row-major half, ldb = N). The activations were
// rounded to half values by the graph's casts. Numerics:
// test/e2e/precision.py and test/Runtime/sgemm.test.

func.func @main(%x: tensor<2x8x6x6xf32> {kiln.name = "x"}, %a: tensor<2x33xf32> {kiln.name = "a"}) -> (tensor<2x16x3x3xf32> {kiln.name = "y"}, tensor<2x40xf32> {kiln.name = "m"}) {
  %w = kiln.constant dense<0.5> : tensor<16x8x3x3xf32>
  %b = kiln.constant dense<0.1> : tensor<16xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x8x6x6xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<2x16x3x3xf32>
  %mw = kiln.constant dense<0.25> : tensor<33x40xf32>
  %m = kiln.matmul %a, %mw : tensor<2x33xf32>, tensor<33x40xf32>
  return %c, %m : tensor<2x16x3x3xf32>, tensor<2x40xf32>
}

// 18 rows (16 padded to three 6-row groups) x K = 72 half: 1296 half, 648
// f32 words; lda 6 * 72 = 432.
// CHECK-LABEL: func.func @kiln_k1_conv(%arg0: memref<648xf32>
// CHECK-NOT: call @kiln_uk_sgemm
// CHECK: call @kiln_uk_hgemm_pa({{.*}}, %c432_i64,
// The result is rounded to half values in the epilogue.
// CHECK: arith.truncf {{.*}} : f32 to f16

// Two rows (fewer than the f32 path's 6) take the ukernel too: B = 33 x 40
// half (660 words), ldb 40.
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_matmul(
// CHECK-SAME: %arg1: memref<660xf32>
// CHECK: call @kiln_uk_hgemm({{.*}}, %c33_i64, {{.*}}, %c40_i64, {{.*}}, %c40_i64

// With NHWC regions the weights are B, [K = 72, 16] half (576 words), ldb 16.
// NHWC-LABEL: func.func @kiln_k{{[0-9]+}}_conv(
// NHWC-SAME: %arg0: memref<576xf32>
// NHWC: call @kiln_uk_hgemm({{.*}}, %c16_i64,
// NHWC-LABEL: func.func @kiln_k{{[0-9]+}}_matmul(
// NHWC: call @kiln_uk_hgemm(
