// RUN: kiln-compile %s --emit=kernels --layout=nchw --precision=bf16 | FileCheck %s
// RUN: kiln-compile %s --emit=kernels --layout=nhwc --precision=bf16 | FileCheck %s --check-prefix=NHWC
// RUN: kiln-compile %s --emit=kernels --layout=nchw --precision=bf16 --keep-fp32=conv,matmul | FileCheck %s --check-prefix=KEEP
// --precision=bf16 on the CPU: the contractions kiln-lower-precision marked
// bf16 call the runtime's bf16 ukernels on weights packed as bf16 pairs at
// compile time. An NCHW convolution's weights are A (kiln_uk_sbgemm_pa:
// bf16 rows, lda = Kp), a matmul's and an NHWC convolution's
// are B (kiln_uk_sbgemm_pb: 32-column panels, ldb = 32 * Kp bf16); the f32
// activations are rounded by the ukernel. Numerics: test/e2e/precision.py.

func.func @main(%x: tensor<2x8x6x6xf32> {kiln.name = "x"}, %a: tensor<12x33xf32> {kiln.name = "a"}) -> (tensor<2x16x3x3xf32> {kiln.name = "y"}, tensor<12x40xf32> {kiln.name = "m"}) {
  %w = kiln.constant dense<0.5> : tensor<16x8x3x3xf32>
  %b = kiln.constant dense<0.1> : tensor<16xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x8x6x6xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<2x16x3x3xf32>
  %mw = kiln.constant dense<0.25> : tensor<33x40xf32>
  %m = kiln.matmul %a, %mw : tensor<12x33xf32>, tensor<33x40xf32>
  return %c, %m : tensor<2x16x3x3xf32>, tensor<12x40xf32>
}

// The model input rounds to bf16 values (kiln-lower-precision's cast pair).
// CHECK-LABEL: func.func @kiln_k0_fusion(
// CHECK: arith.truncf {{.*}} : f32 to bf16

// 16 rows x Kp = 72 bf16 (576 f32 words); lda 72.
// CHECK-LABEL: func.func @kiln_k1_conv(%arg0: memref<576xf32>
// CHECK-NOT: call @kiln_uk_sgemm
// CHECK: call @kiln_uk_sbgemm_pa({{.*}}, %c72_i64,
// The result is rounded in the epilogue.
// CHECK: arith.truncf {{.*}} : f32 to bf16

// K = 33 pads to 34: two 32-column panels of 32 x 34 bf16 (1088 words).
// CHECK-LABEL: func.func @kiln_k3_matmul(
// CHECK-SAME: %arg1: memref<1088xf32>
// CHECK: call @kiln_uk_sbgemm_pb({{.*}}, %c33_i64, {{.*}}, %c1088_i64, {{.*}}, %c40_i64,

// With NHWC regions the conv's weights are B: K = 72 in one panel of 16
// columns; the gathered im2col rows are rounded to bf16 as they are written
// (18 pixel rows x 72) and read as they are (kiln_uk_sbgemm_pb_a16, lda 72).
// NHWC-LABEL: func.func @kiln_k{{[0-9]+}}_conv(
// NHWC-SAME: %arg0: memref<1152xf32>
// NHWC: memref.alloca() {alignment = 64 : i64} : memref<1296xbf16>
// NHWC: arith.truncf {{.*}} : vector<16xf32> to vector<16xbf16>
// NHWC: call @kiln_uk_sbgemm_pb_a16({{.*}}, %c72_i64, {{.*}}, %c2304_i64,
// NHWC-LABEL: func.func @kiln_k{{[0-9]+}}_matmul(
// NHWC: call @kiln_uk_sbgemm_pb(

// --keep-fp32: the f32 ukernels on f32 weights (the matmul's in panels).
// KEEP-NOT: call @kiln_uk_sbgemm
// KEEP: call @kiln_uk_sgemm_pa(
// KEEP-NOT: call @kiln_uk_sbgemm
// KEEP: call @kiln_uk_sgemm_pb(
// KEEP-NOT: call @kiln_uk_sbgemm
