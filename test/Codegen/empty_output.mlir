// An empty output (a Shape with start > end in ONNX) is a zero-element
// tensor: it compiles, the runtime accepts it without data, and kiln-run
// writes an empty array.
// RUN: rm -rf %t && mkdir -p %t && kiln-compile %s -o %t/m.so
// RUN: %python -c "import numpy as np; np.save('%t/x.npy', np.arange(4, dtype=np.float32))"
// RUN: kiln-run %t/m.so --input x=%t/x.npy --output-dir %t/out
// RUN: %python -c "import numpy as np; e = np.load('%t/out/empty.npy'); assert e.shape == (0,) and e.dtype == np.int64, e; assert (np.load('%t/out/y.npy') == np.arange(4) * 2).all()"
func.func @main(%x: tensor<4xf32> {kiln.name = "x"})
    -> (tensor<0xi64> {kiln.name = "empty"}, tensor<4xf32> {kiln.name = "y"}) {
  %e = kiln.constant dense<> : tensor<0xi64>
  %y = kiln.add %x, %x : tensor<4xf32>, tensor<4xf32>
  return %e, %y : tensor<0xi64>, tensor<4xf32>
}
