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

// -----

// Block-quantized weights: constant codes, scales and zero points in blocks
// of 32 stay for the CPU's kernel; the CUDA targets multiply by the
// dequantized weights, computed here ((3 - zero) * scale per block, each
// block's over its 32 k, cut at K = 40; transposed to [K, N]).
// CPU-LABEL: func @nbits_constant
// CPU: kiln.matmul_nbits
// ALL-LABEL: func @nbits_constant
// ALL-NOT: kiln.matmul_nbits
// ALL: %[[W:.*]] = kiln.constant dense_resource<dequantized> : tensor<40x2xf32>
// ALL: kiln.matmul %arg0, %[[W]] : tensor<3x40xf32>, tensor<40x2xf32>
// ALL: dequantized: "0x04000000000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000020C000000040000080BF0000C0C1000080BF0000C0C1000080BF0000C0C1000080BF0000C0C1000080BF0000C0C1000080BF0000C0C1000080BF0000C0C1000080BF0000C0C1"
func.func @nbits_constant(%a: tensor<3x40xf32>) -> tensor<3x2xf32> {
  %w = kiln.constant dense<3> : tensor<2x40xui8>
  %s = kiln.constant dense<[[0.5, 0.25], [1.0, 2.0]]> : tensor<2x2xf32>
  %z = kiln.constant dense<[[8, 7], [1, 15]]> : tensor<2x2xui8>
  %y = kiln.matmul_nbits %a, %w, %s, %z {bits = 4 : i64, block_size = 32 : i64} : tensor<3x40xf32>, tensor<2x40xui8>, tensor<2x2xf32>, tensor<2x2xui8>
  return %y : tensor<3x2xf32>
}

// -----

// Blocks of 16 k (not whole 32-k units of the CPU kernel) expand on every
// target (constants: dequantized here); run-time scales into ops that
// dequantize: each block's zero point and scale repeated over its k.
// CPU-LABEL: func @nbits_expanded
// CPU-NOT: kiln.matmul_nbits
// CPU: kiln.matmul %arg0, %{{.*}} : tensor<3x32xf32>, tensor<32x2xf32>
// CPU-DAG: %[[W:.*]] = kiln.cast %{{.*}} : tensor<2x32xui8> -> tensor<2x32xf32>
// CPU-DAG: %[[Z:.*]] = kiln.cast %{{.*}} : tensor<2x1xui8> -> tensor<2x1xf32>
// CPU: kiln.expand %{{.*}} : tensor<2x1x1xf32> -> tensor<2x1x32xf32>
// CPU: %[[D:.*]] = kiln.sub %[[W]], %{{.*}}
// CPU: %[[Q:.*]] = kiln.mul %[[D]], %{{.*}}
// CPU: %[[T:.*]] = kiln.transpose %[[Q]]
// CPU: kiln.matmul %arg0, %[[T]] : tensor<3x32xf32>, tensor<32x2xf32>
// CPU-NOT: kiln.matmul_nbits
func.func @nbits_expanded(%a: tensor<3x32xf32>, %s2: tensor<2x1xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  %w = kiln.constant dense<3> : tensor<2x32xui8>
  %s = kiln.constant dense<0.5> : tensor<2x2xf32>
  %z = kiln.constant dense<8> : tensor<2x2xui8>
  %y = kiln.matmul_nbits %a, %w, %s, %z {bits = 4 : i64, block_size = 16 : i64} : tensor<3x32xf32>, tensor<2x32xui8>, tensor<2x2xf32>, tensor<2x2xui8>
  %z2 = kiln.constant dense<8> : tensor<2x1xui8>
  %y2 = kiln.matmul_nbits %a, %w, %s2, %z2 {bits = 4 : i64, block_size = 32 : i64} : tensor<3x32xf32>, tensor<2x32xui8>, tensor<2x1xf32>, tensor<2x1xui8>
  return %y, %y2 : tensor<3x2xf32>, tensor<3x2xf32>
}
