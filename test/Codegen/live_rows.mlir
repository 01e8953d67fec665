// RUN: kiln-compile %s -O0 --emit=kernels | FileCheck %s
// RUN: kiln-compile %s -O0 --emit=llvm | FileCheck %s --check-prefix=LLVM
// RUN: kiln-compile %s -O0 --target=cuda-emu --emit=kernels | FileCheck %s --check-prefix=EMU
// RUN: kiln-compile %s -O0 --disable-pass=kiln-live-rows --emit=kernels | FileCheck %s --check-prefix=EMU
// A symbolic batch N (bound 64): kernels whose output rows along N nothing
// reads past the run's size compute only the run's rows (kiln.live_launch =
// [inner, then per term num, den, symbol count, symbols]: inner * ceil(n *
// num / den) workgroups; kiln.size_args: the symbols whose sizes the kernel
// takes). The
// max over the batch reads the padding (the last row repeated), so the exp
// it reads, and the matmul the exp reads, stay at the bound; the tanh of
// the same matmul does not.

func.func @main(%x: tensor<64x4xf32> {kiln.name = "x", kiln.symbols = array<i32: 0, -1>})
    -> (tensor<64x512xf32> {kiln.name = "y", kiln.symbols = array<i32: 0, -1>},
        tensor<512xf32> {kiln.name = "m"})
    attributes {kiln.symbol_bounds = array<i64: 64>, kiln.symbol_names = ["N"]} {
  %w = kiln.constant dense<0.5> : tensor<4x512xf32>
  %p = kiln.matmul %x, %w : tensor<64x4xf32>, tensor<4x512xf32>
  %t = kiln.tanh %p : tensor<64x512xf32>
  %e = kiln.exp %p : tensor<64x512xf32>
  %m = kiln.reduce_max %e {axes = array<i64: 0>, keepdims = false} : tensor<64x512xf32> -> tensor<512xf32>
  return %t, %m : tensor<64x512xf32>, tensor<512xf32>
}

// CHECK-LABEL: func.func @kiln_k0_matmul(
// CHECK-SAME: attributes {kiln.workgroups = 8 : i64}
// Tanh: rows of 512 elements, 32 per workgroup.
// CHECK-LABEL: func.func @kiln_k1_tanh(
// CHECK-SAME: %{{.*}}: i64, %{{.*}}: index) attributes {kiln.live_launch = array<i64: 1, 1, 32, 1, 0>, kiln.size_args = array<i32: 0>, kiln.workgroups = 2 : i64}
// CHECK-LABEL: func.func @kiln_k2_exp(
// CHECK-SAME: attributes {kiln.workgroups = 2 : i64}
// CHECK-LABEL: func.func @kiln_k3_reduce_max(
// CHECK-NOT: kiln.live_launch
// CHECK: return

// The schedule reads N's run-time size (a hidden input after x) and launches
// min(workgroups, inner * ceil(n * num / den)).
// LLVM-LABEL: define internal void @model_run_impl(
// LLVM: load i64, ptr
// LLVM: udiv i64
// LLVM: call i64 @llvm.umin.i64(
// LLVM: call void @kiln_rt_parallel_for(

// The CUDA targets launch at the bound, as every target does with
// --disable-pass=kiln-live-rows.
// EMU-NOT: kiln.live_launch
