// RUN: kiln-compile %s --emit=kernels --layout=nhwc --io-layout=nhwc | FileCheck %s
// An f32 NHWC convolution whose epilogue is at most its bias and a clamp
// -- ReLU [0, inf), ReLU6 / Clip [min, max], after a residual the products
// accumulated onto -- has the ukernel apply it as it stores each tile
// (kiln_uk_sgemm_pb_ep: the bias's address or 0, lo, hi): no pass over the
// tile after the product. Any other epilogue (here a sigmoid) keeps the
// plain product and the vector pass.
// Numerics: test/e2e/compare_ops.py (fused_pointwise_relu6_tail,
// fused_pointwise_residual_relu, fused_conv_rows_s2_relu,
// fused_stem_7x7_clip_min); test/Runtime/sgemm.test (the ukernel).

func.func @main(%x: tensor<1x32x7x7xf32> {kiln.name = "x"}, %r: tensor<1x64x7x7xf32> {kiln.name = "r"}) -> (tensor<1x64x7x7xf32> {kiln.name = "y"}, tensor<1x64x7x7xf32> {kiln.name = "z"}, tensor<1x64x7x7xf32> {kiln.name = "s"}) {
  %w = kiln.constant dense<0.5> : tensor<64x32x1x1xf32>
  %b = kiln.constant dense<0.1> : tensor<64xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x7x7xf32>, tensor<64x32x1x1xf32>, tensor<64xf32>) -> tensor<1x64x7x7xf32>
  %y = kiln.clip %c {min = 0.0 : f32, max = 6.0 : f32} : tensor<1x64x7x7xf32>
  %w2 = kiln.constant dense<0.25> : tensor<64x32x1x1xf32>
  %c2 = kiln.conv %x, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x7x7xf32>, tensor<64x32x1x1xf32>) -> tensor<1x64x7x7xf32>
  %a = kiln.add %c2, %r : tensor<1x64x7x7xf32>, tensor<1x64x7x7xf32>
  %z = kiln.relu %a : tensor<1x64x7x7xf32>
  %w3 = kiln.constant dense<0.125> : tensor<64x32x1x1xf32>
  %c3 = kiln.conv %x, %w3, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x7x7xf32>, tensor<64x32x1x1xf32>, tensor<64xf32>) -> tensor<1x64x7x7xf32>
  %s = kiln.sigmoid %c3 : tensor<1x64x7x7xf32>
  return %y, %z, %s : tensor<1x64x7x7xf32>, tensor<1x64x7x7xf32>, tensor<1x64x7x7xf32>
}

// Bias + ReLU6: the bias's address, lo 0, hi 6; accumulate 0.
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_conv(
// CHECK-DAG: %[[LO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[HI:.*]] = arith.constant 6.000000e+00 : f32
// CHECK: call @kiln_uk_sgemm_pb_ep({{.*}}, %c0_i64{{[_0-9]*}}, %{{[0-9]+}}, %[[LO]], %[[HI]])
// CHECK-NOT: vector.store
// CHECK: return

// Residual + ReLU, no bias: the tile starts from the residual (accumulate
// 1), bias 0, lo 0, hi +inf.
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_conv(
// CHECK-DAG: %[[LO2:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK: call @kiln_uk_sgemm_pb_ep({{.*}}, %c1_i64{{[_0-9]*}}, %c0_i64{{[_0-9]*}}, %[[LO2]], %[[INF]])
// CHECK: return

// Sigmoid: the plain product, then the epilogue pass (exp).
// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_conv(
// CHECK-NOT: kiln_uk_sgemm_pb_ep
// CHECK: call @kiln_uk_sgemm_pb(
// CHECK: math.exp
