// RUN: kiln-compile %s --emit=kernels | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t && kiln-compile %s -o %t/m.so
// RUN: %python -c "import numpy as np; np.save('%t/x.npy', np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5)"
// RUN: kiln-run %t/m.so --input x=%t/x.npy --output-dir %t/out
// RUN: %python -c "import numpy as np; x=np.load('%t/x.npy'); r=np.maximum(x,0); assert (np.load('%t/out/same.npy')==x).all() and (np.load('%t/out/relu.npy')==r).all() and (np.load('%t/out/relu_again.npy')==r).all() and (np.load('%t/out/flat.npy')==r.reshape(6)).all()"
// Outputs: the producing kernel writes the caller's buffer; an input returned
// as is, and a value returned twice, get copy kernels; a reshape of a
// returned value is a copy too (its buffer is the other output's).

func.func @main(%x: tensor<2x3xf32> {kiln.name = "x"})
    -> (tensor<2x3xf32> {kiln.name = "same"}, tensor<2x3xf32> {kiln.name = "relu"},
        tensor<2x3xf32> {kiln.name = "relu_again"}, tensor<6xf32> {kiln.name = "flat"}) {
  %r = kiln.relu %x : tensor<2x3xf32>
  %f = kiln.reshape %r : tensor<2x3xf32> -> tensor<6xf32>
  return %x, %r, %r, %f : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<6xf32>
}

// CHECK-LABEL: func.func @kiln_k0_relu(
// CHECK-LABEL: func.func @kiln_k1_copy(
// CHECK-LABEL: func.func @kiln_k2_copy(
// CHECK-LABEL: func.func @kiln_k3_copy(
