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
// RUN: kiln-compile %S/Inputs/no_products.mlir --precision=int8 -o %t.none.so 2>&1 | FileCheck %s --check-prefix=NONE

// --precision=int8: a trial build measures the lhs range of each product
// with constant weights (a and c; x . v has no constant weights) on the
// calibration input, and both compute on the 8-bit kernels; a second trial
// build measures the result against fp32.
// CHECK: | kiln_k{{[0-9]+}}_matmul_integer | {{.*}} | int8 |
// CHECK: | kiln_k{{[0-9]+}}_matmul_integer | {{.*}} | int8 |
// CHECK: - precision (--precision=int8): 2 of 2 gemms, matmuls and convolutions with constant weights on 8-bit integers {{.*}}; ranges measured on the --calibrate inputs{{.*}}: relative error {{[0-9.]+}}e-0{{[2-4]}} against Kiln's fp32 build {{.*}}; 2 trial builds

// IR: kiln.matmul_integer %{{.*}} : tensor<4x8xui8>, tensor<8x8xi8>, tensor<ui8>, tensor<i8>
// IR: kiln.matmul_integer %{{.*}} : tensor<4x8xui8>, tensor<8x8xi8>, tensor<ui8>, tensor<i8>
// IR-NOT: kiln.int8_range

// Several samples of an input (--calibrate repeated): the ranges span them
// all; the report's error is measured on the first.
// TWO: ranges measured on 2 samples of the --calibrate inputs, random normal values for the others (the error on the first): relative error
// COUNTS: error: {{.*}}--calibrate gives 'x' 2 time(s) and 'v' 1: each sample needs a file for every input named
// TWICE: error: {{.*}}--calibrate names 'x' twice (several samples of an input are for --precision=int8's ranges)

// CUDA: error: --precision=int8 runs on the CPU's 8-bit kernels; the CUDA targets have none (--target=cuda-emu)
// KEEP: error: --keep-fp32 applies to --precision=bf16, fp16 and auto
// NONE: warning: --precision=int8: the model has no Gemm, MatMul or Conv with constant weights to quantize (depthwise convolutions have no 8-bit kernel); it stays fp32

func.func @main(%x: tensor<4x8xf32> {kiln.name = "x"}, %v: tensor<8x8xf32> {kiln.name = "v"}) -> (tensor<4x8xf32> {kiln.name = "y"}, tensor<4x8xf32> {kiln.name = "z"}) {
  %wa = kiln.constant dense<[[0.3, -0.1, 0.2, 0.5, -0.4, 0.1, 0.05, -0.2], [0.1, 0.2, -0.3, 0.4, 0.25, -0.15, 0.3, 0.1], [-0.2, 0.3, 0.1, -0.1, 0.2, 0.4, -0.3, 0.2], [0.4, -0.2, 0.3, 0.1, -0.1, 0.2, 0.1, -0.4], [0.2, 0.1, -0.4, 0.3, 0.3, -0.2, 0.2, 0.1], [-0.1, 0.4, 0.2, -0.3, 0.1, 0.3, -0.1, 0.3], [0.3, -0.3, 0.1, 0.2, -0.2, 0.1, 0.4, -0.1], [0.1, 0.2, 0.3, -0.2, 0.4, -0.3, 0.2, 0.2]]> : tensor<8x8xf32>
  %wc = kiln.constant dense<[[0.5, 0.1, -0.2, 0.3, 0.2, -0.1, 0.4, 0.1], [-0.3, 0.2, 0.4, -0.1, 0.1, 0.3, -0.2, 0.2], [0.2, -0.4, 0.1, 0.2, -0.3, 0.1, 0.3, -0.1], [0.1, 0.3, -0.1, 0.4, 0.2, -0.2, 0.1, 0.3], [0.4, -0.1, 0.2, -0.3, 0.1, 0.2, -0.4, 0.1], [-0.2, 0.1, 0.3, 0.1, -0.4, 0.3, 0.2, -0.3], [0.3, 0.2, -0.3, 0.2, 0.1, -0.1, 0.1, 0.4], [0.1, -0.3, 0.2, 0.1, 0.3, 0.4, -0.2, 0.2]]> : tensor<8x8xf32>
  %a = kiln.matmul %x, %wa : tensor<4x8xf32>, tensor<8x8xf32> loc("a")
  %r = kiln.relu %a : tensor<4x8xf32>
  %c = kiln.matmul %r, %wc : tensor<4x8xf32>, tensor<8x8xf32> loc("c")
  %z = kiln.matmul %x, %v : tensor<4x8xf32>, tensor<8x8xf32> loc("xv")
  return %c, %z : tensor<4x8xf32>, tensor<4x8xf32>
}
