// RUN: kiln-compile %s --emit=kernels | FileCheck %s
// f32 attention on the CPU (Lowering::flashAttention) with D a multiple of
// 16: K's block is transposed 16 x 16 in registers (vector.shuffle) straight
// into kiln_uk_sgemm_pb's 32-key panels (32 * D = 1024 floats apart); the
// last panel (keys 192-223) is zeroed first: its columns past the 200 keys
// are multiplied too. 200 keys (<= 256) are one block: 200 x 200 scores per
// workgroup, in rows padded to 208 (whole vectors) whose columns past the
// keys hold -inf, so that the maximum (x > y ? x : y) and the sum of the
// exponentials run on whole vectors; one block needs no running maximum, so
// P x V starts the output (not accumulating). 200 queries are two balanced
// blocks of 100.
// Numerics: test/e2e/compare_ops.py (attention_*).

func.func @main(%q: tensor<1x200x32xf32> {kiln.name = "q"}, %k: tensor<1x200x32xf32> {kiln.name = "k"}, %v: tensor<1x200x32xf32> {kiln.name = "v"}) -> (tensor<1x200x32xf32> {kiln.name = "y"}) {
  %a = kiln.attention %q, %k, %v {scale = 0.25 : f32} : tensor<1x200x32xf32>, tensor<1x200x32xf32>, tensor<1x200x32xf32> -> tensor<1x200x32xf32>
  return %a : tensor<1x200x32xf32>
}

// CHECK-LABEL: func.func @kiln_k0_attention(
// CHECK-SAME: kiln.workgroups = 2
// K^T panels: ceil(200 / 32) * 32 * 32 = 7168 floats, the last 1024 zeroed;
// S: 100 x 208.
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<20800xf32>
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<7168xf32>
// CHECK: scf.for %{{.*}} = %c6144 to %c7168 step %c16
// CHECK-NEXT: arith.constant
// CHECK-NEXT: vector.store %{{.*}} : memref<7168xf32>, vector<16xf32>
// CHECK-COUNT-64: vector.shuffle
// CHECK: call @kiln_uk_sgemm_pb({{.*}}, %c32_i64{{[_0-9]*}}, {{.*}}, %c1024_i64{{[_0-9]*}}, {{.*}}, %c208_i64{{[_0-9]*}}, %c0_i64{{[_0-9]*}})
// CHECK: memref.store %cst{{[_0-9]*}}, %{{.*}} : memref<20800xf32>
// CHECK: arith.cmpf ogt, %{{.*}} : vector<16xf32>
// CHECK: vector.reduction <maxnumf>, %{{.*}} fastmath<nnan>
// CHECK: math.exp
// CHECK: vector.reduction <add>, %{{.*}} fastmath<reassoc>
// CHECK: call @kiln_uk_sgemm({{.*}}, %c208_i64{{[_0-9]*}}, {{.*}}, %c0_i64{{[_0-9]*}})
