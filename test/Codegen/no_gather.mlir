// RUN: kiln-compile %s --emit=llvm | FileCheck %s
// A per-channel scale over NHWC pixels of 32 channels (EfficientNet-B0's
// squeeze-excite scale): LLVM unrolls the 32-channel loop; the pixel loop
// must then not be vectorized with gathers and scatters (slow on Zen 4 and
// on Intel cores since the Gather Data Sampling fix: 0.33 ms against 0.02
// for this kernel at 112x112), which kiln-compile's x86 target features
// prefer-no-gather and prefer-no-scatter rule out.

func.func @main(%x: tensor<1x112x112x32xf32> {kiln.name = "x"}, %s: tensor<1x1x1x32xf32> {kiln.name = "s"}) -> (tensor<1x112x112x32xf32> {kiln.name = "y"}) {
  %y = kiln.mul %x, %s : tensor<1x112x112x32xf32>, tensor<1x1x1x32xf32>
  return %y : tensor<1x112x112x32xf32>
}

// CHECK-LABEL: define internal void @kiln_k0_mul_entry(
// CHECK-NOT: masked.gather
// CHECK-NOT: masked.scatter
// CHECK: fmul <{{[0-9]+}} x float>
// CHECK-NOT: masked.gather
// CHECK-NOT: masked.scatter
// CHECK: ret void
