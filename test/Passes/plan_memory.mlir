// RUN: kiln-compile %s -O0 --emit=memory-plan | FileCheck %s
// RUN: kiln-compile %s -O0 --target=cuda-emu --emit=memory-plan | FileCheck %s
// RUN: kiln-compile %s -O0 --emit=kernels | FileCheck %s --check-prefix=KERNELS
// RUN: kiln-compile %s -O0 --disable-pass=kiln-plan-memory --emit=memory-plan | FileCheck %s --check-prefix=OFF
// kiln-plan-memory: arena offsets from lifetimes (schedule order), kernels
// in place. Every intermediate is 16x64 f32 (4096 bytes) except the
// reduction's 1x64 (256 bytes).
//  - tanh(%a) is not in place: %a is read again by the add.
//  - the add writes over %t (operand 0), which dies with it.
//  - the sub reads %r broadcast: it writes over %b (operand 1) instead.
//  - the cast changes the element type: never in place.
// At most two 4096-byte buffers and the 256-byte sum are alive at once, so
// the plan meets the live peak; a first fit in schedule order needs three.

func.func @main(%x: tensor<16x64xf32> {kiln.name = "x"})
    -> (tensor<16x64xf32> {kiln.name = "y"}, tensor<16x64xi32> {kiln.name = "z"}) {
  %w = kiln.constant dense<0.5> : tensor<64x64xf32>
  %a = kiln.matmul %x, %w : tensor<16x64xf32>, tensor<64x64xf32>
  %t = kiln.tanh %a : tensor<16x64xf32>
  %s = kiln.add %t, %a : tensor<16x64xf32>, tensor<16x64xf32>
  %r = kiln.reduce_sum %s {axes = array<i64: 0>, keepdims = true} : tensor<16x64xf32> -> tensor<1x64xf32>
  %b = kiln.matmul %s, %w : tensor<16x64xf32>, tensor<64x64xf32>
  %c = kiln.sub %r, %b : tensor<1x64xf32>, tensor<16x64xf32>
  %i = kiln.cast %c : tensor<16x64xf32> -> tensor<16x64xi32>
  %d = kiln.matmul %c, %w : tensor<16x64xf32>, tensor<64x64xf32>
  return %d, %i : tensor<16x64xf32>, tensor<16x64xi32>
}

// CHECK: arena 8448 bytes: live peak 8448, naive 12288, no reuse 20736; 2 kernels in place, 0 concats elided; order: largest first
// (Buffer numbers differ by target: the CPU's matmuls add a packed copy of
// the weights, shared by all three.)
// CHECK-NEXT: [0, 4096) buffer {{[0-9]+}}: 4096 bytes, kiln_k0_matmul .. kiln_k2_add
// CHECK-NEXT: [0, 4096) buffer [[B:[0-9]+]]: 4096 bytes, kiln_k4_matmul .. kiln_k7_matmul
// CHECK-NEXT: [4096, 8192) buffer [[T:[0-9]+]]: 4096 bytes, kiln_k1_tanh .. kiln_k4_matmul
// CHECK-NEXT: [8192, 8448) buffer {{[0-9]+}}: 256 bytes, kiln_k3_reduce_sum .. kiln_k5_sub
// CHECK-NEXT: in place: kiln_k2_add writes over its input 0 (buffer [[T]])
// CHECK-NEXT: in place: kiln_k5_sub writes over its input 1 (buffer [[B]])
// CHECK-NOT: in place

// An in-place kernel loses its output argument (no two arguments alias).
// KERNELS: func.func @kiln_k1_tanh(%arg0: memref<1024xf32> {llvm.noalias}, %arg1: memref<1024xf32> {llvm.noalias}, %arg2: index)
// KERNELS: func.func @kiln_k2_add(%arg0: memref<1024xf32> {llvm.noalias}, %arg1: memref<1024xf32> {llvm.noalias}, %arg2: index)
// KERNELS: func.func @kiln_k5_sub(%arg0: memref<64xf32> {llvm.noalias}, %arg1: memref<1024xf32> {llvm.noalias}, %arg2: index)
// KERNELS: func.func @kiln_k6_cast(%arg0: memref<1024xf32> {llvm.noalias}, %arg1: memref<1024xi32> {llvm.noalias}, %arg2: index)

// OFF: arena 20736 bytes: live peak 12288, naive 12288, no reuse 20736; 0 kernels in place, 0 concats elided; order: none (kiln-plan-memory disabled)
// OFF-NEXT: [0, 4096) buffer 3: 4096 bytes, kiln_k0_matmul .. kiln_k2_add
// OFF-NEXT: [4096, 8192) buffer 4: 4096 bytes, kiln_k1_tanh .. kiln_k2_add
// OFF-NEXT: [8192, 12288) buffer 5: 4096 bytes, kiln_k2_add .. kiln_k4_matmul
// OFF-NEXT: [12288, 12544) buffer 6: 256 bytes, kiln_k3_reduce_sum .. kiln_k5_sub
// OFF-NEXT: [12544, 16640) buffer 7: 4096 bytes, kiln_k4_matmul .. kiln_k5_sub
// OFF-NEXT: [16640, 20736) buffer 8: 4096 bytes, kiln_k5_sub .. kiln_k7_matmul
