// RUN: %python -c "import numpy as np; np.save('%t.x.npy', np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32))"
// RUN: kiln-compile %s --precision=int8 --calibrate x=%t.x.npy -o %t.so --report %t.md
// RUN: FileCheck %s < %t.md
// RUN: kiln-compile %s --precision=int8 --calibrate x=%t.x.npy -o %t.so --report %t.json
// RUN: %python -c "import json; p = json.load(open('%t.json'))['precision']; assert p['mode'] == 'int8' and p['lowered'] == 2 and p['contractions'] == 2 and 0 < p['relative_error'] < 0.05, p"
// RUN: kiln-compile %s --precision=int8 --calibrate x=%t.x.npy --emit=mlir | FileCheck %s --check-prefix=IR
// RUN: not kiln-compile %s --precision=int8 --target=cuda-emu -o %t.so 2>&1 | FileCheck %s --check-prefix=CUDA
// RUN: not kiln-compile %s --precision=int8 --keep-fp32=c -o %t.so 2>&1 | FileCheck %s --check-prefix=KEEP
// RUN: %python -c "import numpy as np; np.save('%t.x2.npy', 3 * np.random.default_rng(2).standard_normal((4, 8)).astype(np.float32))"
// RUN: kiln-compile %s --precision=int8 --calibrate x=%t.x.npy --calibrate x=%t.x2.npy -o %t.so --report %t.two.md
// RUN: FileCheck %s --check-prefix=TWO < %t.two.md
// RUN: not kiln-compile %s --precision=int8 --calibrate x=%t.x.npy --calibrate x=%t.x2.npy --calibrate v=%t.x.npy -o %t.so 2>&1 | FileCheck %s --check-prefix=COUNTS
// RUN: not kiln-compile %s --precision=bf16 --calibrate x=%t.x.npy --calibrate x=%t.x2.npy -o %t.so 2>&1 | FileCheck %s --check-prefix=TWICE
// DEFINE: %{samples} = --calibrate x=%t.outlier0.npy --calibrate x=%t.outlier1.npy --calibrate x=%t.outlier2.npy --calibrate x=%t.outlier3.npy --calibrate x=%t.outlier4.npy --calibrate x=%t.outlier5.npy --calibrate x=%t.outlier6.npy --calibrate x=%t.outlier7.npy
// RUN: kiln-compile %S/Inputs/no_products.mlir --precision=int8 -o %t.none.so 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: %python -c "import numpy as np; r = np.random.default_rng(1); xs = r.standard_normal((8, 4, 8)).astype(np.float32); xs[0, 1, 3] = 1000; [np.save('%t.outlier%d.npy' % k, x) for k, x in enumerate(xs)]"
// RUN: kiln-compile %s --precision=int8 %{samples} -o %t.so --report %t.minmax.json
// RUN: kiln-compile %s --precision=int8 %{samples} --calibrate-method=percentile:99 -o %t.so --report %t.pct.json
// RUN: kiln-compile %s --precision=int8 %{samples} --calibrate-method=entropy -o %t.so --report %t.kl.json
// RUN: kiln-compile %s --precision=int8 %{samples} --calibrate-method=entropy -o %t.so --report %t.kl.md
// RUN: %python -c "import json; r = [json.load(open('%t.' + k + '.json'))['precision'] for k in ('minmax', 'pct', 'kl')]; assert [p['range_method'] for p in r] == ['minmax', 'percentile:99', 'entropy'], r; x = [p['ranges'][0] for p in r]; assert x[0]['hi'] == 1000 and 1 < x[1]['hi'] < 4 and 1 < x[2]['hi'] < 100 and x[1]['lo'] < -1 and x[2]['lo'] < -1, x"
// RUN: FileCheck %s --check-prefix=KL < %t.kl.md
// RUN: not kiln-compile %s --precision=int8 --calibrate-method=median -o %t.so 2>&1 | FileCheck %s --check-prefix=METHOD
// RUN: not kiln-compile %s --precision=bf16 --calibrate-method=entropy -o %t.so 2>&1 | FileCheck %s --check-prefix=NOTINT8

// --precision=int8: a trial build measures the lhs range of each product
// with constant weights (a and c; x . v has no constant weights) on the
// calibration input, and both compute on the 8-bit kernels; a second trial
// build measures the result against fp32.
// CHECK: | kiln_k{{[0-9]+}}_matmul_integer | {{.*}} | int8 |
// CHECK: | kiln_k{{[0-9]+}}_matmul_integer | {{.*}} | int8 |
// CHECK: - precision (--precision=int8): 2 of 2 gemms, matmuls and convolutions with constant weights on 8-bit integers {{.*}}; ranges (minmax) measured on the --calibrate inputs{{.*}}: relative error {{[0-9.]+}}e-0{{[2-4]}} against Kiln's fp32 build {{.*}}; 2 trial builds

// IR: kiln.matmul_integer %{{.*}} : tensor<4x8xui8>, tensor<8x8xi8>, tensor<ui8>, tensor<i8>
// IR: kiln.matmul_integer %{{.*}} : tensor<4x8xui8>, tensor<8x8xi8>, tensor<ui8>, tensor<i8>
// IR-NOT: kiln.int8_range

// Several samples of an input (--calibrate repeated): the ranges span them
// all; the report's error is measured on the first.
// TWO: ranges (minmax) measured on 2 samples of the --calibrate inputs, random normal values for the others (the error on the first): relative error
// COUNTS: error: {{.*}}--calibrate gives 'x' 2 time(s) and 'v' 1: each sample needs a file for every input named
// TWICE: error: {{.*}}--calibrate names 'x' twice (several samples of an input are for --precision=int8's ranges)

// CUDA: error: --precision=int8 runs on the CPU's 8-bit kernels; the CUDA targets have none (--target=cuda-emu)
// KEEP: error: --keep-fp32 applies to --precision=bf16, fp16 and auto
// --calibrate-method: an outlier (1000 among 256 normal values, in 8
// samples) stretches the min-max range of the product reading x; the 99th
// percentile drops it (the 1st keeps the negative side), the entropy
// threshold clips it.
// KL: ranges (entropy) measured on 8 samples of the --calibrate inputs
// METHOD: error: --calibrate-method: 'median' is not minmax, percentile, percentile:P (50 < P <= 100) or entropy
// NOTINT8: error: --calibrate-method chooses --precision=int8's activation ranges

// NONE: warning: --precision=int8: the model has no Gemm, MatMul or Conv with constant weights to quantize; it stays fp32

func.func @main(%x: tensor<4x8xf32> {kiln.name = "x"}, %v: tensor<8x8xf32> {kiln.name = "v"}) -> (tensor<4x8xf32> {kiln.name = "y"}, tensor<4x8xf32> {kiln.name = "z"}) {
  %wa = kiln.constant dense<[[0.3, -0.1, 0.2, 0.5, -0.4, 0.1, 0.05, -0.2], [0.1, 0.2, -0.3, 0.4, 0.25, -0.15, 0.3, 0.1], [-0.2, 0.3, 0.1, -0.1, 0.2, 0.4, -0.3, 0.2], [0.4, -0.2, 0.3, 0.1, -0.1, 0.2, 0.1, -0.4], [0.2, 0.1, -0.4, 0.3, 0.3, -0.2, 0.2, 0.1], [-0.1, 0.4, 0.2, -0.3, 0.1, 0.3, -0.1, 0.3], [0.3, -0.3, 0.1, 0.2, -0.2, 0.1, 0.4, -0.1], [0.1, 0.2, 0.3, -0.2, 0.4, -0.3, 0.2, 0.2]]> : tensor<8x8xf32>
  %wc = kiln.constant dense<[[0.5, 0.1, -0.2, 0.3, 0.2, -0.1, 0.4, 0.1], [-0.3, 0.2, 0.4, -0.1, 0.1, 0.3, -0.2, 0.2], [0.2, -0.4, 0.1, 0.2, -0.3, 0.1, 0.3, -0.1], [0.1, 0.3, -0.1, 0.4, 0.2, -0.2, 0.1, 0.3], [0.4, -0.1, 0.2, -0.3, 0.1, 0.2, -0.4, 0.1], [-0.2, 0.1, 0.3, 0.1, -0.4, 0.3, 0.2, -0.3], [0.3, 0.2, -0.3, 0.2, 0.1, -0.1, 0.1, 0.4], [0.1, -0.3, 0.2, 0.1, 0.3, 0.4, -0.2, 0.2]]> : tensor<8x8xf32>
  %a = kiln.matmul %x, %wa : tensor<4x8xf32>, tensor<8x8xf32> loc("a")
  %r = kiln.relu %a : tensor<4x8xf32>
  %c = kiln.matmul %r, %wc : tensor<4x8xf32>, tensor<8x8xf32> loc("c")
  %z = kiln.matmul %x, %v : tensor<4x8xf32>, tensor<8x8xf32> loc("xv")
  return %c, %z : tensor<4x8xf32>, tensor<4x8xf32>
}
