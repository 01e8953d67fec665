// RUN: kiln-compile %s --emit=kernels | FileCheck %s --check-prefix=AUTO
// RUN: kiln-compile %s --emit=kernels --k-block=192 | FileCheck %s --check-prefix=DEEP
// Weights of more than 64 MiB (here 4100 x 4096 floats) stream from memory
// at every run: --k-block=auto keeps k blocks of 128 (accumulate argument
// 0); --k-block=192 asks for the deeper ones anyway.

func.func @main(%a: tensor<8x4100xf32> {kiln.name = "a"}) -> (tensor<8x4096xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<0.5> : tensor<4100x4096xf32>
  %y = kiln.matmul %a, %w : tensor<8x4100xf32>, tensor<4100x4096xf32>
  return %y : tensor<8x4096xf32>
}

// AUTO-LABEL: func.func @kiln_k0_matmul(
// AUTO: call @kiln_uk_sgemm_pb({{.*}}, %c0_i64{{[_0-9]*}})
// DEEP-LABEL: func.func @kiln_k0_matmul(
// DEEP: call @kiln_uk_sgemm_pb({{.*}}, %c2_i64{{[_0-9]*}})
