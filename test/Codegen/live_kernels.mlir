// RUN: kiln-compile %s -O0 --emit=kernels | FileCheck %s
// How kernels over live extents stay cheap (KernelEmitter::liveLoop and the
// row builders): T new rows (bound 16), K keys (bound 64).
func.func @main(%x: tensor<1x16x8xf32> {kiln.name = "x", kiln.symbols = array<i32: -1, 0, -1>},
                %s: tensor<2x1x64xf32> {kiln.name = "s", kiln.symbols = array<i32: -1, -1, 1>},
                %i: tensor<i64> {kiln.name = "i"},
                %u: tensor<1x16x64xf32> {kiln.name = "u", kiln.symbols = array<i32: -1, 0, 1>})
    -> (tensor<1x16x4xf32> {kiln.name = "y", kiln.symbols = array<i32: -1, 0, -1>},
        tensor<2x1x16x8xf32> {kiln.name = "z", kiln.symbols = array<i32: -1, -1, 0, -1>},
        tensor<1x64xf32> {kiln.name = "p", kiln.symbols = array<i32: -1, 1>},
        tensor<1x16x64xf32> {kiln.name = "v", kiln.symbols = array<i32: -1, 0, 1>})
    attributes {kiln.symbol_bounds = array<i64: 16, 64>, kiln.symbol_names = ["T", "K"]} {
  %w = kiln.constant dense<0.5> : tensor<8x4xf32>
  %y = kiln.matmul %x, %w : tensor<1x16x8xf32>, tensor<8x4xf32>
  %x4 = kiln.reshape %x : tensor<1x16x8xf32> -> tensor<1x1x16x8xf32>
  %three = kiln.constant dense<3.0> : tensor<f32>
  %x3 = kiln.mul %x4, %three : tensor<1x1x16x8xf32>, tensor<f32>
  %z = kiln.concat %x4, %x3 {axis = 0 : i64} : tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32> -> tensor<2x1x16x8xf32>
  %g = kiln.gather %s, %i {axis = 0 : i64} : tensor<2x1x64xf32>, tensor<i64>
  %v = kiln.mul %u, %three : tensor<1x16x64xf32>, tensor<f32>
  return %y, %z, %g, %v : tensor<1x16x4xf32>, tensor<2x1x16x8xf32>, tensor<1x64xf32>, tensor<1x16x64xf32>
}

// A product with constant weights over the live rows reads them from the
// 32-column panels packed at compile time, as the static build does.
// CHECK-LABEL: func.func @kiln_k0_matmul(
// CHECK-SAME: kiln.size_args = array<i32: 0, 1>
// CHECK: call @kiln_uk_sgemm_pb(
// One live axis before whole ones (T, then 8 columns): the live part of
// each outer row is one span, shared in chunks of 16384 elements (the
// chunk count from the run's size); no per-row decoding.
// CHECK-LABEL: func.func @kiln_k1_mul(
// CHECK: %[[N:.*]] = arith.muli %{{.*}}, %c8 : index
// CHECK: arith.divui %{{.*}}, %c16384
// CHECK: arith.minui %{{.*}}, %[[N]]
// CHECK-NOT: iter_args
// CHECK: scf.for
// CHECK: arith.mulf
// A concat along an outer axis with the same live axis: a span of the
// input holding the row (2 outer rows, 8 elements a live position).
// CHECK-LABEL: func.func @kiln_k2_concat(
// CHECK-SAME: kiln.live_launch = array<i64: 2, 8, 16384, 1, 0>
// CHECK-NOT: iter_args
// CHECK: scf.if
// CHECK: vector.load %arg0
// CHECK: scf.if
// CHECK: vector.load %arg1
// A gather along axis 0: one index per row, the row's live part copied 16
// at a time.
// CHECK-LABEL: func.func @kiln_k3_gather(
// CHECK: memref.load %arg1
// CHECK: vector.load %arg0
// CHECK: vector.store {{.*}}, %arg3
// Two live axes (T inside the box, K the last): the first live position
// is decoded once (by run-time divisions), the loop steps the coordinates
// (iter_args: a compare and a select per axis).
// CHECK-LABEL: func.func @kiln_k4_mul(
// CHECK: arith.divui
// CHECK: scf.for {{.*}} iter_args(
// CHECK: arith.cmpi eq
// CHECK: scf.yield
