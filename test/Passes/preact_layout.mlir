// RUN: kiln-compile %s --layout=nhwc --emit=mlir -o - | FileCheck %s
// RUN: kiln-compile %s --layout=nhwc --emit=mlir --disable-pass=kiln-fold-batchnorm -o - | FileCheck %s --check-prefix=NOFOLD
// RUN: kiln-compile %s --io-layout=nhwc --emit=mlir -o - | FileCheck %s --check-prefix=AUTO
// RUN: not kiln-compile %s --io-layout=nhwc --max-memory=1K -o %t.so 2>&1 | FileCheck %s --check-prefix=TOOSMALL
// RUN: kiln-compile %s --io-layout=nhwc --max-memory=96K --emit=mlir -o - | FileCheck %s --check-prefix=AUTO

// A DenseNet layer: BN-ReLU-conv1x1-BN-ReLU-conv3x3 over the concatenation of
// the block's features. The second batch norm folds into the 1x1 conv; the
// first, after the concat, becomes a per-channel multiply-add
// (kiln-fold-batchnorm), so the concat, the multiply-add, the ReLUs and both
// convs form one region: in NHWC the input's transpose in and the result's
// out are its only transposes.
// CHECK-LABEL: func @dense_layer
// CHECK: kiln.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>}
// CHECK-NOT: kiln.batch_norm
// CHECK: kiln.mul {{.*}} : tensor<1x16x16x32xf32>, tensor<1x1x1x32xf32>
// CHECK: kiln.conv {{.*}}layout = #kiln.layout<nhwc>{{.*}} -> tensor<1x16x16x64xf32>
// CHECK: kiln.conv {{.*}}layout = #kiln.layout<nhwc>{{.*}} -> tensor<1x16x16x32xf32>
// CHECK: kiln.concat {{.*}} {axis = 3 : i64}
// CHECK: kiln.transpose {{.*}} {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NOT: kiln.transpose
// CHECK: return
// Without the rewrite the batch norms, which name dimension 1, stay NCHW
// between regions: transposes around each.
// NOFOLD-LABEL: func @dense_layer
// NOFOLD: kiln.batch_norm
// NOFOLD: kiln.transpose {{.*}} {perm = array<i64: 0, 2, 3, 1>}
// NOFOLD: kiln.conv {{.*}}layout = #kiln.layout<nhwc>
// NOFOLD: kiln.transpose {{.*}} {perm = array<i64: 0, 3, 1, 2>}
// NOFOLD: kiln.batch_norm
// NOFOLD: kiln.transpose {{.*}} {perm = array<i64: 0, 2, 3, 1>}
// NOFOLD: kiln.conv {{.*}}layout = #kiln.layout<nhwc>
// NOFOLD: return
// With NHWC inputs and outputs --layout=auto makes the layer NHWC. Under a
// --max-memory it cannot meet, kiln-compile tries NCHW regions as well (they
// have convolution prologues and concats in place, NHWC ones do not) and
// names the smaller of the two arenas; a budget the NHWC plan meets keeps it.
// AUTO-LABEL: func @dense_layer
// AUTO-COUNT-2: layout = #kiln.layout<nhwc>
// TOOSMALL: error: {{.*}}preact_layout.mlir: --max-memory=1K (1024 bytes) cannot be met: the smallest arena kiln-rematerialize reaches is 98304 bytes (NCHW regions: 131072 bytes, 1 value recomputed; 131072 bytes without; the NHWC regions --layout=auto chose: 98304 bytes)
func.func @dense_layer(%x: tensor<1x32x16x16xf32>) -> tensor<1x64x16x16xf32> {
  %s = kiln.constant dense<1.5> : tensor<32xf32>
  %t = kiln.constant dense<0.25> : tensor<32xf32>
  %m = kiln.constant dense<0.5> : tensor<32xf32>
  %v = kiln.constant dense<2.0> : tensor<32xf32>
  %w1 = kiln.constant dense<0.125> : tensor<64x32x1x1xf32>
  %s2 = kiln.constant dense<0.75> : tensor<64xf32>
  %t2 = kiln.constant dense<-0.5> : tensor<64xf32>
  %m2 = kiln.constant dense<0.1> : tensor<64xf32>
  %v2 = kiln.constant dense<1.5> : tensor<64xf32>
  %w2 = kiln.constant dense<0.0625> : tensor<32x64x3x3xf32>
  %n = kiln.batch_norm %x, %s, %t, %m, %v {epsilon = 1.0e-05 : f32} : tensor<1x32x16x16xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>
  %r = kiln.relu %n : tensor<1x32x16x16xf32>
  %c1 = kiln.conv %r, %w1 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x32x16x16xf32>, tensor<64x32x1x1xf32>) -> tensor<1x64x16x16xf32>
  %n2 = kiln.batch_norm %c1, %s2, %t2, %m2, %v2 {epsilon = 1.0e-05 : f32} : tensor<1x64x16x16xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
  %r2 = kiln.relu %n2 : tensor<1x64x16x16xf32>
  %c2 = kiln.conv %r2, %w2 {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x64x16x16xf32>, tensor<32x64x3x3xf32>) -> tensor<1x32x16x16xf32>
  %y = kiln.concat %x, %c2 {axis = 1 : i64} : tensor<1x32x16x16xf32>, tensor<1x32x16x16xf32> -> tensor<1x64x16x16xf32>
  return %y : tensor<1x64x16x16xf32>
}
