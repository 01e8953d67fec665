// RUN: kiln-compile %s --emit=kernels --layout=nhwc --io-layout=nhwc | FileCheck %s
// RUN: not kiln-compile %s --target=cuda-emu --layout=nhwc -o %t.so 2>&1 | FileCheck %s --check-prefix=CUDA
// CUDA: error: --layout=nhwc: the CUDA targets compute convolutions in NCHW only
// An NHWC 3x3 conv whose kernel rows span KW * C = 3 * 32 = 96 contiguous
// input floats per pixel gathers nothing: per kernel row, one product of
// K = 96 through kiln_uk_sgemm_pbr, whose A rows are addresses -- in the
// input for pixels whose window lies inside it, in a small zero-padded
// stack copy for the edge columns, a row of zeros above and below the
// input. The first kernel row overwrites the tile, the others accumulate;
// the last adds the bias as it stores the tile (kiln_uk_sgemm_pbr_ep: the
// bias's address, no clamp), no pass over the tile after it. (Its output,
// with KW * C = 3 * 16 = 48, is read by a conv on the gathering path,
// without a bias: plain kiln_uk_sgemm_pb.)

// CHECK-LABEL: func.func @kiln_k0_conv(
// Tiles of 24 pixel rows: 24 row addresses, a zero row of 96, edge copies
// for (24 / 6 + 1) output rows x 2 edge columns of 96 floats.
// CHECK-DAG: memref.alloca() {alignment = 64 : i64} : memref<24xi64>
// CHECK-DAG: memref.alloca() {alignment = 64 : i64} : memref<96xf32>
// CHECK-DAG: memref.alloca() {alignment = 64 : i64} : memref<960xf32>
// CHECK-NOT: call @kiln_uk_sgemm_pb(
// K = 96 per call (index_cast of a constant 96), A: the address list (lda
// unused, 0), B's panels 32 * 288 = 9216 floats apart, C's rows 16 apart.
// CHECK: arith.index_cast %c96{{[_0-9]*}} : index to i64
// CHECK: call @kiln_uk_sgemm_pbr(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %c0_i64{{[_0-9]*}}, %{{[0-9]+}}, %c9216_i64{{[_0-9]*}}, %{{[0-9]+}}, %c16_i64{{[_0-9]*}}, %c0_i64{{[_0-9]*}})
// CHECK: arith.index_cast %c96{{[_0-9]*}} : index to i64
// CHECK: call @kiln_uk_sgemm_pbr(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %c0_i64{{[_0-9]*}}, %{{[0-9]+}}, %c9216_i64{{[_0-9]*}}, %{{[0-9]+}}, %c16_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}})
// CHECK: arith.index_cast %c96{{[_0-9]*}} : index to i64
// CHECK: call @kiln_uk_sgemm_pbr_ep(%{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %{{[0-9]+}}, %c0_i64{{[_0-9]*}}, %{{[0-9]+}}, %c9216_i64{{[_0-9]*}}, %{{[0-9]+}}, %c16_i64{{[_0-9]*}}, %c1_i64{{[_0-9]*}}, %{{[0-9]+}}, %cst{{[_0-9]*}}, %cst{{[_0-9]*}})
// CHECK-NOT: call @kiln_uk_sgemm_pbr
// CHECK-NOT: arith.addf
// CHECK-LABEL: func.func @kiln_k1_conv(
// CHECK-NOT: call @kiln_uk_sgemm_pbr
// CHECK: call @kiln_uk_sgemm_pb(

func.func @main(%x: tensor<1x32x6x6xf32> {kiln.name = "x"}) -> (tensor<1x8x6x6xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<0.5> : tensor<16x32x3x3xf32>
  %b = kiln.constant dense<0.1> : tensor<16xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x6x6xf32>, tensor<16x32x3x3xf32>, tensor<16xf32>) -> tensor<1x16x6x6xf32>
  %w2 = kiln.constant dense<0.25> : tensor<8x16x3x3xf32>
  %y = kiln.conv %c, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x6x6xf32>, tensor<8x16x3x3xf32>) -> tensor<1x8x6x6xf32>
  return %y : tensor<1x8x6x6xf32>
}
