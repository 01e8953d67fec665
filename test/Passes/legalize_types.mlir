// RUN: kiln-opt --split-input-file --kiln-legalize-types --canonicalize %s | FileCheck %s
// RUN: kiln-opt --split-input-file --kiln-legalize-types=tensor-cores --canonicalize %s | FileCheck %s --check-prefix=TC

// f16 arithmetic runs in f32 between casts; every op's result is rounded
// to f16 as the model says (f32 -> f16 -> f32 does not fold), constants
// convert at compile time.
// CHECK-LABEL: func @elementwise
// CHECK-DAG: %[[C:.*]] = kiln.constant dense<[1.000000e+00, 2.500000e-01]> : tensor<2xf32>
// CHECK-DAG: %[[X:.*]] = kiln.cast %arg0 : tensor<2xf16> -> tensor<2xf32>
// CHECK: %[[A:.*]] = kiln.add %[[X]], %[[C]] : tensor<2xf32>, tensor<2xf32>
// CHECK: %[[A16:.*]] = kiln.cast %[[A]] : tensor<2xf32> -> tensor<2xf16>
// CHECK: %[[A32:.*]] = kiln.cast %[[A16]] : tensor<2xf16> -> tensor<2xf32>
// CHECK: %[[R:.*]] = kiln.relu %[[A32]] : tensor<2xf32>
// CHECK: %[[R16:.*]] = kiln.cast %[[R]] : tensor<2xf32> -> tensor<2xf16>
// CHECK: return %[[R16]]
func.func @elementwise(%x: tensor<2xf16>) -> tensor<2xf16> {
  %c = kiln.constant dense<[1.0, 0.25]> : tensor<2xf16>
  %a = kiln.add %x, %c : tensor<2xf16>, tensor<2xf16>
  %r = kiln.relu %a : tensor<2xf16>
  return %r : tensor<2xf16>
}

// -----

// Data movement keeps the element type; f32 ops are left alone.
// CHECK-LABEL: func @movement
// CHECK-NEXT: kiln.transpose %arg0 {{.*}} : tensor<2x3xbf16> -> tensor<3x2xbf16>
// CHECK-NEXT: kiln.softmax %arg1
// CHECK-NEXT: return
func.func @movement(%x: tensor<2x3xbf16>, %y: tensor<4xf32>) -> (tensor<3x2xbf16>, tensor<4xf32>) {
  %t = kiln.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xbf16> -> tensor<3x2xbf16>
  %s = kiln.softmax %y {axis = 0 : i64} : tensor<4xf32>
  return %t, %s : tensor<3x2xbf16>, tensor<4xf32>
}

// -----

// Contractions: in f32 on the CPU; kept in bf16 with tensor-cores (the
// CUDA target), their consumers still computing in f32. f64 is left alone
// (f32 has neither its range nor its precision).
// CHECK-LABEL: func @contraction
// CHECK: %[[A:.*]] = kiln.cast %arg0 : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK: %[[B:.*]] = kiln.cast %arg1 : tensor<8x2xbf16> -> tensor<8x2xf32>
// CHECK: %[[M:.*]] = kiln.matmul %[[A]], %[[B]] : tensor<4x8xf32>, tensor<8x2xf32>
// CHECK: kiln.cast %[[M]] : tensor<4x2xf32> -> tensor<4x2xbf16>
// CHECK: kiln.gemm %arg2, %arg2 {{.*}} -> tensor<2x2xf64>
// TC-LABEL: func @contraction
// TC: %[[M:.*]] = kiln.matmul %arg0, %arg1 : tensor<4x8xbf16>, tensor<8x2xbf16>
// TC: kiln.cast %[[M]] : tensor<4x2xbf16> -> tensor<4x2xf32>
// TC: kiln.sigmoid
// TC: kiln.gemm %arg2, %arg2 {{.*}} -> tensor<2x2xf64>
func.func @contraction(%a: tensor<4x8xbf16>, %b: tensor<8x2xbf16>, %d: tensor<2x2xf64>)
    -> (tensor<4x2xbf16>, tensor<2x2xf64>) {
  %m = kiln.matmul %a, %b : tensor<4x8xbf16>, tensor<8x2xbf16>
  %s = kiln.sigmoid %m : tensor<4x2xbf16>
  %g = kiln.gemm %d, %d {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = false}
       : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
  return %s, %g : tensor<4x2xbf16>, tensor<2x2xf64>
}
