// RUN: kiln-compile %s --emit=kernels --layout=nhwc --precision=bf16 | FileCheck %s
// RUN: kiln-compile %s --emit=kernels --layout=nhwc | FileCheck %s --check-prefix=FP32
// bf16 storage between kernels (--precision=bf16 on the CPU): a bf16 conv
// whose result holds bf16 values (its epilogue ends in the rounding pair, or
// a relu of it) and whose every reader reads bf16 stores the values as bf16.
// Here conv1's relu feeds conv2 as its input (pointwise: the rows are
// multiplied in place) and as the residual of conv2's epilogue; conv2's
// result is the model's output and stays f32. Numerics: test/e2e
// (precision.py's resnet18 and small_cnn, models; outputs bitwise equal to
// f32 storage, as the stored values are exact).

func.func @main(%x: tensor<1x16x8x8xf32> {kiln.name = "x"}) -> (tensor<1x32x8x8xf32> {kiln.name = "y"}) {
  %w1 = kiln.constant dense<0.05> : tensor<32x16x3x3xf32>
  %b1 = kiln.constant dense<0.1> : tensor<32xf32>
  %c1 = kiln.conv %x, %w1, %b1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<32x16x3x3xf32>, tensor<32xf32>) -> tensor<1x32x8x8xf32>
  %r1 = kiln.relu %c1 : tensor<1x32x8x8xf32>
  %w2 = kiln.constant dense<0.25> : tensor<32x32x1x1xf32>
  %c2 = kiln.conv %r1, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x8x8xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  %s = kiln.add %c2, %r1 : tensor<1x32x8x8xf32>, tensor<1x32x8x8xf32>
  %y = kiln.relu %s : tensor<1x32x8x8xf32>
  return %y : tensor<1x32x8x8xf32>
}

// conv1 writes 64 pixels x 32 channels of bf16; its products land in a f32
// tile on the stack (24 rows x 32 columns), which the epilogue pass rounds
// into the output.
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_conv(
// CHECK-SAME: %arg3: memref<2048xbf16>
// CHECK: %[[TILE:.*]] = memref.alloca() {alignment = 64 : i64} : memref<768xf32>
// CHECK: call @kiln_uk_sbgemm_pb_a16(
// CHECK: vector.load %[[TILE]]
// CHECK: arith.truncf {{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK: vector.store {{.*}}, %arg3[{{.*}}] : memref<2048xbf16>, vector<16xbf16>
// conv2 reads the bf16 rows in place (pointwise, lda 32 channels) and its
// residual as bf16, widened in the epilogue; it writes f32 (the output).
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_conv(
// CHECK-SAME: %arg1: memref<2048xbf16> {llvm.noalias}, %arg2: memref<2048xbf16> {llvm.noalias}, %arg3: memref<2048xf32>
// CHECK-NOT: memref.alloca
// CHECK: call @kiln_uk_sbgemm_pb_a16({{.*}}, %c32_i64,
// CHECK: vector.load %arg2[{{.*}}] : memref<2048xbf16>, vector<16xbf16>
// CHECK: arith.extf {{.*}} : vector<16xbf16> to vector<16xf32>
// CHECK: vector.store {{.*}}, %arg3[{{.*}}] : memref<2048xf32>, vector<16xf32>

// fp32: nothing stored as bf16.
// FP32-NOT: bf16
