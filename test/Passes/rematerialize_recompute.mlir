// RUN: kiln-opt --kiln-fuse --kiln-rematerialize %s | FileCheck %s
// RUN: kiln-opt --kiln-fuse --kiln-rematerialize=limit=0 %s | FileCheck %s --check-prefix=NONE
// RUN: not kiln-compile %s --max-memory=1K -o %t.so 2>&1 | FileCheck %s --check-prefix=SMALLEST
// RUN: kiln-compile %s --max-memory=4608 --emit=memory-plan -o - | FileCheck %s --check-prefix=PLAN
// RUN: kiln-compile %s --max-memory=4608 --report=%t.md -o %t.so
// RUN: FileCheck %s --check-prefix=REPORT < %t.md
// RUN: not kiln-compile %s --layout=nhwc --max-memory=1K -o %t.so 2>&1 | FileCheck %s --check-prefix=NHWC
// RUN: kiln-compile %s --layout=nhwc --max-memory=5376 --emit=memory-plan -o - | FileCheck %s --check-prefix=NHWC-PLAN

// A UNet's top level: the skip connection %s (two conv-ReLUs from the
// input) is held across the encoder below it and the up-sampling until the
// decoder's conv reads it through a concat. kiln-rematerialize computes it
// again there: the decoder conv splits over the concat's parts into
// partial products (the up-sampled part first, then the skip), each added
// to the sum before it; the skip is recomputed right before its partial,
// its second conv split over groups of 2 of the first conv's 8 channels
// (each group's conv-ReLU on the input computed right before its partial
// product), so neither the concat nor the first conv's output is ever
// whole.

// CHECK-LABEL: func @skip
// The encoder and the up-sampling stay as they were.
// CHECK: kiln.max_pool
// CHECK: kiln.transpose
// CHECK: %[[UP:.*]] = kiln.reshape {{.*}} -> tensor<1x8x8x8xf32>
// CHECK-NOT: kiln.concat
// The up-sampled half's partial product, without the bias.
// CHECK: %[[T:.*]] = kiln.conv %[[UP]], %{{[^,]*}} {{{.*}}} : (tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x8x8xf32>
// The skip again, group by group of the first conv's channels.
// CHECK: %[[G0:.*]] = kiln.fusion %arg0, {{.*}} {kiln.recomputed} : {{.*}} -> tensor<1x2x8x8xf32>
// CHECK: kiln.conv {{.*}} -> tensor<1x2x8x8xf32>
// CHECK-NEXT: kiln.relu
// CHECK: %[[S0:.*]] = kiln.conv %[[G0]], {{.*}}kiln.recomputed{{.*}} : (tensor<1x2x8x8xf32>, tensor<8x2x3x3xf32>) -> tensor<1x8x8x8xf32>
// CHECK: %[[G1:.*]] = kiln.fusion %arg0, {{.*}} {kiln.recomputed} : {{.*}} -> tensor<1x2x8x8xf32>
// CHECK: %[[S1:.*]] = kiln.fusion %[[G1]], %{{[^,]*}}, %[[S0]] {kiln.recomputed}
// CHECK: kiln.conv
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.yield
// CHECK: %[[G2:.*]] = kiln.fusion %arg0, {{.*}} {kiln.recomputed}
// CHECK: %[[S2:.*]] = kiln.fusion %[[G2]], %{{[^,]*}}, %[[S1]] {kiln.recomputed}
// CHECK: %[[G3:.*]] = kiln.fusion %arg0, {{.*}} {kiln.recomputed}
// The last group: the second conv's bias and ReLU on the whole sum.
// CHECK: %[[S:.*]] = kiln.fusion %[[G3]], %{{[^,]*}}, %{{[^,]*}}, %[[S2]] {kiln.recomputed} : (tensor<1x2x8x8xf32>, tensor<8x2x3x3xf32>, tensor<8xf32>, tensor<1x8x8x8xf32>)
// CHECK: kiln.conv
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.relu
// The decoder conv's last partial: the skip, the bias, the sum, the ReLU.
// CHECK: %[[Y:.*]] = kiln.fusion %[[S]], %{{[^,]*}}, %{{[^,]*}}, %[[T]] : (tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32>, tensor<8xf32>, tensor<1x8x8x8xf32>)
// CHECK-NOT: kiln.recomputed
// CHECK: kiln.conv
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.relu
// CHECK: return %[[Y]]

// NONE-LABEL: func @skip
// NONE: kiln.concat
// NONE-NOT: kiln.recomputed

// The arena: 6144 bytes without (at the up-sampling's transpose: the
// concat's two halves, the held skip and the transpose's output, and the
// 1x1 conv's output it reads, 2 KiB each); 4608 with: the decoder's sum,
// the skip's sum (2 KiB each) and one group of the first conv (512 bytes).
// The skip's partial products write over its sum.
// SMALLEST: cannot be met: the smallest arena kiln-rematerialize reaches is 4608 bytes (1 value recomputed; 6144 bytes without)
// PLAN: arena 4608 bytes: live peak 4608, {{.*}}; 3 kernels in place, 0 concats elided
// PLAN: in place: kiln_k11_conv writes over its input 2
// PLAN-NEXT: in place: kiln_k13_conv writes over its input 2
// PLAN-NEXT: in place: kiln_k15_conv writes over its input 3
// In NHWC the chain starts at the input's transpose (recomputed too, 768
// bytes held while the groups are computed), and the NHWC conv kernel
// accumulates the partial products in place the same way: 8192 bytes
// without, 5376 with.
// NHWC: the smallest arena kiln-rematerialize reaches is 5376 bytes (1 value recomputed; 8192 bytes without)
// NHWC-PLAN: arena 5376 bytes: live peak 5376, {{.*}}; 4 kernels in place, 0 concats elided
// NHWC-PLAN: in place: kiln_k15_conv writes over its input 2
// NHWC-PLAN-NEXT: in place: kiln_k17_conv writes over its input 2
// NHWC-PLAN-NEXT: in place: kiln_k19_conv writes over its input 3
// NHWC-PLAN-NEXT: in place: kiln_k20_conv writes over its input 3
// REPORT: 8 kernels recompute values, inside the kernels that read them or as copies next to them (1 of 1 candidates, cheapest first)
// REPORT-NEXT: kiln_k8_conv (#8) recomputes conv+relu, a value an earlier kernel computed: +0.007 MFLOP
// REPORT-NEXT: kiln_k9_conv (#9) recomputes conv, a value an earlier kernel computed: +0.018 MFLOP
// REPORT: kiln_k15_conv (#15) recomputes conv+add+relu, a value an earlier kernel computed: +0.019 MFLOP
// REPORT-NOT: kiln_k16_conv (#16) recomputes
func.func @skip(%x: tensor<1x3x8x8xf32> {kiln.name = "x"}) -> (tensor<1x8x8x8xf32> {kiln.name = "y"}) {
  %w1 = kiln.constant dense<0.125> : tensor<8x3x3x3xf32>
  %b1 = kiln.constant dense<0.25> : tensor<8xf32>
  %w2 = kiln.constant dense<0.0625> : tensor<8x8x3x3xf32>
  %b2 = kiln.constant dense<-0.125> : tensor<8xf32>
  %w3 = kiln.constant dense<0.0625> : tensor<16x8x3x3xf32>
  %w4 = kiln.constant dense<0.03125> : tensor<16x16x3x3xf32>
  %w5 = kiln.constant dense<0.5> : tensor<32x16x1x1xf32>
  %w6 = kiln.constant dense<0.03125> : tensor<8x16x3x3xf32>
  %b6 = kiln.constant dense<0.5> : tensor<8xf32>
  %a1 = kiln.conv %x, %w1, %b1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<8x3x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %c1 = kiln.relu %a1 : tensor<1x8x8x8xf32>
  %a2 = kiln.conv %c1, %w2, %b2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x8x8xf32>, tensor<8x8x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %s = kiln.relu %a2 : tensor<1x8x8x8xf32>
  %p = kiln.max_pool %s {ceil_mode = false, count_include_pad = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : tensor<1x8x8x8xf32> -> tensor<1x8x4x4xf32>
  %a3 = kiln.conv %p, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x4x4xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x4x4xf32>
  %d1 = kiln.relu %a3 : tensor<1x16x4x4xf32>
  %a4 = kiln.conv %d1, %w4 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x4x4xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x4x4xf32>
  %d2 = kiln.relu %a4 : tensor<1x16x4x4xf32>
  %u = kiln.conv %d2, %w5 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x4x4xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x4x4xf32>
  %r1 = kiln.reshape %u : tensor<1x32x4x4xf32> -> tensor<1x8x2x2x4x4xf32>
  %t = kiln.transpose %r1 {perm = array<i64: 0, 1, 4, 2, 5, 3>} : tensor<1x8x2x2x4x4xf32> -> tensor<1x8x4x2x4x2xf32>
  %up = kiln.reshape %t : tensor<1x8x4x2x4x2xf32> -> tensor<1x8x8x8xf32>
  %cat = kiln.concat %s, %up {axis = 1 : i64} : tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32> -> tensor<1x16x8x8xf32>
  %a6 = kiln.conv %cat, %w6, %b6 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<8x16x3x3xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
  %y = kiln.relu %a6 : tensor<1x8x8x8xf32>
  return %y : tensor<1x8x8x8xf32>
}
