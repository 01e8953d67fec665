// RUN: kiln-compile %s --emit=kernels | FileCheck %s
// A gemm with 6 or more rows and a constant B^T runs through the sgemm
// ukernel (B transposed once at compile time); a batch-1 gemm with constant
// weights streams them through kiln_uk_sgemv_t (B^T's rows as given: K = 16
// apart), and one whose B is an input keeps the dot-product loops.

func.func @main(%a: tensor<8x16xf32> {kiln.name = "a"}, %v: tensor<1x16xf32> {kiln.name = "v"},
                %u: tensor<4x16xf32> {kiln.name = "u"})
    -> (tensor<8x4xf32> {kiln.name = "y"}, tensor<1x4xf32> {kiln.name = "z"},
        tensor<1x4xf32> {kiln.name = "t"}) {
  %w = kiln.constant dense<0.5> : tensor<4x16xf32>
  %g = kiln.gemm %a, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<8x4xf32>
  %h = kiln.gemm %v, %w {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<1x16xf32>, tensor<4x16xf32>) -> tensor<1x4xf32>
  %r = kiln.gemm %v, %u {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true} : (tensor<1x16xf32>, tensor<4x16xf32>) -> tensor<1x4xf32>
  return %g, %h, %r : tensor<8x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>
}

// CHECK-LABEL: func.func @kiln_k0_gemm(
// CHECK: call @kiln_uk_sgemm
// CHECK-LABEL: func.func @kiln_k1_gemm(
// CHECK: call @kiln_uk_sgemv_t({{.*}}, %c16_i64{{[_0-9]*}}, {{.*}}, %c16_i64{{[_0-9]*}}, {{.*}}, %c4_i64{{[_0-9]*}}, %c0_i64{{[_0-9]*}})
// CHECK-LABEL: func.func @kiln_k2_gemm(
// CHECK-NOT: call @kiln_uk_sgemm
// CHECK: arith.addf {{.*}} fastmath<reassoc,contract>
