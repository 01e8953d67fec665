// RUN: kiln-compile %s --emit=kernels | FileCheck %s
// A gemm with 6 or more rows and a constant B^T runs through the sgemm
// ukernel (B transposed once at compile time); a batch-1 gemm keeps the
// dot-product loops.

func.func @main(%a: tensor<8x16xf32> {kiln.name = "a"}, %v: tensor<1x16xf32> {kiln.name = "v"})
    -> (tensor<8x4xf32> {kiln.name = "y"}, tensor<1x4xf32> {kiln.name = "z"}) {
  %w = kiln.constant dense<0.5> : tensor<4x16xf32>
  %g = kiln.gemm %a, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<8x4xf32>
  %h = kiln.gemm %v, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<1x16xf32>, tensor<4x16xf32>) -> tensor<1x4xf32>
  return %g, %h : tensor<8x4xf32>, tensor<1x4xf32>
}

// CHECK-LABEL: func.func @kiln_k0_gemm(
// CHECK: call @kiln_uk_sgemm
// CHECK-LABEL: func.func @kiln_k1_gemm(
// CHECK-NOT: call @kiln_uk_sgemm
// CHECK: arith.addf {{.*}} fastmath<reassoc,contract>
