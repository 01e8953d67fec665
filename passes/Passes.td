//===- Passes.td - kiln graph passes -------------------------*- tablegen -*-===//
//
// Tensor-level passes over kiln ops; each is a kiln-opt flag with a lit file
// in test/Passes named after it.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_TD
#define KILN_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Folding
//===----------------------------------------------------------------------===//

def FoldBatchNormPass : Pass<"kiln-fold-batchnorm", "mlir::func::FuncOp"> {
  let summary = "folds inference batch normalization into the preceding convolution";
  let description = [{
    A `kiln.batch_norm` whose input is a `kiln.conv` with constant weights
    (and bias), used only by the batch norm, is folded into new constant
    weights and bias: with `a = scale / sqrt(variance + epsilon)`,
    `w'[o] = w[o] * a[o]` and `b'[o] = (b[o] - mean[o]) * a[o] + bias[o]`.

    Before:
    ```mlir
    %c = kiln.conv %x, %w {...} : (...) -> tensor<1x8x4x4xf32>
    %y = kiln.batch_norm %c, %s, %b, %m, %v {epsilon = 1.0e-05 : f32} : ...
    ```
    After:
    ```mlir
    %w2 = kiln.constant dense_resource<w.bn> : tensor<8x3x3x3xf32>
    %b2 = kiln.constant dense_resource<w.bn_bias> : tensor<8xf32>
    %y = kiln.conv %x, %w2, %b2 {...} : (...) -> tensor<1x8x4x4xf32>
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def FusePass : Pass<"kiln-fuse", "mlir::func::FuncOp"> {
  let summary = "groups ops into kiln.fusion regions, one region = one kernel";
  let description = [{
    Starting from a convolution, gemm or 2-D matmul (the anchor) or from an
    elementwise op, the pass follows the chain of single-use elementwise
    consumers (add, sub, mul, div, relu, sigmoid, tanh, clip, batch_norm)
    whose result has the chain's shape, and wraps the group in a
    `kiln.fusion`. Side operands of an anchor's epilogue must be either the
    full output or broadcast over every spatial dimension (per-channel
    bias, scale, scalar), so the kernel reads them at the output tile's
    offsets. A value with several consumers ends its group (it is
    materialized).

    Before:
    ```mlir
    %c = kiln.conv %x, %w, %b {...}
    %s = kiln.add %c, %r
    %y = kiln.relu %s
    ```
    After:
    ```mlir
    %y = kiln.fusion %x, %w, %b, %r : (...) -> tensor<...> {
    ^bb0(...):
      %c = kiln.conv ...
      %s = kiln.add ...
      %z = kiln.relu %s
      kiln.yield %z
    }
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

#endif // KILN_PASSES_TD
