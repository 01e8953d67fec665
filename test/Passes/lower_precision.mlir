// RUN: kiln-opt --kiln-lower-precision --canonicalize %s | FileCheck %s
// RUN: kiln-opt "--kiln-lower-precision=tensor-cores=true precision=fp16" --canonicalize %s | FileCheck %s --check-prefix=TC
// RUN: kiln-opt "--kiln-lower-precision=keep-fp32=MatMul" --canonicalize %s | FileCheck %s --check-prefix=KEEP
// RUN: kiln-opt "--kiln-lower-precision=keep-fp32=second" --canonicalize %s | FileCheck %s --check-prefix=BYNAME
// RUN: kiln-opt "--kiln-lower-precision=keep-index=0,2,3" --canonicalize %s | FileCheck %s --check-prefix=BYINDEX
// RUN: kiln-opt "--kiln-lower-precision=keep-fp32=first keep-index=0" --canonicalize %s | FileCheck %s --check-prefix=BOTH

// The CPU form: the matmuls stay f32 on rounded values. The input rounds
// (f32 -> bf16 -> f32), the weights round at compile time (0.3 -> 0.30078125,
// the nearest bf16), each result rounds; the relu of a rounded value needs
// no rounding before the second matmul; the residual add of two rounded
// values rounds; exp computes in f32 and its result rounds before the last
// matmul.
// CHECK-LABEL: func @mlp
// CHECK: %[[W:.*]] = kiln.constant dense<0.30078125> : tensor<8x8xf32>
// CHECK: %[[XD:.*]] = kiln.cast %arg0 : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK: %[[X:.*]] = kiln.cast %[[XD]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK: %[[A:.*]] = kiln.matmul %[[X]], %[[W]] {kiln.precision = #kiln.precision<bf16>}
// CHECK: %[[AD:.*]] = kiln.cast %[[A]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK: %[[AU:.*]] = kiln.cast %[[AD]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK: %[[R:.*]] = kiln.relu %[[AU]]
// CHECK: %[[B:.*]] = kiln.matmul %[[R]], %[[W]] {kiln.precision = #kiln.precision<bf16>}
// CHECK: %[[BD:.*]] = kiln.cast %[[B]]
// CHECK: %[[BU:.*]] = kiln.cast %[[BD]]
// CHECK: %[[S:.*]] = kiln.add %[[BU]], %[[R]]
// CHECK: %[[SD:.*]] = kiln.cast %[[S]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK: %[[SU:.*]] = kiln.cast %[[SD]]
// CHECK: %[[E:.*]] = kiln.exp %[[SU]]
// CHECK: %[[ED:.*]] = kiln.cast %[[E]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK: %[[EU:.*]] = kiln.cast %[[ED]]
// CHECK: kiln.matmul %[[EU]], %[[W]] {kiln.precision = #kiln.precision<bf16>}

// The tensor-core form: fp16 operands and results; weights converted at
// compile time.
// TC-LABEL: func @mlp
// TC: %[[W:.*]] = kiln.constant dense<3.000490e-01> : tensor<8x8xf16>
// TC: %[[X:.*]] = kiln.cast %arg0 : tensor<4x8xf32> -> tensor<4x8xf16>
// TC: %[[A:.*]] = kiln.matmul %[[X]], %[[W]] {kiln.precision = #kiln.precision<f16>} : tensor<4x8xf16>, tensor<8x8xf16>
// TC: %[[AU:.*]] = kiln.cast %[[A]] : tensor<4x8xf16> -> tensor<4x8xf32>
// TC: kiln.relu %[[AU]] : tensor<4x8xf32>

// --keep-fp32=MatMul (an ONNX op type): nothing changes.
// KEEP-LABEL: func @mlp
// KEEP-NOT: kiln.cast
// KEEP-NOT: kiln.precision
// KEEP: return

// --keep-fp32=second (a node name): that matmul stays f32, the others lower.
// BYNAME-LABEL: func @mlp
// BYNAME: kiln.matmul {{.*}} {kiln.precision = #kiln.precision<bf16>}
// BYNAME: {{kiln.matmul %[0-9]+, %[0-9]+ : tensor}}
// BYNAME: kiln.matmul {{.*}} {kiln.precision = #kiln.precision<bf16>}
// keep-index=0,2 (--precision=auto's search): the first and third
// contractions stay f32, the second lowers.
// BYINDEX-LABEL: func @mlp
// BYINDEX: {{kiln.matmul %arg0, %[0-9a-z_]+ : tensor}}
// BYINDEX: kiln.matmul {{.*}} {kiln.precision = #kiln.precision<bf16>}
// BYINDEX: {{kiln.matmul %[0-9]+, %[0-9a-z_]+ : tensor}}

// Positions count every f32 contraction, kept by name or not: with the
// first kept by name, index 0 is still the first.
// BOTH-LABEL: func @mlp
// BOTH: {{kiln.matmul %arg0, %[0-9a-z_]+ : tensor}}
// BOTH: kiln.matmul {{.*}} {kiln.precision = #kiln.precision<bf16>}
// BOTH: kiln.matmul {{.*}} {kiln.precision = #kiln.precision<bf16>}

func.func @mlp(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = kiln.constant dense<0.3> : tensor<8x8xf32>
  %a = kiln.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> loc("first")
  %r = kiln.relu %a : tensor<4x8xf32>
  %b = kiln.matmul %r, %w : tensor<4x8xf32>, tensor<8x8xf32> loc("second")
  %s = kiln.add %b, %r : tensor<4x8xf32>, tensor<4x8xf32>
  %e = kiln.exp %s : tensor<4x8xf32>
  %c = kiln.matmul %e, %w : tensor<4x8xf32>, tensor<8x8xf32> loc("third")
  return %c : tensor<4x8xf32>
}

// Attention (the CPU form): query, key and value round, the query where it
// is made, before the head split's reshape and transpose (only attention
// reads them, so they stay views of the rounded value); the mask stays f32;
// no cast after the result (its kernel rounds as it stores).
// CHECK-LABEL: func @heads
// CHECK: %[[XD:.*]] = kiln.cast %arg0 : tensor<8x16xf32> -> tensor<8x16xbf16>
// CHECK: %[[XU:.*]] = kiln.cast %[[XD]] : tensor<8x16xbf16> -> tensor<8x16xf32>
// CHECK: %[[R:.*]] = kiln.reshape %[[XU]]
// CHECK: %[[Q:.*]] = kiln.transpose %[[R]]
// CHECK: %[[KD:.*]] = kiln.cast %arg1 : tensor<2x8x8xf32> -> tensor<2x8x8xbf16>
// CHECK: %[[K:.*]] = kiln.cast %[[KD]]
// CHECK: %[[VD:.*]] = kiln.cast %arg2 : tensor<2x8x8xf32> -> tensor<2x8x8xbf16>
// CHECK: %[[V:.*]] = kiln.cast %[[VD]]
// CHECK: %[[A:.*]] = kiln.attention %[[Q]], %[[K]], %[[V]], %arg3 {kiln.precision = #kiln.precision<bf16>, scale = 5.000000e-01 : f32}
// CHECK-NOT: kiln.cast
// CHECK: return %[[A]]

// Tensor cores: their attention kernel is f32, attention stays as it is.
// TC-LABEL: func @heads
// TC-NOT: kiln.cast
// TC-NOT: kiln.precision
// TC: return

// keep-index counts attention as a contraction on the CPU.
// BYINDEX-LABEL: func @heads
// BYINDEX-NOT: kiln.precision
// BYINDEX: return
func.func @heads(%x: tensor<8x16xf32>, %k: tensor<2x8x8xf32>, %v: tensor<2x8x8xf32>,
                 %m: tensor<1x8x8xf32>) -> tensor<2x8x8xf32> {
  %r = kiln.reshape %x : tensor<8x16xf32> -> tensor<8x2x8xf32>
  %q = kiln.transpose %r {perm = array<i64: 1, 0, 2>} : tensor<8x2x8xf32> -> tensor<2x8x8xf32>
  %a = kiln.attention %q, %k, %v, %m {scale = 0.5 : f32} : tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<2x8x8xf32>, tensor<1x8x8xf32> -> tensor<2x8x8xf32>
  return %a : tensor<2x8x8xf32>
}
