// RUN: kiln-compile %s --emit=kernels | FileCheck %s
// Matrix-product tiles in a count that 2, 4 and 8 threads share evenly:
// 2304 columns (BERT's QKV projection) halve from 512-column tiles to 256,
// nine tiles, which two threads would run as five and four; instead eight
// tiles of 288 columns (nine panels of 32). Numerics: test/e2e/models.test.

func.func @main(%x: tensor<128x64xf32> {kiln.name = "x"}) -> (tensor<128x2304xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<0.5> : tensor<64x2304xf32>
  %y = kiln.matmul %x, %w : tensor<128x64xf32>, tensor<64x2304xf32>
  return %y : tensor<128x2304xf32>
}

// CHECK-LABEL: func.func @kiln_k0_matmul(
// CHECK-SAME: kiln.workgroups = 8
// CHECK: arith.constant 288 : index
// CHECK: call @kiln_uk_sgemm_pb(
