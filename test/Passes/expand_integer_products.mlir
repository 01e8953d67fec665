// RUN: kiln-opt --split-input-file --kiln-expand-integer-products %s | FileCheck %s --check-prefix=CPU
// RUN: kiln-opt --split-input-file --kiln-expand-integer-products=all=true %s | FileCheck %s --check-prefix=ALL

// Constant weights: the CPU keeps the 8-bit product for its ukernel; the
// CUDA targets (all) compute it as one exact f32 matmul (K = 4: every sum
// below 2^24), cast to int32.
// CPU-LABEL: func @constant_weights
// CPU: kiln.matmul_integer
// ALL-LABEL: func @constant_weights
// ALL-NOT: kiln.matmul_integer
// ALL-DAG: %[[A:.*]] = kiln.cast %arg0 : tensor<3x4xui8> -> tensor<3x4xf32>
// ALL-DAG: %[[AZ:.*]] = kiln.cast %arg1 : tensor<ui8> -> tensor<f32>
// ALL: %[[AS:.*]] = kiln.sub %[[A]], %[[AZ]]
// ALL: %[[P:.*]] = kiln.matmul %[[AS]], %{{.*}} : tensor<3x4xf32>, tensor<4x2xf32>
// ALL: %[[Y:.*]] = kiln.cast %[[P]] : tensor<3x2xf32> -> tensor<3x2xi32>
// ALL: return %[[Y]]
func.func @constant_weights(%a: tensor<3x4xui8>, %az: tensor<ui8>) -> tensor<3x2xi32> {
  %w = kiln.constant dense<[[1, -2], [3, -4], [5, -6], [7, -128]]> : tensor<4x2xi8>
  %wz = kiln.constant dense<0> : tensor<i8>
  %y = kiln.matmul_integer %a, %w, %az, %wz : tensor<3x4xui8>, tensor<4x2xi8>, tensor<ui8>, tensor<i8>
  return %y : tensor<3x2xi32>
}

// -----

// Run-time weights expand on every target. K = 300: 255 * 255 * 300 passes
// 2^24, so the lhs splits into 16 * hi + lo (two exact products, combined
// in int32: hi's times 16).
// CPU-LABEL: func @runtime_weights
// CPU-NOT: kiln.matmul_integer
// CPU: %[[H:.*]] = kiln.floor
// CPU: %[[HI:.*]] = kiln.matmul %[[H]], %{{.*}} : tensor<2x300xf32>, tensor<300x3xf32>
// CPU: %[[HI32:.*]] = kiln.cast %[[HI]] : tensor<2x3xf32> -> tensor<2x3xi32>
// CPU: %[[HI16:.*]] = kiln.mul %[[HI32]], %{{.*}} : tensor<2x3xi32>, tensor<i32>
// CPU: %[[LO:.*]] = kiln.matmul
// CPU: %[[LO32:.*]] = kiln.cast %[[LO]]
// CPU: %[[Y:.*]] = kiln.add %[[HI16]], %[[LO32]]
// CPU: return %[[Y]]
func.func @runtime_weights(%a: tensor<2x300xi8>, %w: tensor<300x3xi8>, %az: tensor<i8>,
                           %wz: tensor<i8>) -> tensor<2x3xi32> {
  %y = kiln.matmul_integer %a, %w, %az, %wz : tensor<2x300xi8>, tensor<300x3xi8>, tensor<i8>, tensor<i8>
  return %y : tensor<2x3xi32>
}
