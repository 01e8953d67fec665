// RUN: kiln-compile %s --weights=int4 -o %t.so --report %t.md
// RUN: FileCheck %s < %t.md
// RUN: kiln-compile %s --weights=int8:64 -o %t.so --report %t.json
// RUN: %python -c "import json; w = json.load(open('%t.json'))['weights']; assert w == {'bits': 8, 'block': 64, 'quantized': 2, 'products': 3}, w"
// RUN: kiln-compile %s --weights=int4 --emit=mlir | FileCheck %s --check-prefix=IR
// RUN: not kiln-compile %s --weights=int3 -o %t.so 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not kiln-compile %s --weights=int4:48 -o %t.so 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not kiln-compile %s --weights=int4 --precision=int8 -o %t.so 2>&1 | FileCheck %s --check-prefix=INT8

// --weights: the two products with constant weights (a matmul of K = 64
// and a gemm of K = 32) run on block-quantized codes; c . v (run-time
// weights) stays f32.
// CHECK: | kiln_k{{[0-9]+}}_matmul_nbits | {{.*}} | int4 weights |
// CHECK: - weights (--weights=int4:32): 2 of 3 gemms and matmuls on block-quantized codes (a scale and zero point per output column and block of 32 k; activations f32), the rest as they were
// IR-COUNT-2: kiln.matmul_nbits
// IR-NOT: kiln.matmul_nbits
// BAD: error: unknown --weights=int{{.*}} (none, int4 or int8, optionally :BLOCK -- k per scale, a multiple of 32 up to 4096; default 32)
// INT8: error: --weights quantizes weights only; --precision=int8 quantizes weights and activations: choose one

func.func @main(%x: tensor<4x64xf32> {kiln.name = "x"}, %v: tensor<64x8xf32> {kiln.name = "v"})
    -> (tensor<4x32xf32> {kiln.name = "y"}, tensor<4x8xf32> {kiln.name = "z"}) {
  %w = kiln.constant dense<0.25> : tensor<64x32xf32>
  %a = kiln.matmul %x, %w : tensor<4x64xf32>, tensor<64x32xf32>
  %r = kiln.relu %a : tensor<4x32xf32>
  %w2 = kiln.constant dense<-0.5> : tensor<32x64xf32>
  %c = kiln.gemm %r, %w2 {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = false} : (tensor<4x32xf32>, tensor<32x64xf32>) -> tensor<4x64xf32>
  %z = kiln.matmul %c, %v : tensor<4x64xf32>, tensor<64x8xf32>
  return %a, %z : tensor<4x32xf32>, tensor<4x8xf32>
}
