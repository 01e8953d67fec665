// RUN: kiln-opt --split-input-file --kiln-quantize-weights="bits=4 block-size=32" %s | FileCheck %s
// RUN: kiln-opt --split-input-file --kiln-quantize-weights="bits=8 block-size=32" %s | FileCheck %s --check-prefix=INT8

// Each column's block of 32 k over its range widened to hold 0, in 15
// steps: column 0 (all 0.5) scale 0.5 / 15, zero point 0, codes 15; column
// 1 (16 x -1.5, then 16 x 0) scale 0.1, zero point 15, codes 0 then 15.
// The codes are [N, K]. 8 bits: 255 steps (column 1's zero point 255).
// CHECK-LABEL: func @matmul
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[\[15(, 15){31}\], \[0(, 0){15}(, 15){16}\]\]}}> : tensor<2x32xui8>
// CHECK-DAG: %[[Z:.*]] = kiln.constant dense<{{\[}}[0], [15]]> : tensor<2x1xui8>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense_resource<weight_scales> : tensor<2x1xf32>
// CHECK: %[[Y:.*]] = kiln.matmul_nbits %arg0, %[[W]], %[[S]], %[[Z]] {bits = 4 : i64, block_size = 32 : i64} : tensor<3x32xf32>, tensor<2x32xui8>, tensor<2x1xf32>, tensor<2x1xui8>
// CHECK: return %[[Y]]
// CHECK: weight_scales: "0x040000008988083DCDCCCC3D"
// INT8-LABEL: func @matmul
// INT8: kiln.constant dense<{{\[}}[0], [255]]> : tensor<2x1xui8>
// INT8: kiln.matmul_nbits {{.*}} {bits = 8 : i64, block_size = 32 : i64}
func.func @matmul(%x: tensor<3x32xf32>) -> tensor<3x2xf32> {
  %w = kiln.constant dense<[[0.5, -1.5], [0.5, -1.5], [0.5, -1.5], [0.5, -1.5], [0.5, -1.5], [0.5, -1.5], [0.5, -1.5], [0.5, -1.5], [0.5, -1.5], [0.5, -1.5], [0.5, -1.5], [0.5, -1.5], [0.5, -1.5], [0.5, -1.5], [0.5, -1.5], [0.5, -1.5], [0.5, 0.0], [0.5, 0.0], [0.5, 0.0], [0.5, 0.0], [0.5, 0.0], [0.5, 0.0], [0.5, 0.0], [0.5, 0.0], [0.5, 0.0], [0.5, 0.0], [0.5, 0.0], [0.5, 0.0], [0.5, 0.0], [0.5, 0.0], [0.5, 0.0], [0.5, 0.0]]> : tensor<32x2xf32>
  %y = kiln.matmul %x, %w : tensor<3x32xf32>, tensor<32x2xf32>
  return %y : tensor<3x2xf32>
}

// -----

// A gemm with transposed weights ([N, K]) and a bias: the product, then the
// bias added. K = 40 in blocks of 32: two blocks, the last short.
// CHECK-LABEL: func @gemm
// CHECK: %[[Y:.*]] = kiln.matmul_nbits %arg0, %{{.*}}, %{{.*}}, %{{.*}} {bits = 4 : i64, block_size = 32 : i64} : tensor<2x40xf32>, tensor<3x40xui8>, tensor<3x2xf32>, tensor<3x2xui8>
// CHECK: %[[B:.*]] = kiln.add %[[Y]], %arg1 : tensor<2x3xf32>, tensor<3xf32>
// CHECK: return %[[B]]
func.func @gemm(%x: tensor<2x40xf32>, %c: tensor<3xf32>) -> tensor<2x3xf32> {
  %w = kiln.constant dense<0.25> : tensor<3x40xf32>
  %y = kiln.gemm %x, %w, %c {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<2x40xf32>, tensor<3x40xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Left as they are: K below 32, run-time weights, a gemm with alpha.
// CHECK-LABEL: func @untouched
// CHECK-NOT: kiln.matmul_nbits
// CHECK-COUNT-3: kiln.{{matmul|gemm}}
// CHECK-NOT: kiln.matmul_nbits
func.func @untouched(%x: tensor<2x16xf32>, %x2: tensor<2x64xf32>, %w2: tensor<64x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %w = kiln.constant dense<0.5> : tensor<16x4xf32>
  %y = kiln.matmul %x, %w : tensor<2x16xf32>, tensor<16x4xf32>
  %y2 = kiln.matmul %x2, %w2 : tensor<2x64xf32>, tensor<64x4xf32>
  %w3 = kiln.constant dense<0.5> : tensor<64x4xf32>
  %y3 = kiln.gemm %x2, %w3 {alpha = 2.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = false} : (tensor<2x64xf32>, tensor<64x4xf32>) -> tensor<2x4xf32>
  return %y, %y2, %y3 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}
