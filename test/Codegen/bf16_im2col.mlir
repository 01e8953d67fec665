// RUN: kiln-compile %s --emit=kernels --layout=nhwc --precision=bf16 | FileCheck %s
// --precision=bf16 on the CPU: an NHWC conv whose pixel rows more than one
// column tile would gather (few pixels, many output channels, as in
// ResNet-50's late stages) gathers each row once, whole, into an arena
// buffer of bf16 rows (its own kernel, "im2col"); the conv's column tiles
// read those rows in place. K = 5 x 9 = 45 (odd) pads each row to 46.
// Numerics: test/e2e/precision.py (conv_nhwc_im2col, _oddk).

func.func @main(%x: tensor<1x5x7x7xf32> {kiln.name = "x"}) -> (tensor<1x256x7x7xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<0.5> : tensor<256x5x3x3xf32>
  %b = kiln.constant dense<0.1> : tensor<256xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x5x7x7xf32>, tensor<256x5x3x3xf32>, tensor<256xf32>) -> tensor<1x256x7x7xf32>
  return %c : tensor<1x256x7x7xf32>
}

// 49 rows x 46 bf16, two rows a workgroup; a row's pad at column 45 zero.
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_im2col(%arg0: memref<2254xbf16>
// CHECK-SAME: kiln.workgroups = 25
// CHECK: vector.maskedload
// CHECK: arith.truncf {{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK: vector.maskedstore {{.*}} : memref<2254xbf16>, vector<16xi1>, vector<16xbf16>
// CHECK: arith.constant 45 : index
// CHECK-NOT: kiln_uk_
// CHECK: return
// The conv reads the rows (buffer 1) in place: one 49-row tile by 4 tiles
// of 64 columns (the fewest; panels of 32 x 46 bf16, ldb 1472), K = 45,
// lda 46.
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_conv(
// CHECK-SAME: %arg1: memref<2254xbf16>
// CHECK-SAME: kiln.workgroups = 4
// CHECK-NOT: memref.alloca
// CHECK: call @kiln_uk_sbgemm_pb_a16({{.*}}, %c46_i64, {{.*}}, %c1472_i64,
