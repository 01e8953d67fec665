// RUN: kiln-compile %s --emit=kernels --layout=nhwc | FileCheck %s
// RUN: kiln-compile %s --emit=kernels --layout=nchw | FileCheck %s --check-prefix=NCHW
// 8-bit convolutions on the 8-bit ukernel. A 3x3 one gathers its rows of
// 8 channels x 9 taps once (kiln_uk_conv_rows8: 72 bytes a row, the input's
// zero point where the window leaves it) and multiplies them by the packed
// weights (kiln_uk_q8gemm_pq, lda 72, K 72, one 16-column panel of 18
// quads of 64 bytes and 64 bytes of column sums: ldb 1216, no shift); its
// epilogue (the cast to f32 and the scale) runs on each tile of int32 sums,
// 16 channels at a time in NHWC, the tile (24 rows x 16 columns) on the
// workgroup's stack rather than in the arena. A pointwise NHWC one reads its input rows
// in place (lda = the 16 channels; 4 quads, ldb 320). Unsigned weights of
// 250 less a zero point of 10 (240, past 8 signed bits) are packed as 112
// with a shift of 128. NCHW gathers the rows too and writes its result a
// channel plane at a time.

func.func @main(%x: tensor<2x8x6x6xui8> {kiln.name = "x"}) -> (tensor<2x16x6x6xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<3> : tensor<16x8x3x3xi8>
  %zx = kiln.constant dense<128> : tensor<ui8>
  %zw = kiln.constant dense<0> : tensor<i8>
  %s = kiln.constant dense<0.01> : tensor<16x1x1xf32>
  %c = kiln.conv_integer %x, %w, %zx, %zw {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x8x6x6xui8>, tensor<16x8x3x3xi8>, tensor<ui8>, tensor<i8>) -> tensor<2x16x6x6xi32>
  %f = kiln.cast %c : tensor<2x16x6x6xi32> -> tensor<2x16x6x6xf32>
  %y = kiln.mul %f, %s : tensor<2x16x6x6xf32>, tensor<16x1x1xf32>
  %q = kiln.cast %y : tensor<2x16x6x6xf32> -> tensor<2x16x6x6xui8>
  %pw = kiln.constant dense<-2> : tensor<16x16x1x1xi8>
  %p = kiln.conv_integer %q, %pw, %zx, %zw {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x16x6x6xui8>, tensor<16x16x1x1xi8>, tensor<ui8>, tensor<i8>) -> tensor<2x16x6x6xi32>
  %pf = kiln.cast %p : tensor<2x16x6x6xi32> -> tensor<2x16x6x6xf32>
  %o = kiln.mul %pf, %s : tensor<2x16x6x6xf32>, tensor<16x1x1xf32>
  %q2 = kiln.cast %o : tensor<2x16x6x6xf32> -> tensor<2x16x6x6xui8>
  %uw = kiln.constant dense<250> : tensor<16x16x1x1xui8>
  %zu = kiln.constant dense<10> : tensor<ui8>
  %u = kiln.conv_integer %q2, %uw, %zx, %zu {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x16x6x6xui8>, tensor<16x16x1x1xui8>, tensor<ui8>, tensor<ui8>) -> tensor<2x16x6x6xi32>
  %uf = kiln.cast %u : tensor<2x16x6x6xi32> -> tensor<2x16x6x6xf32>
  %r = kiln.mul %uf, %s : tensor<2x16x6x6xf32>, tensor<16x1x1xf32>
  return %r : tensor<2x16x6x6xf32>
}

// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_im2col(
// CHECK: call @kiln_uk_conv_rows8(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c6_i64, %c6_i64_{{[0-9]+}}, %c8_i64, %c6_i64_{{[0-9]+}}, %c6_i64_{{[0-9]+}}, %c3_i64, %c3_i64_{{[0-9]+}}, %c1_i64, %c1_i64_{{[0-9]+}}, %c1_i64_{{[0-9]+}}, %c1_i64_{{[0-9]+}}, %c1_i64_{{[0-9]+}}, %c1_i64_{{[0-9]+}}, %c1_i64_{{[0-9]+}}, %c1_i64_{{[0-9]+}}, %{{.*}})
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_conv_integer(
// CHECK: %[[TILE:.*]] = memref.alloca() {alignment = 64 : i64} : memref<384xi32>
// CHECK: %[[C:.*]] = memref.extract_aligned_pointer_as_index %[[TILE]]
// CHECK: call @kiln_uk_q8gemm_pq(%{{.*}}, %{{.*}}, %c72_i64, %{{.*}}, %c72_i64_{{[0-9]+}}, %{{.*}}, %{{.*}}, %c1216_i64, %c0_i64{{(_[0-9]+)?}}, %{{.*}}, %c16_i64, %c0_i64{{(_[0-9]+)?}})
// CHECK: vector.load %[[TILE]][{{.*}}] : memref<384xi32>, vector<16xi32>
// CHECK: arith.sitofp {{.*}} : vector<16xi32> to vector<16xf32>
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_conv_integer(
// CHECK-NOT: kiln_uk_conv_rows8
// CHECK: call @kiln_uk_q8gemm_pq(%{{.*}}, %{{.*}}, %c16_i64, %{{.*}}, %c16_i64_{{[0-9]+}}, %{{.*}}, %{{.*}}, %c320_i64, %c0_i64{{(_[0-9]+)?}}, %{{.*}}, %c16_i64_{{[0-9]+}}, %c0_i64{{(_[0-9]+)?}})
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_conv_integer(
// CHECK: call @kiln_uk_q8gemm_pq(%{{.*}}, %{{.*}}, %c16_i64, %{{.*}}, %c16_i64_{{[0-9]+}}, %{{.*}}, %{{.*}}, %c320_i64, %c128_i64, %{{.*}}, %c16_i64_{{[0-9]+}}, %c0_i64{{(_[0-9]+)?}})

// NCHW-LABEL: func.func @kiln_k{{[0-9]+}}_im2col(
// NCHW: call @kiln_uk_conv_rows8({{.*}}, %c0_i64, %{{[0-9]+}})
// NCHW-LABEL: func.func @kiln_k{{[0-9]+}}_conv_integer(
// NCHW: call @kiln_uk_q8gemm_pq(
// NCHW-NOT: vector.load
// NCHW: return
// NCHW-LABEL: func.func @kiln_k{{[0-9]+}}_im2col(
// NCHW-LABEL: func.func @kiln_k{{[0-9]+}}_conv_integer(
// NCHW: call @kiln_uk_q8gemm_pq(%{{.*}}, %{{.*}}, %c16_i64, %{{.*}}, %c16_i64_{{[0-9]+}},
