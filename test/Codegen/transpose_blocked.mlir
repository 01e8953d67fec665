// RUN: kiln-compile %s --emit=kernels | FileCheck %s
// A standalone transpose whose output row reads one element per input line
// and whose next reader of those lines is rows away (NHWC -> NCHW): rows go
// in blocks of 16 along the output dimension that holds the input's
// contiguous one (here the 20 channels: a block of 16, then one of 4), so
// each input line read serves the block. 2 images x 2 channel blocks x 5
// rows = 20 groups; an element moves with a unit step in the input and a
// step of 5 x 7 = 35 output elements. (Numerics: the ONNX node tests'
// transposes, test/e2e.)

func.func @main(%x: tensor<2x5x7x20xf32> {kiln.name = "x"}) -> (tensor<2x20x5x7xf32> {kiln.name = "y"}) {
  %y = kiln.transpose %x {perm = array<i64: 0, 3, 1, 2>} : tensor<2x5x7x20xf32> -> tensor<2x20x5x7xf32>
  return %y : tensor<2x20x5x7xf32>
}

// CHECK-LABEL: func.func @kiln_k0_transpose(
// CHECK: arith.constant 20 : index
// CHECK: scf.for
// The block's length: min(16, 20 - first channel).
// CHECK: %[[N:.*]] = arith.minui %c16{{.*}}, %{{.*}} : index
// CHECK: scf.for %{{.*}} = %{{.*}} to %c7{{.*}}
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[N]]
// CHECK: arith.constant 35 : index
// CHECK: memref.load %arg0
// CHECK: memref.store {{.*}}, %arg1

// The other way (NCHW -> NHWC: the contiguous dimension lands just before
// the last, consecutive rows reuse the lines): plain rows.
// RUN: kiln-compile %S/Inputs/transpose_rows.mlir --emit=kernels | FileCheck %s --check-prefix=ROWS
// ROWS-LABEL: func.func @kiln_k0_transpose(
// ROWS-NOT: arith.minui %c16
// ROWS: memref.store

// Short output rows (here 3) with the input's contiguous dimension just
// before them (an RGB image to NHWC): a whole output line along it at a
// time -- 2 images x 6 rows = 12 lines of 20 pixels, each pixel's 3
// channels read 6 x 20 = 120 apart and stored side by side, so the loop
// along the line reads each input line contiguously (LLVM vectorizes the
// interleaved stores).
// RUN: kiln-compile %S/Inputs/transpose_short_rows.mlir --emit=kernels | FileCheck %s --check-prefix=LINES
// LINES-LABEL: func.func @kiln_k0_transpose(
// LINES-NOT: arith.minui %c16
// LINES: scf.for %{{.*}} = %{{.*}} to %c20{{.*}}
// LINES: memref.load %arg0
// LINES: memref.store {{.*}}, %arg1
// LINES: arith.constant 120 : index
// LINES: memref.load %arg0
// LINES: memref.store {{.*}}, %arg1
// LINES: arith.constant 240 : index
// LINES: memref.load %arg0
// LINES: memref.store {{.*}}, %arg1
// LINES-NOT: memref.load
