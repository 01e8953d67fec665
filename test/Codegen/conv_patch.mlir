// RUN: kiln-compile %s --emit=kernels --layout=nchw | FileCheck %s
// RUN: kiln-compile %s --emit=kernels --layout=nhwc | FileCheck %s --check-prefix=NHWC
// A ViT's patch embedding: a 16 x 16 conv of stride 16, no padding. Its 256
// taps loop at run time instead of being unrolled (unrolled, ViT-B/16's made
// an 18K-line kernel and 35 s of compile time): NCHW, every window lies
// inside the input, so each tap copies whole output rows with no bounds
// checks, one load in the kernel's gather; NHWC, each kernel row is one
// contiguous run of 16 pixels x 3 channels (48 floats) when inside.
// Numerics: test/e2e/models.test (vit_b16).

func.func @main(%x: tensor<1x3x32x32xf32> {kiln.name = "x"}) -> (tensor<1x8x2x2xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<0.5> : tensor<8x3x16x16xf32>
  %b = kiln.constant dense<0.1> : tensor<8xf32>
  %c = kiln.conv %x, %w, %b {strides = array<i64: 16, 16>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x32x32xf32>, tensor<8x3x16x16xf32>, tensor<8xf32>) -> tensor<1x8x2x2xf32>
  return %c : tensor<1x8x2x2xf32>
}

// CHECK-LABEL: func.func @kiln_k0_conv(
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step
// CHECK: memref.load %arg1
// CHECK-NOT: memref.load %arg1
// CHECK: call @kiln_uk_sgemm_pa(

// NHWC-LABEL: func.func @kiln_k{{[0-9]+}}_conv(
// NHWC: scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step
// NHWC: scf.if
// NHWC: vector.load %arg1
// The bias is added as the ukernel stores the tile (no clamp: -inf, inf).
// NHWC: call @kiln_uk_sgemm_pb_ep({{.*}}, %cst{{[_0-9]*}}, %cst{{[_0-9]*}})
// NHWC-NOT: vector.load
