// RUN: kiln-compile %s -O0 --emit=memory-plan | FileCheck %s
// RUN: kiln-compile %s -O0 --target=cuda-emu --emit=memory-plan | FileCheck %s
// kiln-plan-memory places a concat tree as one block whose ranges live at
// different times: a UNet-like skip connection %s is written into the first
// half of the concat %f at the start, the decoder's %c into the second half
// only at the end. Until %c exists, that second half holds %a: the arena is
// the live peak, 6144 bytes (%s, %a then %c, %b), where a tree alive as a
// whole would need 8192.

func.func @main(%x: tensor<8x64xf32> {kiln.name = "x"}) -> (tensor<16x64xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<0.125> : tensor<64x64xf32>
  %s = kiln.matmul %x, %w : tensor<8x64xf32>, tensor<64x64xf32>
  %a = kiln.matmul %s, %w : tensor<8x64xf32>, tensor<64x64xf32>
  %b = kiln.matmul %a, %w : tensor<8x64xf32>, tensor<64x64xf32>
  %c = kiln.matmul %b, %w : tensor<8x64xf32>, tensor<64x64xf32>
  %f = kiln.concat %s, %c {axis = 0 : i64} : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<16x64xf32>
  %o = kiln.matmul %f, %w : tensor<16x64xf32>, tensor<64x64xf32>
  return %o : tensor<16x64xf32>
}

// CHECK: arena 6144 bytes: live peak 6144, naive 8192, no reuse 12288; 0 kernels in place, 1 concat elided
// (Buffer numbers relative to the first: the CPU adds a packed copy of the
// weights before it.)
// CHECK-NEXT: [0, 2048) buffer [[#B:]]: 2048 bytes, kiln_k0_matmul .. kiln_k1_matmul
// CHECK-SAME: (inside buffer [[#B+4]])
// CHECK-NEXT: [0, 4096) buffer [[#B+4]]: 4096 bytes, kiln_k5_matmul .. kiln_k5_matmul
// CHECK-NEXT: [2048, 4096) buffer [[#B+1]]: 2048 bytes, kiln_k1_matmul .. kiln_k2_matmul
// CHECK-NEXT: [2048, 4096) buffer [[#B+3]]: 2048 bytes, kiln_k3_matmul .. kiln_k3_matmul (inside buffer [[#B+4]])
// CHECK-NEXT: [4096, 6144) buffer [[#B+2]]: 2048 bytes, kiln_k2_matmul .. kiln_k3_matmul
// CHECK-NEXT: no kernel: kiln_k4_concat
