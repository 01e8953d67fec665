// RUN: kiln-compile %s --emit=kernels --precision=bf16 | FileCheck %s
// RUN: kiln-compile %s --emit=kernels --precision=bf16 --keep-fp32=attention | FileCheck %s --check-prefix=KEEP
// --precision=bf16 attention on the CPU (Lowering::flashAttention): both
// products on the bf16 ukernel kiln_uk_sbgemm_pa, the softmax in f32
// vectors. D = 37 (odd) and 45 keys (odd, one block) test the pairs of k.
// Numerics: test/e2e/precision.py (attention_*).

func.func @main(%q: tensor<2x7x37xf32> {kiln.name = "q"}, %k: tensor<2x45x37xf32> {kiln.name = "k"}, %v: tensor<2x45x19xf32> {kiln.name = "v"}) -> (tensor<2x7x19xf32> {kiln.name = "y"}) {
  %m = kiln.constant dense<0.5> : tensor<1x7x45xf32>
  %a = kiln.attention %q, %k, %v, %m {scale = 0.25 : f32} : tensor<2x7x37xf32>, tensor<2x45x37xf32>, tensor<2x45x19xf32>, tensor<1x7x45xf32> -> tensor<2x7x19xf32>
  return %a : tensor<2x7x19xf32>
}

// One workgroup per batch (7 queries: one block). Q16: 7 rows of Dp = 38
// bf16; P16: 7 rows of 46 (45 keys rounded up to even); K^T: 37 x 45 f32;
// S: 7 x 45.
// CHECK-LABEL: func.func @kiln_k3_attention(
// CHECK-SAME: kiln.workgroups = 2
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<266xbf16>
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<322xbf16>
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<1665xf32>
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<315xf32>
// Q scaled and rounded, 16 lanes at a time; the odd D's pair ends in zero.
// CHECK: arith.truncf {{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK: memref.store %{{.*}} : memref<266xbf16>
// S = Q16 x K^T: lda 38, ldb = ldc = 45 (the key block).
// CHECK: call @kiln_uk_sbgemm_pa({{.*}}, %c38_i64, {{.*}}, %c45_i64, {{.*}}, %c45_i64{{.*}}, %c0_i64)
// The mask added and the maximum taken in vectors (x > y ? x : y, one
// VMAXPS); the probabilities rounded to bf16 and summed as rounded.
// CHECK: arith.cmpf ogt
// CHECK: vector.reduction <maxnumf>, %{{.*}} fastmath<nnan>
// CHECK: math.exp
// CHECK: arith.truncf {{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK: arith.extf {{.*}} : vector<16xbf16> to vector<16xf32>
// CHECK: vector.reduction <add>, %{{.*}} fastmath<reassoc>
// An odd key count: the last pair's upper half zero.
// CHECK: scf.if
// CHECK: memref.store %{{.*}} : memref<322xbf16>
// acc = P16 x V: lda 46, V's rows read in place (ldb 19); one block of
// keys, so the product starts acc (no running rescale).
// CHECK: call @kiln_uk_sbgemm_pa({{.*}}, %c46_i64, {{.*}}, %c19_i64, {{.*}}, %c19_i64{{.*}}, %c0_i64{{[_0-9]*}})
// The result rounded as it is stored.
// CHECK: arith.truncf {{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK-NOT: kiln_uk_sgemm
// CHECK: return

// --keep-fp32=attention: the same flash kernel in f32 on the f32 ukernel:
// Q in f32 rows (7 x 37), S = Q x K^T (lda 37, ldb = ldc = 45), the
// softmax in vectors, P in f32 rows x V (lda 45, ldb = ldc = 19; one
// block: not accumulating).
// KEEP-LABEL: func.func @{{kiln_k[0-9]+}}_attention(
// KEEP-NOT: kiln_uk_sbgemm
// KEEP: memref.alloca() {alignment = 64 : i64} : memref<259xf32>
// KEEP: call @kiln_uk_sgemm({{.*}}, %c37_i64, {{.*}}, %c45_i64, {{.*}}, %c45_i64{{.*}}, %c0_i64)
// KEEP: vector.reduction <maxnumf>
// KEEP: math.exp
// KEEP: vector.reduction <add>
// KEEP: call @kiln_uk_sgemm({{.*}}, %c45_i64{{.*}}, {{.*}}, %c19_i64, {{.*}}, %c19_i64{{.*}}, %c0_i64{{[_0-9]*}})
// KEEP-NOT: kiln_uk_sbgemm
