// RUN: kiln-opt --split-input-file --kiln-widen-narrow-types %s | FileCheck %s
// RUN: kiln-opt --split-input-file --kiln-widen-narrow-types --canonicalize %s | FileCheck %s --check-prefix=FOLD

// Narrow arguments and results are carried in f32 / i8 / ui8 and keep their
// type in kiln.wire_type; a cast into a narrow type becomes kiln.narrow
// (saturate and round_mode carried over), a cast out of one reads the carrier.
// CHECK-LABEL: func @signature
// CHECK-SAME: (%arg0: tensor<4xf32> {kiln.wire_type = f8E4M3FN}, %arg1: tensor<3xi8> {kiln.wire_type = i4})
// CHECK-SAME: -> (tensor<4xf32> {kiln.wire_type = f8E5M2FNUZ}, tensor<4xf32> {kiln.wire_type = f8E8M0FNU}, tensor<3xui8> {kiln.wire_type = ui2}, tensor<3xf32>)
// CHECK: %[[A:.*]] = kiln.narrow %arg0 {format = f8E5M2FNUZ, saturate = false} : tensor<4xf32>
// CHECK: %[[B:.*]] = kiln.narrow %arg0 {format = f8E8M0FNU, round_mode = "nearest"} : tensor<4xf32>
// CHECK: %[[C:.*]] = kiln.cast %arg1 : tensor<3xi8> -> tensor<3xui8>
// CHECK: %[[D:.*]] = kiln.narrow %[[C]] {format = ui2} : tensor<3xui8>
// CHECK: %[[E:.*]] = kiln.cast %arg1 : tensor<3xi8> -> tensor<3xf32>
// CHECK: return %[[A]], %[[B]], %[[D]], %[[E]]
func.func @signature(%x: tensor<4xf8E4M3FN>, %i: tensor<3xi4>)
    -> (tensor<4xf8E5M2FNUZ>, tensor<4xf8E8M0FNU>, tensor<3xui2>, tensor<3xf32>) {
  %a = kiln.cast %x {saturate = false} : tensor<4xf8E4M3FN> -> tensor<4xf8E5M2FNUZ>
  %b = kiln.cast %x {round_mode = "nearest"} : tensor<4xf8E4M3FN> -> tensor<4xf8E8M0FNU>
  %c = kiln.cast %i : tensor<3xi4> -> tensor<3xui2>
  %d = kiln.cast %i : tensor<3xi4> -> tensor<3xf32>
  return %a, %b, %c, %d : tensor<4xf8E5M2FNUZ>, tensor<4xf8E8M0FNU>, tensor<3xui2>, tensor<3xf32>
}

// -----

// Floats into 4-/2-bit integers truncate in i32, then wrap in the carrier
// (-3.5 -> uint4 is 13); data movement is retyped; constants convert.
// CHECK-LABEL: func @float_to_int4
// CHECK: %[[T:.*]] = kiln.cast %arg0 : tensor<2x2xf32> -> tensor<2x2xi32>
// CHECK: %[[U:.*]] = kiln.cast %[[T]] : tensor<2x2xi32> -> tensor<2x2xui8>
// CHECK: %[[N:.*]] = kiln.narrow %[[U]] {format = ui4} : tensor<2x2xui8>
// CHECK: %[[R:.*]] = kiln.transpose %[[N]] {perm = array<i64: 1, 0>} : tensor<2x2xui8> -> tensor<2x2xui8>
// CHECK: kiln.constant dense<[-8, 7]> : tensor<2xi8>
// CHECK: kiln.constant dense<[-6.000000e+00, 4.480000e+02]> : tensor<2xf32>
// FOLD-LABEL: func @float_to_int4
func.func @float_to_int4(%x: tensor<2x2xf32>) -> (tensor<2x2xui4>, tensor<2xi4>, tensor<2xf8E4M3FN>) {
  %q = kiln.cast %x : tensor<2x2xf32> -> tensor<2x2xui4>
  %t = kiln.transpose %q {perm = array<i64: 1, 0>} : tensor<2x2xui4> -> tensor<2x2xui4>
  %c = kiln.constant dense<[-8, 7]> : tensor<2xi4>
  %f = kiln.constant dense<[-6.0, 448.0]> : tensor<2xf8E4M3FN>
  return %t, %c, %f : tensor<2x2xui4>, tensor<2xi4>, tensor<2xf8E4M3FN>
}

// -----

// Casts of constants into a narrow type fold after widening: rounded to
// nearest even (0.3 -> 0.3125 in E4M3FN), saturated (1000 -> 448) or not
// (1000 -> NaN), integers wrapped (9 -> int4 -7).
// FOLD-LABEL: func @fold
// FOLD-DAG: kiln.constant dense<[3.125000e-01, 4.480000e+02]> : tensor<2xf32>
// FOLD-DAG: kiln.constant dense<[3.125000e-01, 0x7FC00000]> : tensor<2xf32>
// FOLD-DAG: kiln.constant dense<[-7, 1]> : tensor<2xi8>
// FOLD-NOT: kiln.narrow
func.func @fold() -> (tensor<2xf8E4M3FN>, tensor<2xf8E4M3FN>, tensor<2xi4>) {
  %c = kiln.constant dense<[0.3, 1000.0]> : tensor<2xf32>
  %a = kiln.cast %c : tensor<2xf32> -> tensor<2xf8E4M3FN>
  %b = kiln.cast %c {saturate = false} : tensor<2xf32> -> tensor<2xf8E4M3FN>
  %i = kiln.constant dense<[9, 17]> : tensor<2xi32>
  %n = kiln.cast %i : tensor<2xi32> -> tensor<2xi4>
  return %a, %b, %n : tensor<2xf8E4M3FN>, tensor<2xf8E4M3FN>, tensor<2xi4>
}
