// RUN: not kiln-compile %s --max-memory=1K -o %t.so 2>&1 | FileCheck %s --check-prefix=TOOSMALL
// RUN: kiln-compile %s --max-memory=8K --emit=memory-plan -o - | FileCheck %s --check-prefix=FITS
// RUN: kiln-compile %s --max-memory=8K --report=%t.md -o %t.so
// RUN: FileCheck %s --check-prefix=REPORT < %t.md
// RUN: kiln-compile %s --max-memory=16K --emit=memory-plan -o - | FileCheck %s --check-prefix=ROOMY
// RUN: not kiln-compile %s --max-memory=8K --disable-pass=kiln-rematerialize -o %t.so 2>&1 | FileCheck %s --check-prefix=DISABLED
// RUN: not kiln-compile %s --max-memory=12x -o %t.so 2>&1 | FileCheck %s --check-prefix=BAD
// kiln-compile --max-memory: a DenseNet-like layer (features concatenated,
// BN-ReLU, 1x1 conv into the output; the batch norm a per-channel
// multiply-add, kiln-fold-batchnorm). Without rematerialization the arena
// holds the concat (8 KiB, its inputs written into it) and the BN-ReLU copy
// of it (8 KiB): 16 KiB. With the BN-ReLU recomputed inside the 1x1 conv
// (kiln-rematerialize) it is the concat alone, 8 KiB; below that nothing
// fits, and the error says so.

// TOOSMALL: error: {{.*}}rematerialize_budget.mlir: --max-memory=1K (1024 bytes) cannot be met: the smallest arena kiln-rematerialize reaches is 8192 bytes (1 value recomputed; 16384 bytes without)
// FITS: arena 8192 bytes: live peak 8192
// FITS-NEXT: [0, 4096) buffer 5: 4096 bytes, kiln_k0_exp .. kiln_k1_conv (inside buffer 8)
// FITS-NEXT: [0, 8192) buffer 8: 8192 bytes, kiln_k3_conv .. kiln_k3_conv
// FITS-NEXT: [4096, 8192) buffer 7: 4096 bytes, kiln_k1_conv .. kiln_k1_conv (inside buffer 8)
// FITS-NEXT: no kernel: kiln_k2_concat
// REPORT: | kiln_k3_conv | mul+add+relu+conv |
// REPORT: rematerialization (kiln-rematerialize, --max-memory 0.01 MiB): 1 kernels recompute values, inside the kernels that read them or as copies next to them (1 of 1 candidates, cheapest first)
// REPORT-NEXT: kiln_k3_conv (#2) recomputes mul+add+relu on its input: +0.000 MFLOP
// ROOMY: arena 16384 bytes: live peak 16384
// ROOMY: buffer 9: 8192 bytes, kiln_k3_fusion .. kiln_k4_conv
// DISABLED: the smallest arena kiln-rematerialize reaches is 16384 bytes (0 values recomputed; 16384 bytes without)
// BAD: error: --max-memory expects a byte count (suffix K, M or G allowed), got '12x'

func.func @main(%x: tensor<1x16x8x8xf32> {kiln.name = "x"}) -> (tensor<1x16x8x8xf32> {kiln.name = "y"}) {
  %w3 = kiln.constant dense<0.0625> : tensor<16x16x3x3xf32>
  %s = kiln.constant dense<0.5> : tensor<32xf32>
  %t = kiln.constant dense<0.25> : tensor<32xf32>
  %m = kiln.constant dense<0.125> : tensor<32xf32>
  %v = kiln.constant dense<2.0> : tensor<32xf32>
  %w1 = kiln.constant dense<0.03125> : tensor<16x32x1x1xf32>
  %e = kiln.exp %x : tensor<1x16x8x8xf32>
  %a = kiln.conv %e, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %f = kiln.concat %e, %a {axis = 1 : i64} : tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32> -> tensor<1x32x8x8xf32>
  %n = kiln.batch_norm %f, %s, %t, %m, %v {epsilon = 1.0e-05 : f32} : tensor<1x32x8x8xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>
  %r = kiln.relu %n : tensor<1x32x8x8xf32>
  %y = kiln.conv %r, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x8x8xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x8x8xf32>
  return %y : tensor<1x16x8x8xf32>
}
