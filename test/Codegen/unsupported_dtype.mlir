// RUN: not kiln-compile %s -o %t.so 2>&1 | FileCheck %s
// Element types the CPU backend cannot compute yet are rejected with the
// output or the node that needs them.

func.func @main(%x: tensor<4xf32> {kiln.name = "x"}) -> (tensor<4xi64> {kiln.name = "y"}) {
  %c = kiln.constant dense<1> : tensor<4xi64>
  // CHECK: error: output 'y' has element type 'i64'; the CPU backend computes f32 tensors only
  // CHECK-NOT: see current operation
  return %c : tensor<4xi64>
}

// RUN: not kiln-compile %S/Inputs/i32_relu.mlir -o %t2.so 2>&1 | FileCheck %s --check-prefix=NODE
// NODE: error: node 'transpose_int' (kiln.transpose): element type 'i32' is not supported by the CPU backend yet (f32 only)
