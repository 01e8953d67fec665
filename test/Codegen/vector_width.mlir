// RUN: kiln-compile %s --emit=llvm --mcpu=sapphirerapids | FileCheck %s
// RUN: kiln-compile %s --emit=llvm --mcpu=x86-64-v3 | FileCheck %s --check-prefix=AVX2
// Loops LLVM vectorizes itself (elementwise chains, products' epilogues)
// take the CPU's full vector width: LLVM's Intel server CPUs prefer 256
// bits, which kiln-compile's x86 target features turn off (-prefer-256-bit),
// so an AVX-512 target gets 16 lanes of f32; an AVX2 one 8.

func.func @main(%x: tensor<64x1024xf32> {kiln.name = "x"}) -> (tensor<64x1024xf32> {kiln.name = "y"}) {
  %e = kiln.erf %x : tensor<64x1024xf32>
  %y = kiln.mul %x, %e : tensor<64x1024xf32>, tensor<64x1024xf32>
  return %y : tensor<64x1024xf32>
}

// CHECK-LABEL: define internal void @kiln_k0_fusion_entry(
// CHECK: fmul <16 x float>
// CHECK: ret void
// AVX2-LABEL: define internal void @kiln_k0_fusion_entry(
// AVX2-NOT: <16 x float>
// AVX2: fmul <8 x float>
// AVX2: ret void
