// RUN: kiln-compile %s -O0 --emit=kernels | FileCheck %s
// RUN: kiln-compile %s -O0 --emit=llvm | FileCheck %s --check-prefix=LLVM
// RUN: kiln-compile %s --emit=kernels | FileCheck %s --check-prefix=FUSED
// Kernel lowering (-O0: no graph passes): one kernel per op over flat buffers
// plus a workgroup index; reshapes alias; the last kernel writes the caller's
// output buffer. With the graph passes (default) conv + relu is one kernel.

func.func @main(%x: tensor<1x2x4x4xf32> {kiln.name = "x"}) -> (tensor<1x32xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<0.5> : tensor<2x2x3x3xf32>
  %c = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32>
  %r = kiln.relu %c : tensor<1x2x4x4xf32>
  %f = kiln.reshape %r : tensor<1x2x4x4xf32> -> tensor<1x32xf32>
  return %f : tensor<1x32xf32>
}

// The convolution: one workgroup per (image, output channel).
// CHECK-LABEL: func.func @kiln_k0_conv(
// CHECK-SAME: %{{.*}}: memref<32xf32> {llvm.noalias}, %{{.*}}: memref<36xf32> {llvm.noalias}, %{{.*}}: memref<32xf32> {llvm.noalias}, %[[WG:.*]]: index)
// CHECK-SAME: attributes {kiln.workgroups = 2 : i64}
// CHECK: scf.for
// CHECK: arith.mulf
// CHECK: arith.addf

// ReLU: rows of the last dimension, maximumf against zero.
// CHECK-LABEL: func.func @kiln_k1_relu(
// CHECK-SAME: memref<32xf32> {llvm.noalias}, %{{.*}}: memref<32xf32> {llvm.noalias}, %{{.*}}: index)
// CHECK: arith.maximumf

// The LLVM module: internal kernels, per-kernel entry thunks, the schedule and
// the exported descriptor `model_desc` (ABI 14; device kind 0: the CPU, no
// device program; no symbolic dimensions, pins, hidden size inputs or
// derived symbols; the weights' address; no padding, compact or state
// tables).
// LLVM-DAG: @model_weights = internal constant {{.*}} align 64
// LLVM-DAG: @model_desc = {{.*}}constant { i32, i32, i32, i32, ptr, ptr, ptr, i64, i64, ptr, ptr, ptr, i32, i32, ptr, i32, i32, ptr, ptr, ptr, i32, i32, ptr, ptr, ptr, ptr, i32, i32, ptr, ptr, ptr, i32, i32, ptr } { i32 14, i32 1, i32 1, i32 2, ptr @model_name, {{.*}}, i32 0, i32 0, ptr null, i32 0, i32 0, ptr null, ptr null, ptr null, i32 0, i32 0, ptr null, ptr null, ptr @model_weights, ptr null, i32 0, i32 0, ptr null, ptr null, ptr null, i32 0, i32 0, ptr null }
// LLVM-DAG: define internal void @kiln_k0_conv_entry(ptr
// LLVM-DAG: define internal void @model_run_impl(ptr
// LLVM-DAG: call void @kiln_rt_parallel_for(ptr %{{.*}}, ptr {{(nonnull )?}}@kiln_k0_conv_entry, ptr {{.*}}, i64 2)
// LLVM-DAG: call void @kiln_rt_parallel_for(ptr %{{.*}}, ptr {{(nonnull )?}}@kiln_k1_relu_entry, ptr {{.*}}, i64 1)
// LLVM-DAG: @model_input0_shape = internal constant [4 x i64] [i64 1, i64 2, i64 4, i64 4]

// FUSED-LABEL: func.func @kiln_k0_conv(
// FUSED: arith.mulf
// FUSED: arith.maximumf
// FUSED-NOT: func.func @kiln_k1
