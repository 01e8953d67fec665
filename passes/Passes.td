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
  let summary = "folds inference batch normalization into the preceding convolution, or "
                "into a per-channel multiply-add";
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

    Any other f32 batch norm with constant parameters (after a pool, a
    concat, an activation) becomes `x * a + (bias - mean * a)`, constants
    shaped `[C, 1, ...]`: elementwise ops, which kiln-select-layout keeps
    inside NHWC regions (a DenseNet's pre-activation batch norms) and the
    fusion pass joins to their neighbours.
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

//===----------------------------------------------------------------------===//
// Recognition
//===----------------------------------------------------------------------===//

def RecognizePatternsPass : Pass<"kiln-recognize-patterns", "mlir::func::FuncOp"> {
  let summary = "replaces exporters' decomposed forms by single kiln ops";
  let description = [{
    Matches the primitive-op spellings that exporters produce and replaces
    each by one op (intermediate values must have no other users; constants
    must be the expected scalars):

    - Softmax: `exp(x - reduce_max(x)) / reduce_sum(...)` (or without the
      max) -> `kiln.softmax`.
    - LayerNorm: `d = x - reduce_mean(x)`, `d / sqrt(reduce_mean(d^2) + eps)`
      over trailing axes, then `* g` and `+ b` -> `kiln.layer_norm`.
    - GELU: `0.5 * x * (1 + erf(x / sqrt(2)))` and the tanh form
      `0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))`, in any
      product order -> `kiln.gelu`.
    - SiLU: `x * sigmoid(x)` -> `kiln.silu`.
    - HardSigmoid: `clip(a * x + b, 0, 1)`, `clip(x + 3, 0, 6) / 6` ->
      `kiln.hard_sigmoid`; HardSwish: `x * hard_sigmoid(x)` with
      alpha 1/6, beta 1/2, and `x * clip(x + 3, 0, 6) / 6` -> `kiln.hard_swish`.
    - Attention: `softmax(Q @ K^T * s [+ mask]) @ V` (scale by mul or div, on
      the scores or on Q) -> `kiln.attention`; the `K^T` transpose of the
      exporter cancels against the one the op needs. A mask written as
      `where(c, scores, fill)` (constant condition, fill <= -1e30: -inf or
      float32's lowest) becomes the additive mask `c ? 0 : fill` first.
    - Squares: a float `pow(x, 2)` (the constant exactly 2) -> `x * x`, one
      multiply instead of a libm call per element (RMSNorm, variances).

    Before:
    ```mlir
    %h = kiln.mul %x, %half : tensor<4x8xf32>, tensor<f32>
    %d = kiln.div %x, %sqrt2 : tensor<4x8xf32>, tensor<f32>
    %e = kiln.erf %d : tensor<4x8xf32>
    %p = kiln.add %e, %one : tensor<4x8xf32>, tensor<f32>
    %y = kiln.mul %h, %p : tensor<4x8xf32>, tensor<4x8xf32>
    ```
    After:
    ```mlir
    %y = kiln.gelu %x {approximate = false} : tensor<4x8xf32>
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

def SelectLayoutPass : Pass<"kiln-select-layout", "mlir::func::FuncOp"> {
  let summary = "chooses NCHW or NHWC for each convolutional region";
  let description = [{
    Convolutions and pools (`kiln.conv`, `kiln.max_pool`, `kiln.avg_pool`,
    `kiln.global_avg_pool`) have NCHW and NHWC kernels. Elementwise ops,
    broadcasts and concats between them do not care about the order of
    dimensions, so they join the convolutions they connect into a region.
    For each region a cost model estimates its kernels in both layouts
    (NHWC gathers contiguous runs of channels for the implicit-GEMM
    convolutions and vectorizes depthwise convolutions and pools over
    channels) plus the transposes needed where values enter or leave it,
    and picks the cheaper. A region in NHWC gets `layout = "nhwc"` on its
    convolutions and pools, NHWC result types, transposed constants, and
    a transpose at each boundary; the canonicalizer then cancels transposes
    that meet their inverse, folds them into constants, and turns those that
    move only size-1 dimensions (`N x 1 x 1 x C` after global pooling) into
    reshapes. A convolutional network so ends with one transpose at its
    input and none at a pooled output.

    With `io-layout=nhwc` the function's rank-4 inputs and results are
    NHWC themselves, so not even those transposes remain.
    `layout=nchw|nhwc` forces every region (tests use it to run each kernel
    in both layouts).

    Before:
    ```mlir
    %c = kiln.conv %x, %w, %b {...} : (tensor<1x64x56x56xf32>, ...) -> tensor<1x64x56x56xf32>
    %r = kiln.relu %c : tensor<1x64x56x56xf32>
    ```
    After (with canonicalization):
    ```mlir
    %t = kiln.transpose %x {perm = array<i64: 0, 2, 3, 1>} : ... -> tensor<1x56x56x64xf32>
    %c = kiln.conv %t, %w, %b {..., layout = "nhwc"} : (tensor<1x56x56x64xf32>, ...) -> tensor<1x56x56x64xf32>
    %r = kiln.relu %c : tensor<1x56x56x64xf32>
    %y = kiln.transpose %r {perm = array<i64: 0, 3, 1, 2>} : ... -> tensor<1x64x56x56xf32>
    ```
  }];
  let options = [
    Option<"layout", "layout", "std::string", /*default=*/"\"auto\"",
           "auto (cost model), nchw or nhwc for every region">,
    Option<"ioLayout", "io-layout", "std::string", /*default=*/"\"nchw\"",
           "layout of the function's rank-4 inputs and results: nchw or nhwc">,
    Option<"winograd", "winograd", "bool", /*default=*/"true",
           "codegen computes f32 3x3 stride-1 NHWC convs in Winograd's form "
           "(false: --disable-pass=kiln-winograd)">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

def WidenNarrowTypesPass : Pass<"kiln-widen-narrow-types", "mlir::func::FuncOp"> {
  let summary = "carries float8, float4 and 4-/2-bit integer tensors in f32 or i8/ui8";
  let description = [{
    ONNX's narrow storage types (FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2,
    FLOAT8E5M2FNUZ, FLOAT8E8M0, FLOAT4E2M1, INT4, UINT4, INT2, UINT2) have
    no arithmetic of their own: models cast to and from them, quantize to
    them and move them. Every tensor of such a type is carried in a type
    that holds each of its values exactly (f32 for the floats, i8/ui8 for
    the integers); a `kiln.cast` into a narrow type becomes a cast into the
    carrier and a `kiln.narrow` that rounds there (with the cast's
    `saturate` and `round_mode`); constants convert. The function's narrow
    arguments and results keep their type in `kiln.wire_type`: the caller
    passes them packed as ONNX stores them (kiln/narrow.h) and the runtime
    converts. Runs first, at every optimization level.

    Before:
    ```mlir
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf8E4M3FN> {
      %y = kiln.cast %x {saturate = false} : tensor<4xf32> -> tensor<4xf8E4M3FN>
      return %y : tensor<4xf8E4M3FN>
    }
    ```
    After:
    ```mlir
    func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32> {kiln.wire_type = f8E4M3FN}) {
      %y = kiln.narrow %x {format = f8E4M3FN, round_mode = "up", saturate = false} : tensor<4xf32>
      return %y : tensor<4xf32>
    }
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def LegalizeTypesPass : Pass<"kiln-legalize-types", "mlir::func::FuncOp"> {
  let summary = "computes f16 and bf16 arithmetic in f32 between casts";
  let description = [{
    Kernels compute in f32 (fp32 accumulation). Every op with an f16 or
    bf16 operand or result is rewritten to take and give f32, with `kiln.cast` ops to f32 on its operands and back to the
    original type on its result. Every op's result is so rounded to the
    model's type, as onnxruntime does (`f32 -> f16 -> f32` is not an
    identity and stays; inside a fused kernel it is a conversion in
    registers), while the canonicalizer folds what is exact (`f16 -> f32 ->
    f16`) and converts constants at compile time. Data movement
    (`kiln.reshape`, `kiln.transpose`, `kiln.slice`, `kiln.concat`) keeps its
    element type and moves the narrow values.

    With `tensor-cores`, `kiln.matmul`, `kiln.gemm` and `kiln.conv` on f16
    or bf16 keep their element type: the CUDA target runs them on tensor
    cores (fp32 accumulation, the result rounded to the operands' type).
    f64 is left alone (f32 has neither its range nor its precision):
    elementwise kernels compute f64 ops in f64; other f64 ops (contractions,
    reductions, normalizations) are not compiled yet and get a diagnostic
    naming the node. Runs at every optimization level: it is what makes
    such models compilable.

    Before:
    ```mlir
    %y = kiln.add %a, %b : tensor<4xf16>, tensor<4xf16>
    %z = kiln.relu %y : tensor<4xf16>
    ```
    After:
    ```mlir
    %a32 = kiln.cast %a : tensor<4xf16> -> tensor<4xf32>
    %b32 = kiln.cast %b : tensor<4xf16> -> tensor<4xf32>
    %y = kiln.add %a32, %b32 : tensor<4xf32>, tensor<4xf32>
    %y16 = kiln.cast %y : tensor<4xf32> -> tensor<4xf16>
    %y32 = kiln.cast %y16 : tensor<4xf16> -> tensor<4xf32>
    %z = kiln.relu %y32 : tensor<4xf32>
    %z16 = kiln.cast %z : tensor<4xf32> -> tensor<4xf16>
    ```
  }];
  let options = [
    Option<"tensorCores", "tensor-cores", "bool", /*default=*/"false",
           "keep f16/bf16 matmul, gemm and conv for tensor-core kernels">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def IntegerContractionsPass : Pass<"kiln-integer-contractions", "mlir::func::FuncOp"> {
  let summary = "computes QDQ matrix products as 8-bit integer products";
  let description = [{
    A `kiln.gemm` or `kiln.matmul` whose lhs is a dequantized 8-bit
    activation, `(cast(q) - zero) * scale` with scalar constants, and whose
    weights are 8-bit values times one scale per column (or one for the
    matrix) -- a QDQ model's dequantized weights after the canonicalizer
    folded them -- becomes `kiln.matmul_integer` on `q` and the recovered
    int8 weights, its int32 result cast to f32 times `scale * weight
    scale[n]` (plus Gemm's bias). The same values up to f32 rounding: the
    integer sums are exact. Weights are recovered only when every value is
    an integer multiple in [-128, 127] (to 1e-3 of a step) of its column's
    or the matrix's largest magnitude / 127 (or / 128); anything else stays
    an f32 product. Convolutions likewise (`kiln.conv_integer`).

    A product whose result, maybe through a ReLU, is divided by a constant
    c > 0 -- the next QuantizeLinear's scale -- takes c into its scales and
    constant bias (`acc * (s / c) + b / c`: the requantization scale of
    onnxruntime's QLinearConv), and the division goes. A direct (depthwise)
    conv of a dequantized input stays f32 on `cast(q) - zero`, the input's
    scale and the output's c in its weights and bias, so that kiln-fuse can
    give its kernel the 8-bit input and result. Runs for the CPU target
    (its 8-bit ukernel), after the canonicalizer.

    Before:
    ```mlir
    %f = kiln.cast %q : tensor<4x16xui8> -> tensor<4x16xf32>
    %c = kiln.sub %f, %zero : tensor<4x16xf32>, tensor<f32>
    %a = kiln.mul %c, %scale : tensor<4x16xf32>, tensor<f32>
    %y = kiln.matmul %a, %w : tensor<4x16xf32>, tensor<16x8xf32>
    ```
    After:
    ```mlir
    %acc = kiln.matmul_integer %q, %wq, %zq, %z0
           : tensor<4x16xui8>, tensor<16x8xi8>, tensor<ui8>, tensor<i8>
    %f = kiln.cast %acc : tensor<4x8xi32> -> tensor<4x8xf32>
    %y = kiln.mul %f, %scales : tensor<4x8xf32>, tensor<8xf32>
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def QuantizeInt8Pass : Pass<"kiln-quantize-int8", "mlir::func::FuncOp"> {
  let summary = "quantizes the calibrated matrix products to int8 (--precision=int8)";
  let description = [{
    Post-training quantization as onnxruntime's `quantize_static` writes it,
    for each `kiln.gemm` / `kiln.matmul` with f32 constant 2-D weights that
    carries `kiln.int8_range = [min, max]` (its lhs's range on the
    calibration inputs, which kiln-compile measures): the lhs becomes a
    uint8 quantize-dequantize pair over the range widened to hold 0 (scale
    (max - min) / 255, zero point round(-min / scale)); the weights are
    rounded to int8 steps of each output column's largest magnitude / 127.
    kiln-integer-contractions then computes the product on the 8-bit values.

    Before:
    ```mlir
    %y = kiln.matmul %x, %w {kiln.int8_range = array<f32: -2.0, 6.0>}
           : tensor<4x16xf32>, tensor<16x8xf32>
    ```
    After:
    ```mlir
    %s = kiln.div %x, %scale ...          // round, + zero, clamp [0, 255]
    %q = kiln.cast %c : tensor<4x16xf32> -> tensor<4x16xui8>
    %f = kiln.cast %q : tensor<4x16xui8> -> tensor<4x16xf32>
    %a = kiln.mul (kiln.sub %f, %zero), %scale
    %y = kiln.matmul %a, %w8 : tensor<4x16xf32>, tensor<16x8xf32>
    ```
  }];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def QuantizeWeightsPass : Pass<"kiln-quantize-weights", "mlir::func::FuncOp"> {
  let summary = "weight-only quantization of matrix products' constant weights (--weights)";
  let description = [{
    Each `kiln.matmul` (and `kiln.gemm` without transA, alpha or a beta
    other than 1) with f32 constant 2-D weights of K >= 32 becomes a
    `kiln.matmul_nbits` on `bits`-bit codes: for every output column and
    block of `block-size` consecutive k (the last may be short), the range
    of its weights widened to hold 0 is split into 2^bits - 1 steps (scale
    (max - min) / (2^bits - 1), zero point round(-min / scale)) and each
    weight rounded to the nearest step -- the asymmetric round-to-nearest of
    onnxruntime's MatMulNBitsQuantizer. A gemm's bias follows as an add.
    The activations stay f32.

    Before (`bits=4 block-size=32`):
    ```mlir
    %y = kiln.matmul %x, %w : tensor<1x64xf32>, tensor<64x16xf32>
    ```
    After:
    ```mlir
    %y = kiln.matmul_nbits %x, %codes, %scales, %zeros {bits = 4 : i64, block_size = 32 : i64}
         : tensor<1x64xf32>, tensor<16x64xui8>, tensor<16x2xf32>, tensor<16x2xui8>
    ```
  }];
  let options = [
    Option<"bits", "bits", "int64_t", "4", "bits per weight code (2 to 8)">,
    Option<"blockSize", "block-size", "int64_t", "32",
           "k per block of a column with its own scale and zero point">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

def ExpandIntegerProductsPass : Pass<"kiln-expand-integer-products", "mlir::func::FuncOp"> {
  let summary = "rewrites 8-bit integer products without an integer kernel into exact f32 ones";
  let description = [{
    `kiln.matmul_integer` runs on the CPU's 8-bit ukernel when its rhs (the
    weights) and the rhs's zero point are constants. Every other one -- all
    of them on the CUDA targets (`all`), and on the CPU a product of two
    run-time operands -- becomes the same exact int32 result computed by f32
    matmuls: both operands less their zero points (at most 255 in
    magnitude) in f32, whose sums of integer products are exact below 2^24;
    when 255 * 255 * K could pass that, the lhs is split into 16 * hi + lo
    (and past 16 * 255 * K the rhs too), each part's product exact, the
    parts combined in int32. K past 65,535 gets a diagnostic.
    `kiln.matmul_nbits` runs on the CPU's block-quantized kernel when its
    codes, scales and zero points are constants and its blocks whole units
    of 32 k; the others (all of them on
    the CUDA targets) become a kiln.matmul of the dequantized weights,
    `(cast(weight) - zero) * scale` with each block's zero and scale
    repeated over its k (an f32 constant when all three are constants). Runs at every optimization level, after the
    canonicalizer has folded the weights.

    Before (`all`):
    ```mlir
    %y = kiln.matmul_integer %a, %w, %az, %wz
         : tensor<2x8xui8>, tensor<8x4xi8>, tensor<ui8>, tensor<i8>
    ```
    After:
    ```mlir
    %af = kiln.cast %a : tensor<2x8xui8> -> tensor<2x8xf32>
    %azf = kiln.cast %az : tensor<ui8> -> tensor<f32>
    %as = kiln.sub %af, %azf : tensor<2x8xf32>, tensor<f32>
    ... (the same for %w)
    %p = kiln.matmul %as, %ws : tensor<2x8xf32>, tensor<8x4xf32>
    %y = kiln.cast %p : tensor<2x4xf32> -> tensor<2x4xi32>
    ```
  }];
  let options = [
    Option<"all", "all", "bool", /*default=*/"false",
           "expand every integer product (targets without 8-bit kernels)">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def FusePass : Pass<"kiln-fuse", "mlir::func::FuncOp"> {
  let summary = "groups ops into kiln.fusion regions, one region = one kernel";
  let description = [{
    Starting from a convolution, gemm or matmul of matrices (the anchor) or from an
    elementwise op, the pass follows the chain of single-use elementwise
    consumers (arithmetic, activations, batch_norm)
    whose result has the chain's shape, and wraps the group in a
    `kiln.fusion`. Side operands of an anchor's epilogue must be either the
    full output or broadcast over every spatial dimension (per-channel
    bias, scale, scalar), so the kernel reads them at the output tile's
    offsets. An attention op takes the transposes that split heads off its
    query, key and value and the one that merges them after it.

    An 8-bit product (`kiln.matmul_integer`) is an anchor whose epilogue
    changes type like an elementwise chain: its int32 sums cast to f32,
    scaled, biased and requantized to the next 8-bit activation in its
    kernel.

    With `byte-convs` (the CPU target), a depthwise NHWC convolution of the
    direct kernel's register form (conv_strategy::depthwiseInRegisters and
    byteRingFits) on
    an 8-bit activation -- `cast(q)`, maybe minus a scalar zero point, after
    kiln-integer-contractions folded the scales into its weights -- takes
    those ops as a prologue (its kernel reads the bytes) and may end its
    epilogue in the cast to the next 8-bit activation (it writes bytes).

    A reduction (`kiln.reduce_*`) is an anchor too: the single-user
    elementwise ops that compute its input (of the input's shape; `x * x`,
    `exp(x - max)`, `(x - mean)^2`) join as a prologue evaluated per element
    read, and elementwise consumers of its result's shape as an epilogue
    (RMSNorm's `mean(x*x) + eps -> sqrt` is one kernel).

    Matmuls of one input by constant matrices whose results (after an
    optional constant bias add) feed attention -- a layer's query, key and
    value projections -- first become one matmul by the matrices side by
    side (horizontal fusion; a projection without a bias gets zeros) and
    `kiln.slice`s of its result. The attention group then takes the slices,
    head reshapes and transposes of its operands, so its kernel reads Q, K
    and V in place from the one projection.

    A value with several consumers is, by a cost model, either materialized
    (it ends its group) or recomputed inside every consumer's kernel: an
    elementwise value whose users are all elementwise, whose inputs are
    materialized anyway, and whose repeated flops cost less than writing and
    re-reading it (about 4 flops per byte) is cloned per user, and the
    clones join the users' groups as a prologue.

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
  let options = [
    Option<"byteConvs", "byte-convs", "bool", /*default=*/"false",
           "depthwise NHWC convs read 8-bit activations and write 8-bit results "
           "(the CPU's direct kernel)">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

def RematerializePass : Pass<"kiln-rematerialize", "mlir::func::FuncOp"> {
  let summary = "recomputes values inside, or next to, the convolution that reads them";
  let description = [{
    Runs after kiln-fuse. Two kinds of candidates.

    *Prologue.* A value computed by per-channel elementwise ops
    (batch_norm, relu, clip, scale and shift by per-channel constants: an
    elementwise kiln.fusion or a lone op) whose only reader is an NCHW
    convolution's input is not stored: its ops move into the
    convolution's kernel as a prologue, evaluated on each input element
    the convolution gathers (the padding stays zero). The tensor it was
    -- DenseNet's BN-ReLU copy of every concatenated block -- no longer
    takes arena bytes, for the prologue's flops repeated once per kernel
    tap (none for a 1x1 convolution).

    *Recompute.* A part of a channel concat read by a convolution (NCHW
    or NHWC, one group, constant weights) that a chain of at most 3
    convolution kernels (and the transposes of arguments into NHWC they
    read) computes from the function's arguments, and that is
    computed long before (at least 4 kernels) and read elsewhere too -- a
    UNet's skip connection -- is computed again next to that convolution.
    The convolution splits over the concat's parts into partial products,
    each added to the sum of those before (codegen starts each tile from
    that sum and writes over it, so the sum accumulates in place), the
    recomputed part last, with the bias and the epilogue. When the chain's
    last convolution reads the kernel before it alone and that kernel's
    epilogue is elementwise (a ReLU), the last convolution splits the same
    way over groups of the earlier kernel's output channels (about 16
    groups, each at least 16 products deep), each group computed right
    before its partial product: neither the concat nor the chain's
    intermediate is ever whole. The copies carry `kiln.recomputed`; their
    flops are the extra work. Outputs change only by the order of the sums.

    Candidates are ordered cheapest extra flops per byte saved first;
    `limit` applies that many (-1: all). kiln-compile's `--max-memory`
    searches the smallest limit whose memory plan fits the budget.

    Before:
    ```mlir
    %a = kiln.fusion %cat, %s, %b, %m, %v : ... {
      %n = kiln.batch_norm ...
      %r = kiln.relu %n
      kiln.yield %r
    }
    %y = kiln.conv %a, %w : ...
    ```
    After:
    ```mlir
    %y = kiln.fusion %cat, %s, %b, %m, %v, %w : ... {
      %n = kiln.batch_norm ...
      %r = kiln.relu %n
      %c = kiln.conv %r, ...
      kiln.yield %c
    }
    ```
  }];
  let options = [
    Option<"limit", "limit", "int64_t", "-1",
           "how many candidates to apply, cheapest first (-1: all)">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

//===----------------------------------------------------------------------===//
// Precision
//===----------------------------------------------------------------------===//

def LowerPrecisionPass : Pass<"kiln-lower-precision", "mlir::func::FuncOp"> {
  let summary = "autocast ahead of time: bf16/fp16 contractions with fp32 accumulation";
  let description = [{
    `kiln.conv`, `kiln.gemm` and `kiln.matmul` on f32 take `precision`
    (bf16 or fp16) operands and give a result of that type: the kernels
    accumulate in f32 and round the result once. Without `tensor-cores`,
    `kiln.attention` does too: its query, key and value round (where they
    are made, through reshapes and transposes only it reads), its mask
    stays f32, and its kernel rounds the result as it stores it. Constant weights convert at
    compile time (the canonicalizer folds casts of constants). Values that
    only move or select among such values (relu, max pool, reshapes,
    transposes, slices, concats) keep holding them; a sum or product of two
    of them (a residual add) is rounded to `precision` too, as autocast's
    bf16 tensors hold it. Everything else -- softmax, normalizations,
    reductions, exp/log/pow, the model's outputs -- computes in f32.
    `keep-fp32` names ops that stay f32: a kiln op (`conv`), an ONNX op type
    (`Conv`, `MatMul`, `Gemm`) or an ONNX node name; `keep-index` by position
    among the f32 contractions in order (what `--precision=auto` searches
    over). Lowered ops carry `kiln.precision` for the report.

    With `tensor-cores` (the CUDA target) the contractions get bf16/f16
    operand and result types. Without (the CPU), they stay f32 on rounded
    values: each operand that does not hold bf16 values yet, and the result,
    is rounded by an `f32 -> bf16 -> f32` cast pair, which kiln-fuse folds
    into the kernels' epilogues (registers) -- the same numbers, computed by
    the f32 kernels.

    Before:
    ```mlir
    %y = kiln.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32>
    ```
    After:
    ```mlir
    %xl = kiln.cast %x : tensor<4x8xf32> -> tensor<4x8xbf16>
    %wl = kiln.cast %w : tensor<8x8xf32> -> tensor<8x8xbf16>
    %yl = kiln.matmul %xl, %wl {kiln.precision = "bf16"} : tensor<4x8xbf16>, tensor<8x8xbf16>
    %y = kiln.cast %yl : tensor<4x8xbf16> -> tensor<4x8xf32>
    ```
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"bf16\"", "bf16 or fp16">,
    Option<"tensorCores", "tensor-cores", "bool", "false",
           "give the contractions bf16/fp16 operands and results (the CUDA target); "
           "otherwise they stay f32 on values rounded to bf16/fp16 (the CPU)">,
    ListOption<"keepFp32", "keep-fp32", "std::string",
               "ops that stay f32: kiln op names, ONNX op types or node names">,
    ListOption<"keepIndex", "keep-index", "int64_t",
               "contractions that stay f32, by position among the function's f32 "
               "conv/gemm/matmul (and, without tensor-cores, attention) ops in order "
               "(kiln-compile --precision=auto's search)">,
  ];
  let dependentDialects = ["::kiln::KilnDialect"];
}

#endif // KILN_PASSES_TD
