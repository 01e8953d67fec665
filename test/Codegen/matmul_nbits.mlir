// RUN: kiln-compile %s --emit=kernels | FileCheck %s
// RUN: kiln-compile %s --target=cuda-emu --emit=kernels | FileCheck %s --check-prefix=GPU
// Products on block-quantized weights. 4-bit codes (values 0..15) go to
// kiln_uk_bqgemm two to a byte (bits 4), blocks of 64 k; the bias and the
// ReLU fuse as the epilogue of each tile of f32 sums (K = 96, N = 40: one
// tile). Codes past 15 in a 4-bit product's carriers are stored a byte each (bits
// 8). The CUDA targets take the f32 product of the weights dequantized at
// compile time instead.

func.func @main(%x: tensor<1x96xf32> {kiln.name = "x"}) -> (tensor<1x40xf32> {kiln.name = "y"}, tensor<1x40xf32> {kiln.name = "y8"}) {
  %w = kiln.constant dense<5> : tensor<40x96xui8>
  %s = kiln.constant dense<0.125> : tensor<40x2xf32>
  %z = kiln.constant dense<8> : tensor<40x2xui8>
  %b = kiln.constant dense<0.5> : tensor<40xf32>
  %m = kiln.matmul_nbits %x, %w, %s, %z {bits = 4 : i64, block_size = 64 : i64} : tensor<1x96xf32>, tensor<40x96xui8>, tensor<40x2xf32>, tensor<40x2xui8>
  %a = kiln.add %m, %b : tensor<1x40xf32>, tensor<40xf32>
  %y = kiln.relu %a : tensor<1x40xf32>
  %w8 = kiln.constant dense<200> : tensor<40x96xui8>
  %y8 = kiln.matmul_nbits %x, %w8, %s, %z {bits = 4 : i64, block_size = 64 : i64} : tensor<1x96xf32>, tensor<40x96xui8>, tensor<40x2xf32>, tensor<40x2xui8>
  return %y, %y8 : tensor<1x40xf32>, tensor<1x40xf32>
}

// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_matmul_nbits(
// CHECK: call @kiln_uk_bqgemm(%{{.*}}, %{{.*}}, %c96_i64, %{{.*}}, %c96_i64{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c40_i64, %c4_i64, %c64_i64, %c0_i64)
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_matmul_nbits(
// CHECK: call @kiln_uk_bqgemm(%{{.*}}, %{{.*}}, %c96_i64, %{{.*}}, %c96_i64{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c40_i64, %c8_i64, %c64_i64, %c0_i64)
// GPU-NOT: call @kiln_uk_bqgemm
// GPU: func.func @kiln_k{{[0-9]+}}_matmul(
// GPU-NOT: call @kiln_uk_bqgemm
