// RUN: not kiln-compile %s -o %t.so 2>&1 | FileCheck %s
// Element types the runtime's ABI has no code for are rejected with the
// output that needs them.

func.func @main(%x: tensor<4xf32> {kiln.name = "x"}) -> (tensor<4xi4> {kiln.name = "y"}) {
  %c = kiln.constant dense<3> : tensor<4xi4>
  // CHECK: error: output 'y' has unsupported element type 'i4'
  // CHECK-NOT: see current operation
  return %c : tensor<4xi4>
}
