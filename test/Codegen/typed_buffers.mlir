// Buffers keep their element type: data movement (transpose, slice,
// concat, output copies) moves i32/i64/f16/bf16/f64 elements unchanged,
// casts convert in the kernels that load or store them, and f64
// elementwise ops compute in f64.
// RUN: kiln-compile %s --emit=kernels | FileCheck %s
// RUN: rm -rf %t && mkdir -p %t && kiln-compile %s -o %t/m.so
// RUN: kiln-compile %s --target=cuda-emu -o %t/emu.so
// RUN: %python -c "import numpy as np; r=np.random.default_rng(7); np.save('%t/x.npy', r.integers(-1000000, 1000000, (2, 3), dtype=np.int32)); np.save('%t/h.npy', r.standard_normal((2, 4)).astype(np.float16)); np.save('%t/d.npy', r.standard_normal((4,)) * 1e6)"
// RUN: kiln-run %t/m.so --input x=%t/x.npy --input h=%t/h.npy --input d=%t/d.npy --output-dir %t/out
// RUN: kiln-run %t/emu.so --input x=%t/x.npy --input h=%t/h.npy --input d=%t/d.npy --output-dir %t/emu
// RUN: %python %S/Inputs/check_typed.py %t %t/out
// RUN: %python %S/Inputs/check_typed.py %t %t/emu

// CHECK-LABEL: func.func @kiln_k0_transpose(%{{.*}}: memref<6xi32> {{.*}}, %{{.*}}: memref<6xi32>
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_concat(%{{.*}}: memref<8xf16> {{.*}}, %{{.*}}: memref<8xf16> {{.*}}, %{{.*}}: memref<16xf16>
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_cast(%{{.*}}: memref<16xf16> {{.*}}, %{{.*}}: memref<16xbf16>
// CHECK: arith.extf {{.*}} : f16 to f32
// CHECK: arith.truncf {{.*}} : f32 to bf16
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_cast(%{{.*}}: memref<4xf64> {{.*}}, %{{.*}}: memref<4xi64>
// CHECK: arith.fptosi {{.*}} : f64 to i64
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_fusion(%{{.*}}: memref<4xf64> {{.*}}, %{{.*}}: memref<1xf64> {{.*}}, %{{.*}}: memref<4xf64>
// CHECK: arith.mulf {{.*}} : f64
// CHECK: arith.addf {{.*}} : f64
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_copy(%{{.*}}: memref<4xi64> {{.*}}, %{{.*}}: memref<4xi64>
func.func @main(%x: tensor<2x3xi32> {kiln.name = "x"}, %h: tensor<2x4xf16> {kiln.name = "h"},
                %d: tensor<4xf64> {kiln.name = "d"})
    -> (tensor<3x2xi32> {kiln.name = "xt"}, tensor<2x8xbf16> {kiln.name = "hb"},
        tensor<4xi64> {kiln.name = "di"}, tensor<4xi64> {kiln.name = "ci"},
        tensor<4xf64> {kiln.name = "d_same"}, tensor<4xf64> {kiln.name = "dsq"}) {
  %t = kiln.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xi32> -> tensor<3x2xi32>
  %c = kiln.concat %h, %h {axis = 1 : i64} : tensor<2x4xf16>, tensor<2x4xf16> -> tensor<2x8xf16>
  %b = kiln.cast %c : tensor<2x8xf16> -> tensor<2x8xbf16>
  %i = kiln.cast %d : tensor<4xf64> -> tensor<4xi64>
  %k = kiln.constant dense<[3, -4, 5, 6000000000]> : tensor<4xi64>
  %sq = kiln.mul %d, %d : tensor<4xf64>, tensor<4xf64>
  %q = kiln.constant dense<1.25> : tensor<f64>
  %dsq = kiln.add %sq, %q : tensor<4xf64>, tensor<f64>
  return %t, %b, %i, %k, %d, %dsq : tensor<3x2xi32>, tensor<2x8xbf16>, tensor<4xi64>, tensor<4xi64>, tensor<4xf64>, tensor<4xf64>
}
