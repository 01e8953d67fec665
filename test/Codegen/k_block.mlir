// RUN: kiln-compile %s --emit=kernels | FileCheck %s --check-prefix=AUTO
// RUN: kiln-compile %s --emit=kernels --k-block=l2 | FileCheck %s --check-prefix=DEEP
// RUN: kiln-compile %s --emit=kernels --k-block=128 | FileCheck %s --check-prefix=SHALLOW
// RUN: not kiln-compile %s --emit=kernels --k-block=192 2>&1 | FileCheck %s --check-prefix=BAD
// The f32 products on packed weights take KILN_UK_DEEP_K (2) in their
// `accumulate` argument -- k blocks as deep as the core's L2 holds instead
// of 128 -- unless --k-block=128 says otherwise. Other ukernels never get
// it.

func.func @main(%a: tensor<8x256xf32> {kiln.name = "a"}) -> (tensor<8x64xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<0.5> : tensor<256x64xf32>
  %y = kiln.matmul %a, %w : tensor<8x256xf32>, tensor<256x64xf32>
  return %y : tensor<8x64xf32>
}

// AUTO-LABEL: func.func @kiln_k0_matmul(
// AUTO: call @kiln_uk_sgemm_pb({{.*}}, %c2_i64{{[_0-9]*}})
// DEEP-LABEL: func.func @kiln_k0_matmul(
// DEEP: call @kiln_uk_sgemm_pb({{.*}}, %c2_i64{{[_0-9]*}})
// SHALLOW-LABEL: func.func @kiln_k0_matmul(
// SHALLOW: call @kiln_uk_sgemm_pb({{.*}}, %c0_i64{{[_0-9]*}})
// BAD: kiln-compile: error: unknown --k-block=192 (auto, l2, 128)
