// RUN: kiln-compile %s --emit=kernels --layout=nchw | FileCheck %s
// RUN: kiln-compile %s --emit=kernels --layout=nhwc --io-layout=nhwc | FileCheck %s --check-prefix=NHWC
// A convolution with enough channels becomes an implicit GEMM: each
// workgroup gathers its columns of the im2col matrix on the stack and calls
// the sgemm ukernel;
// a depthwise one keeps the direct loop nest; a 1x1 stride-1 convolution
// reads its input as the column matrix (no im2col).

func.func @main(%x: tensor<2x8x6x6xf32> {kiln.name = "x"}) -> (tensor<2x16x3x3xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<0.5> : tensor<16x8x3x3xf32>
  %b = kiln.constant dense<0.1> : tensor<16xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x8x6x6xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<2x16x3x3xf32>
  %dw = kiln.constant dense<0.5> : tensor<16x1x3x3xf32>
  %d = kiln.conv %c, %dw {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 16 : i64} : (tensor<2x16x3x3xf32>, tensor<16x1x3x3xf32>) -> tensor<2x16x3x3xf32>
  %pw = kiln.constant dense<0.25> : tensor<16x16x1x1xf32>
  %p = kiln.conv %d, %pw {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x16x3x3xf32>, tensor<16x16x1x1xf32>) -> tensor<2x16x3x3xf32>
  return %p : tensor<2x16x3x3xf32>
}

// CHECK: func.func private @kiln_uk_sgemm(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)
// CHECK: func.func private @kiln_uk_sgemm_pa(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64)

// The matrix product: weights x columns, bias first, then accumulate; one
// workgroup per image; the 8 channels x 9 taps x 9 pixels of columns on the
// stack, whole output rows per tile, so each tap's zero and copy runs have
// constant bounds (no branches); rows of the window outside the input are
// zeros. The weights were
// packed at compile time for the ukernel: 16 rows padded to 18 x 72.
// CHECK-NOT: im2col
// CHECK-LABEL: func.func @kiln_k0_conv(
// CHECK-SAME: memref<1296xf32> {llvm.noalias}, %{{.*}}: memref<576xf32> {llvm.noalias}, %{{.*}}: memref<16xf32> {llvm.noalias}, %{{.*}}: memref<288xf32> {llvm.noalias}, %{{.*}}: index) attributes {kiln.workgroups = 2 : i64}
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<648xf32>
// CHECK-NOT: scf.if
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK: call @kiln_uk_sgemm_pa(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c432_i64, %{{.*}}, %c9_i64, %{{.*}}, %{{.*}}, %c1_i64) : (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) -> ()

// Depthwise, stride 1: one workgroup per (image, channel); the plane is
// copied into a zero-padded stack scratch and the taps run over its
// flattened rows.
// CHECK-LABEL: func.func @kiln_k1_conv(
// CHECK-SAME: attributes {kiln.workgroups = 32 : i64}
// CHECK-NOT: call @kiln_uk_sgemm
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<28xf32>
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<15xf32>
// CHECK: arith.mulf

// Pointwise: the input is the column matrix.
// CHECK-NOT: memref.alloca
// CHECK-LABEL: func.func @kiln_k2_conv(
// CHECK: call @kiln_uk_sgemm_pa

// Channels last (the model's input and output NHWC too, so no transposes):
// the implicit GEMM multiplies pixel rows of gathered taps (8 contiguous
// channels per tap, zeros where the window leaves the input) by the
// weights repacked at compile time as [tap * channel x out channel] (72 x 16)
// in one 32-column panel (72 x 32, zero past column 16: 2304 floats) that
// kiln_uk_sgemm_pb reads in place (ldb 32 * 72); the 18 output pixels of
// both images are one tile. The product overwrites
// the tile (accumulate 0) and the ukernel adds the bias as it stores it
// (kiln_uk_sgemm_pb_ep: the bias's address, no clamp: -inf, inf), no pass
// over the tile after it.
// NHWC-NOT: transpose
// NHWC-LABEL: func.func @kiln_k0_conv(
// NHWC-SAME: memref<2304xf32> {llvm.noalias}, %{{.*}}: memref<576xf32> {llvm.noalias}, %{{.*}}: memref<16xf32> {llvm.noalias}, %{{.*}}: memref<288xf32> {llvm.noalias}, %{{.*}}: index) attributes {kiln.workgroups = 1 : i64}
// NHWC: memref.alloca() {alignment = 64 : i64} : memref<1296xf32>
// Each tap's 8 channels: one masked vector of 8 lanes.
// NHWC: scf.if
// NHWC: vector.maskedload %{{.*}} : memref<576xf32>, vector<16xi1>, vector<16xf32> into vector<16xf32>
// NHWC: vector.maskedstore %{{.*}} : memref<1296xf32>, vector<16xi1>, vector<16xf32>
// NHWC: call @kiln_uk_sgemm_pb_ep(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c72_i64, %{{.*}}, %c2304_i64, %{{.*}}, %c16_i64{{.*}}, %c0_i64{{.*}}, %{{.*}}, %cst{{[_0-9]*}}, %cst{{[_0-9]*}})
// NHWC-NOT: vector.store {{.*}} : memref<288xf32>, vector<16xf32>
// NHWC: return
// Depthwise: a workgroup per band of output rows (2 images x 3 rows, a
// band of one row each: about 8 bands per image), 16 channels at a time
// with their taps' weights held, one FMA per tap; the middle row reads the
// input in place, the border rows a zero-padded copy.
// NHWC-LABEL: func.func @kiln_k1_conv(
// NHWC-SAME: attributes {kiln.workgroups = 6 : i64}
// NHWC-NOT: call @kiln_uk_sgemm
// NHWC: memref.alloca
// NHWC: scf.for
// NHWC: scf.if
// NHWC: vector.load %{{.*}} : memref<288xf32>, vector<16xf32>
// NHWC: math.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<16xf32>
// NHWC: } else {
// NHWC: math.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<16xf32>
// Pointwise: the input itself is the pixel-row matrix (lda = 16 channels).
// NHWC-LABEL: func.func @kiln_k2_conv(
// NHWC-NOT: memref.alloca
// NHWC: call @kiln_uk_sgemm_pb(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c16_i64, %{{.*}}, %c512_i64, %{{.*}}, %c16_i64{{.*}}, %c0_i64)
