// RUN: kiln-compile %s --emit=kernels --layout=nhwc | FileCheck %s
// An epilogue's f32 constants that hold one value everywhere (a
// quantization's scales, zero point and clamp bounds) are immediates, not
// loads: LLVM then knows them (a clamp by known bounds is one max and one
// min). A division by one is a multiply by its reciprocal (2.7027 for
// 0.37) corrected with two fused multiply-adds, the product taken where it
// is exact; a divisor whose reciprocal is subnormal (3e38) stays a division.
// The clamp before the conversion to 8 bits ignores NaN and the sign of
// zero (fastmath nnan, nsz: neither changes what the conversion gives); a
// max whose f32 value is the result keeps both.

func.func @main(%x: tensor<1x8x6x6xui8> {kiln.name = "x"}) -> (tensor<1x16x6x6xui8> {kiln.name = "y"}, tensor<1x16x6x6xf32> {kiln.name = "z"}) {
  %w = kiln.constant dense<3> : tensor<16x8x1x1xi8>
  %zx = kiln.constant dense<128> : tensor<ui8>
  %zw = kiln.constant dense<0> : tensor<i8>
  %s = kiln.constant dense<0.01> : tensor<16x1x1xf32>
  %so = kiln.constant dense<0.37> : tensor<f32>
  %zo = kiln.constant dense<3.0> : tensor<f32>
  %lo = kiln.constant dense<0.0> : tensor<f32>
  %hi = kiln.constant dense<255.0> : tensor<f32>
  %big = kiln.constant dense<3.0e38> : tensor<f32>
  %w2 = kiln.constant dense<5> : tensor<16x8x1x1xi8>
  %c = kiln.conv_integer %x, %w, %zx, %zw {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x6x6xui8>, tensor<16x8x1x1xi8>, tensor<ui8>, tensor<i8>) -> tensor<1x16x6x6xi32>
  %f = kiln.cast %c : tensor<1x16x6x6xi32> -> tensor<1x16x6x6xf32>
  %y = kiln.mul %f, %s : tensor<1x16x6x6xf32>, tensor<16x1x1xf32>
  %d = kiln.div %y, %so : tensor<1x16x6x6xf32>, tensor<f32>
  %r = kiln.round %d : tensor<1x16x6x6xf32>
  %a = kiln.add %r, %zo : tensor<1x16x6x6xf32>, tensor<f32>
  %m = kiln.max %a, %lo : tensor<1x16x6x6xf32>, tensor<f32>
  %n = kiln.min %m, %hi : tensor<1x16x6x6xf32>, tensor<f32>
  %q = kiln.cast %n : tensor<1x16x6x6xf32> -> tensor<1x16x6x6xui8>
  %c2 = kiln.conv_integer %x, %w2, %zx, %zw {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x6x6xui8>, tensor<16x8x1x1xi8>, tensor<ui8>, tensor<i8>) -> tensor<1x16x6x6xi32>
  %f2 = kiln.cast %c2 : tensor<1x16x6x6xi32> -> tensor<1x16x6x6xf32>
  %d2 = kiln.div %f2, %big : tensor<1x16x6x6xf32>, tensor<f32>
  %z = kiln.max %d2, %lo : tensor<1x16x6x6xf32>, tensor<f32>
  return %q, %z : tensor<1x16x6x6xui8>, tensor<1x16x6x6xf32>
}

// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_conv_integer(
// CHECK: call @kiln_uk_q8gemm_pq(
// CHECK-NOT: memref.load %arg{{[0-9]+}}[%{{.*}}] : memref<{{[0-9]+}}xf32>
// CHECK-NOT: arith.divf
// CHECK: %[[S:.*]] = arith.constant dense<0.00999999977> : vector<16xf32>
// CHECK: %[[P:.*]] = arith.mulf %{{.*}}, %[[S]] : vector<16xf32>
// CHECK: %[[Y:.*]] = arith.constant dense<3.700000e-01> : vector<16xf32>
// CHECK: %[[R:.*]] = arith.constant dense<2.70270276> : vector<16xf32>
// CHECK: %[[Q:.*]] = arith.mulf %[[P]], %[[R]] : vector<16xf32>
// CHECK: %[[NQ:.*]] = arith.negf %[[Q]] : vector<16xf32>
// CHECK: %[[E:.*]] = math.fma %[[NQ]], %[[Y]], %[[P]] : vector<16xf32>
// CHECK: %[[EX:.*]] = arith.cmpf ueq, %[[E]], %{{.*}} : vector<16xf32>
// CHECK: %[[F:.*]] = math.fma %[[E]], %[[R]], %[[Q]] : vector<16xf32>
// CHECK: arith.select %[[EX]], %[[Q]], %[[F]] : vector<16xi1>, vector<16xf32>
// CHECK: arith.maximumf %{{.*}}, %{{.*}} fastmath<nnan,nsz> : vector<16xf32>
// CHECK: arith.minimumf %{{.*}}, %{{.*}} fastmath<nnan,nsz> : vector<16xf32>
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_conv_integer(
// CHECK: arith.divf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : vector<16xf32>
