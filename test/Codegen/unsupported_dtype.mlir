// RUN: not kiln-compile %s -o %t.so 2>&1 | FileCheck %s
// Element types the CPU backend cannot compute yet are rejected at the op.

func.func @main(%x: tensor<4xf32> {kiln.name = "x"}) -> (tensor<4xi64> {kiln.name = "y"}) {
  %c = kiln.constant dense<1> : tensor<4xi64>
  // CHECK: error: constant of element type 'i64' is used by a kernel; the CPU backend supports f32 tensors
  return %c : tensor<4xi64>
}
