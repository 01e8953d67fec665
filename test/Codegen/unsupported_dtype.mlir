// RUN: not kiln-compile %s -o %t.so 2>&1 | FileCheck %s
// Element types the runtime's ABI has no code for (i24; the narrow i4, f8, ...
// types have codes since ABI 5) are rejected with the
// output that needs them.

func.func @main(%x: tensor<4xf32> {kiln.name = "x"}) -> (tensor<4xi24> {kiln.name = "y"}) {
  %c = kiln.constant dense<3> : tensor<4xi24>
  // CHECK: error: output 'y' has unsupported element type 'i24'
  // CHECK-NOT: see current operation
  return %c : tensor<4xi24>
}
