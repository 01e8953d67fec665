// RUN: kiln-compile %s -O0 --emit=memory-plan | FileCheck %s
// RUN: kiln-compile %s -O0 --target=cuda-emu --emit=memory-plan | FileCheck %s
// RUN: kiln-compile %s -O0 --emit=kernels | FileCheck %s --check-prefix=KERNELS
// kiln-plan-memory elides concats: a DenseNet-like chain where each concat
// holds every feature before it. The last concat (%f) gets its inputs
// written straight into it; the earlier ones (%c1, %c2) are then prefixes of
// it and become views. No concat kernel is left, and the arena is %f alone
// (8192 bytes) where copying needs 18432 (first fit in schedule order).

func.func @main(%x: tensor<8x64xf32> {kiln.name = "x"}) -> (tensor<32x64xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<0.125> : tensor<64x64xf32>
  %l1 = kiln.constant dense<0.25> : tensor<8x16xf32>
  %l2 = kiln.constant dense<0.5> : tensor<8x24xf32>
  %x0 = kiln.matmul %x, %w : tensor<8x64xf32>, tensor<64x64xf32>
  %y1 = kiln.matmul %x0, %w : tensor<8x64xf32>, tensor<64x64xf32>
  %c1 = kiln.concat %x0, %y1 {axis = 0 : i64} : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<16x64xf32>
  %y2 = kiln.matmul %l1, %c1 : tensor<8x16xf32>, tensor<16x64xf32>
  %c2 = kiln.concat %x0, %y1, %y2 {axis = 0 : i64} : tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x64xf32> -> tensor<24x64xf32>
  %y3 = kiln.matmul %l2, %c2 : tensor<8x24xf32>, tensor<24x64xf32>
  %f = kiln.concat %x0, %y1, %y2, %y3 {axis = 0 : i64} : tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x64xf32>, tensor<8x64xf32> -> tensor<32x64xf32>
  %o = kiln.matmul %f, %w : tensor<32x64xf32>, tensor<64x64xf32>
  return %o : tensor<32x64xf32>
}

// CHECK: arena 8192 bytes: live peak 8192, naive 18432, no reuse 26624; 0 kernels in place, 3 concats elided; order: largest first
// (Buffer numbers relative to the first: the CPU adds a packed copy of the
// weights before it.)
// CHECK-NEXT: [0, 2048) buffer [[#B:]]: 2048 bytes, kiln_k0_matmul .. kiln_k1_matmul
// CHECK-SAME: (inside buffer [[#B+6]])
// CHECK-NEXT: [0, 4096) buffer [[#B+2]]: 4096 bytes, kiln_k3_matmul .. kiln_k3_matmul (inside buffer [[#B+6]])
// CHECK-NEXT: [0, 6144) buffer [[#B+4]]: 6144 bytes, kiln_k5_matmul .. kiln_k5_matmul (inside buffer [[#B+6]])
// CHECK-NEXT: [0, 8192) buffer [[#B+6]]: 8192 bytes, kiln_k7_matmul .. kiln_k7_matmul
// CHECK-NEXT: [2048, 4096) buffer [[#B+1]]: 2048 bytes, kiln_k1_matmul .. kiln_k1_matmul (inside buffer [[#B+6]])
// CHECK-NEXT: [4096, 6144) buffer [[#B+3]]: 2048 bytes, kiln_k3_matmul .. kiln_k3_matmul (inside buffer [[#B+6]])
// CHECK-NEXT: [6144, 8192) buffer [[#B+5]]: 2048 bytes, kiln_k5_matmul .. kiln_k5_matmul (inside buffer [[#B+6]])
// CHECK-NEXT: no kernel: kiln_k2_concat (its inputs are written into its output)
// CHECK-NEXT: no kernel: kiln_k4_concat (its inputs are written into its output)
// CHECK-NEXT: no kernel: kiln_k6_concat (its inputs are written into its output)

// KERNELS-NOT: concat
