// RUN: kiln-compile %s --emit=kernels | FileCheck %s
// A matrix product's epilogue (here the bias a fusion added, then ReLU)
// runs 16 columns at a time once the ukernel has filled the tile: f32
// sites contiguous along the row (the bias) load as vectors; 40 columns
// are two vectors and 8 single columns.

func.func @main(%a: tensor<12x32xf32> {kiln.name = "a"}) -> (tensor<12x40xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<0.5> : tensor<32x40xf32>
  %b = kiln.constant dense<0.25> : tensor<40xf32>
  %m = kiln.matmul %a, %w : tensor<12x32xf32>, tensor<32x40xf32>
  %s = kiln.add %m, %b : tensor<12x40xf32>, tensor<40xf32>
  %y = kiln.relu %s : tensor<12x40xf32>
  return %y : tensor<12x40xf32>
}

// CHECK-LABEL: func.func @kiln_k0_matmul(
// CHECK: call @kiln_uk_sgemm_pb(
// CHECK: vector.load {{.*}} vector<16xf32>
// CHECK: arith.addf {{.*}} : vector<16xf32>
// CHECK: arith.maximumf {{.*}} : vector<16xf32>
// CHECK: vector.store {{.*}} vector<16xf32>
// CHECK: arith.addf {{.*}} : f32
