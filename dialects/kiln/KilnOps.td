//===- KilnOps.td - kiln dialect operations ------------------*- tablegen -*-===//
//
// The operations of the kiln dialect. Shapes are static; result types are
// inferred from operands and attributes wherever the op defines them.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_OPS_TD
#define KILN_OPS_TD

include "dialects/kiln/KilnDialect.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

def Kiln_Tensor : StaticShapeTensorOf<[AnyType]>;
/// Floating-point tensors. Arithmetic ops take one element type for all
/// their tensor operands; kiln-legalize-types rewrites every op that codegen
/// computes in f32 only (everything but data movement and, on GPU targets,
/// the contractions) to f32 between casts.
def Kiln_FloatTensor : StaticShapeTensorOf<[F16, BF16, F32, F64]>;
/// Numbers: floats, signed/unsigned integers and i1 (bool). Integer
/// arithmetic wraps; signedness picks signed or unsigned division,
/// comparison and shifts.
def Kiln_NumTensor : StaticShapeTensorOf<[F16, BF16, F32, F64, AnyInteger]>;
/// Integers and bools (bitwise and logical ops).
def Kiln_IntTensor : StaticShapeTensorOf<[AnyInteger]>;
/// Bools (i1): comparisons' results.
def Kiln_BoolTensor : StaticShapeTensorOf<[I1]>;


//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Kiln_ConstantOp : Kiln_Op<"constant",
    [ConstantLike, Pure, DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "a constant tensor (weights, folded shapes)";
  let description = [{
    A constant tensor. Weights use a dense resource attribute, so large values
    are stored as blobs beside the IR rather than as attribute text.

    ```mlir
    %w = kiln.constant dense_resource<conv1.weight> : tensor<8x3x3x3xf32>
    %c = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Kiln_UnaryOp<string mnemonic, string what> : Kiln_Op<mnemonic,
    [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise " # what;
  let description = [{
    Applies }] # what # [{ to every element.

    ```mlir
    %y = kiln.}] # mnemonic # [{ %x : tensor<1x8x4x4xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

/// A unary op on any number type (and bools where it makes sense).
class Kiln_NumUnaryOp<string mnemonic, string what> : Kiln_UnaryOp<mnemonic, what> {
  let arguments = (ins Kiln_NumTensor:$input);
  let results = (outs Kiln_NumTensor:$result);
}

def Kiln_ReluOp : Kiln_UnaryOp<"relu", "max(x, 0)">;
def Kiln_SigmoidOp : Kiln_UnaryOp<"sigmoid", "1 / (1 + exp(-x))">;
def Kiln_TanhOp : Kiln_UnaryOp<"tanh", "tanh(x)">;
def Kiln_ExpOp : Kiln_UnaryOp<"exp", "exp(x)">;
def Kiln_LogOp : Kiln_UnaryOp<"log", "log(x)">;
def Kiln_SqrtOp : Kiln_UnaryOp<"sqrt", "sqrt(x)">;
def Kiln_ErfOp : Kiln_UnaryOp<"erf", "the error function erf(x)">;
def Kiln_NegOp : Kiln_NumUnaryOp<"neg", "-x">;
def Kiln_ReciprocalOp : Kiln_UnaryOp<"reciprocal", "1 / x">;
def Kiln_AbsOp : Kiln_NumUnaryOp<"abs", "|x|">;
def Kiln_SignOp : Kiln_NumUnaryOp<"sign", "the sign -1, 0 or 1 (0 for NaN)">;
def Kiln_NotOp : Kiln_UnaryOp<"not",
    "the bitwise complement ~x (logical not on i1)"> {
  let arguments = (ins Kiln_IntTensor:$input);
  let results = (outs Kiln_IntTensor:$result);
}
def Kiln_SinOp : Kiln_UnaryOp<"sin", "sin(x)">;
def Kiln_CosOp : Kiln_UnaryOp<"cos", "cos(x)">;
def Kiln_TanOp : Kiln_UnaryOp<"tan", "tan(x)">;
def Kiln_AsinOp : Kiln_UnaryOp<"asin", "asin(x)">;
def Kiln_AcosOp : Kiln_UnaryOp<"acos", "acos(x)">;
def Kiln_AtanOp : Kiln_UnaryOp<"atan", "atan(x)">;
def Kiln_SinhOp : Kiln_UnaryOp<"sinh", "sinh(x)">;
def Kiln_CoshOp : Kiln_UnaryOp<"cosh", "cosh(x)">;
def Kiln_AsinhOp : Kiln_UnaryOp<"asinh", "asinh(x)">;
def Kiln_AcoshOp : Kiln_UnaryOp<"acosh", "acosh(x)">;
def Kiln_AtanhOp : Kiln_UnaryOp<"atanh", "atanh(x)">;
def Kiln_FloorOp : Kiln_UnaryOp<"floor", "floor(x)">;
def Kiln_CeilOp : Kiln_UnaryOp<"ceil", "ceil(x)">;
def Kiln_RoundOp : Kiln_UnaryOp<"round", "x rounded to the nearest integer, halves to even">;
def Kiln_Log1pOp : Kiln_UnaryOp<"log1p", "log(1 + x), accurate near 0">;

def Kiln_IsNanOp : Kiln_Op<"is_nan", [Pure, SameOperandsAndResultShape]> {
  let summary = "elementwise x is NaN";
  let description = [{
    ```mlir
    %y = kiln.is_nan %x : tensor<4xf32> -> tensor<4xi1>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input);
  let results = (outs Kiln_BoolTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Kiln_IsInfOp : Kiln_Op<"is_inf", [Pure, SameOperandsAndResultShape]> {
  let summary = "elementwise x is +inf (positive) or -inf (negative)";
  let description = [{
    ```mlir
    %y = kiln.is_inf %x {positive = true, negative = false} : tensor<4xf32> -> tensor<4xi1>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, BoolAttr:$positive, BoolAttr:$negative);
  let results = (outs Kiln_BoolTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Kiln_ExpandOp : Kiln_Op<"expand", [Pure]> {
  let summary = "broadcasts a tensor to a larger shape (numpy rules)";
  let description = [{
    Every element of the result reads the input element numpy broadcasting
    maps it to (ONNX Expand with a shape known at compile time).

    ```mlir
    %y = kiln.expand %x : tensor<3x1xf32> -> tensor<2x3x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}
def Kiln_SiluOp : Kiln_UnaryOp<"silu", "SiLU (swish) x * sigmoid(x)">;
def Kiln_HardSwishOp : Kiln_UnaryOp<"hard_swish",
    "HardSwish x * clamp(x / 6 + 1 / 2, 0, 1)">;

def Kiln_GeluOp : Kiln_Op<"gelu", [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise GELU, exact or tanh-approximated";
  let description = [{
    `approximate = false`: `x * (1 + erf(x / sqrt(2))) / 2`;
    `approximate = true`: `x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) / 2`.

    ```mlir
    %y = kiln.gelu %x {approximate = false} : tensor<1x128x3072xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, BoolAttr:$approximate);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Kiln_HardSigmoidOp : Kiln_Op<"hard_sigmoid", [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise clamp(alpha * x + beta, 0, 1)";
  let description = [{
    ```mlir
    %y = kiln.hard_sigmoid %x {alpha = 0.2 : f32, beta = 0.5 : f32} : tensor<1x8xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, F32Attr:$alpha, F32Attr:$beta);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Kiln_LeakyReluOp : Kiln_Op<"leaky_relu", [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise x if x >= 0 else alpha * x";
  let description = [{
    ```mlir
    %y = kiln.leaky_relu %x {alpha = 0.01 : f32} : tensor<1x8xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, F32Attr:$alpha);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Kiln_CastOp : Kiln_Op<"cast", [Pure, SameOperandsAndResultShape]> {
  let summary = "elementwise conversion to another element type";
  let description = [{
    Converts every element: floats round to nearest even when narrowing,
    float to integer truncates toward zero, integers wrap, a cast to i1 is
    `x != 0`. Casts of constants fold at compile time (weights are
    converted once); a cast back through a type that holds every value
    exactly folds away (`f16 -> f32 -> f16`).

    The narrow storage types (float8 `f8E4M3FN`, `f8E4M3FNUZ`, `f8E5M2`,
    `f8E5M2FNUZ`, `f8E8M0FNU`, float4 `f4E2M1FN`, `i4`/`ui4`/`i2`/`ui2`)
    may be targets: `saturate` (float8) clamps magnitudes past the largest
    finite value to it instead of giving inf/NaN, `round_mode` ("up",
    "down", "nearest") rounds to `f8E8M0FNU`'s powers of two. They live
    only between the importer and kiln-widen-narrow-types, which carries
    them in wider types.

    ```mlir
    %y = kiln.cast %x : tensor<2x8xf16> -> tensor<2x8xf32>
    %q = kiln.cast %x {saturate = false} : tensor<4xf32> -> tensor<4xf8E4M3FN>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input,
                   DefaultValuedAttr<BoolAttr, "true">:$saturate,
                   DefaultValuedAttr<StrAttr, "\"up\"">:$round_mode);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Kiln_NarrowOp : Kiln_Op<"narrow", [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise rounding to the values of a narrow storage type";
  let description = [{
    Rounds every element to a value of `format`, a narrow type the tensor
    is carried for (kiln-widen-narrow-types): float8 and float4 values in
    f32 round to nearest even, with `saturate` (float8; float4 always
    saturates) clamping magnitudes past the largest finite value instead
    of giving inf (`f8E5M2`) or NaN; `f8E8M0FNU` takes the power of two
    `round_mode` says ("up", "down", "nearest"); 4- and 2-bit integers in
    i8/ui8 wrap to their width. The result holds only values the runtime
    can store in `format` exactly.

    ```mlir
    %y = kiln.narrow %x {format = f8E4M3FN, saturate = true} : tensor<4xf32>
    %q = kiln.narrow %i {format = i4} : tensor<4xi8>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, TypeAttr:$format,
                   DefaultValuedAttr<BoolAttr, "true">:$saturate,
                   DefaultValuedAttr<StrAttr, "\"up\"">:$round_mode);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

def Kiln_ClipOp : Kiln_Op<"clip", [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise clamp to [min, max]";
  let description = [{
    Clamps every element to `[min, max]`; ReLU6 is `min = 0, max = 6`.

    ```mlir
    %y = kiln.clip %x {min = 0.0 : f32, max = 6.0 : f32} : tensor<1x8xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, F32Attr:$min, F32Attr:$max);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

class Kiln_BinaryOp<string mnemonic, string what> : Kiln_Op<mnemonic,
    [Pure, InferTypeOpAdaptor]> {
  let summary = "elementwise " # what # " with numpy broadcasting";
  let description = [{
    Elementwise }] # what # [{ of two tensors; shapes broadcast as in numpy
    (trailing dimensions align; a dimension of 1 stretches).

    ```mlir
    %z = kiln.}] # mnemonic # [{ %x, %y : tensor<1x8x4x4xf32>, tensor<8x1x1xf32>
    ```
  }];
  let arguments = (ins Kiln_NumTensor:$lhs, Kiln_NumTensor:$rhs);
  let results = (outs Kiln_NumTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

// (f32 arithmetic over constant operands folds to a constant:
// dialects/kiln/ConstantFolds.h.)
def Kiln_AddOp : Kiln_BinaryOp<"add", "addition"> { let hasFolder = 1; }
def Kiln_SubOp : Kiln_BinaryOp<"sub", "subtraction"> { let hasFolder = 1; }
def Kiln_MulOp : Kiln_BinaryOp<"mul", "multiplication"> { let hasFolder = 1; }
def Kiln_DivOp : Kiln_BinaryOp<"div", "division"> { let hasFolder = 1; }
def Kiln_PowOp : Kiln_BinaryOp<"pow", "power (lhs raised to rhs)">;
def Kiln_MaxOp : Kiln_BinaryOp<"max", "maximum">;
def Kiln_MinOp : Kiln_BinaryOp<"min", "minimum">;
def Kiln_ModOp : Kiln_BinaryOp<"mod", "remainder"> {
  let description = [{
    The remainder of lhs / rhs: with `fmod` the sign of the dividend (C
    fmod, truncated division), without it the sign of the divisor (Python
    %, floored division; integers only, as ONNX Mod).

    ```mlir
    %z = kiln.mod %x, %y {fmod = false} : tensor<6xi32>, tensor<6xi32>
    ```
  }];
  let arguments = (ins Kiln_NumTensor:$lhs, Kiln_NumTensor:$rhs, BoolAttr:$fmod);
}
/// Bitwise ops on integers; on i1 they are the logical ops.
class Kiln_BitwiseOp<string mnemonic, string what> : Kiln_BinaryOp<mnemonic, what> {
  let arguments = (ins Kiln_IntTensor:$lhs, Kiln_IntTensor:$rhs);
  let results = (outs Kiln_IntTensor:$result);
}
def Kiln_AndOp : Kiln_BitwiseOp<"and", "bitwise and (logical and on i1)">;
def Kiln_OrOp : Kiln_BitwiseOp<"or", "bitwise or (logical or on i1)">;
def Kiln_XorOp : Kiln_BitwiseOp<"xor", "bitwise exclusive or (logical on i1)">;
def Kiln_ShlOp : Kiln_BitwiseOp<"shl", "left shift (0 past the width)">;
def Kiln_ShrOp : Kiln_BitwiseOp<"shr",
    "right shift, logical for unsigned and arithmetic for signed integers">;

def Kiln_CompareOp : Kiln_Op<"compare", [Pure, InferTypeOpAdaptor]> {
  let summary = "elementwise comparison with numpy broadcasting, i1 result";
  let description = [{
    `predicate` is one of `eq`, `lt`, `le`, `gt`, `ge` (ordered: false when
    either float operand is NaN); unsigned integers compare unsigned.

    ```mlir
    %c = kiln.compare %x, %y {predicate = "lt"} : tensor<3x4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Kiln_NumTensor:$lhs, Kiln_NumTensor:$rhs,
                       ConfinedAttr<StrAttr, [AttrConstraint<
    CPred<"::llvm::is_contained({::llvm::StringRef(\"eq\"), ::llvm::StringRef(\"lt\"), "
          "::llvm::StringRef(\"le\"), ::llvm::StringRef(\"gt\"), ::llvm::StringRef(\"ge\")}, "
          "::llvm::cast<::mlir::StringAttr>($_self).getValue())">,
    "whose value is eq, lt, le, gt or ge">]>:$predicate);
  let results = (outs Kiln_BoolTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

def Kiln_WhereOp : Kiln_Op<"where", [Pure, InferTypeOpAdaptor]> {
  let summary = "elementwise choice: condition != 0 ? lhs : rhs";
  let description = [{
    ONNX Where: the condition is i1 or a number (non-zero is true); the
    three shapes broadcast as in numpy.

    ```mlir
    %y = kiln.where %c, %x, %fill : tensor<1x1x4x4xf32>, tensor<1x2x4x4xf32>, tensor<f32>
    ```
  }];
  let arguments = (ins Kiln_NumTensor:$condition, Kiln_NumTensor:$lhs,
                       Kiln_NumTensor:$rhs);
  let results = (outs Kiln_NumTensor:$result);
  let assemblyFormat = [{
    $condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs) `,` type($rhs)
  }];
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def Kiln_ConvOp : Kiln_Op<"conv", [Pure, InferTypeOpAdaptor]> {
  let summary = "2-D grouped convolution, NCHW or NHWC input, OIHW weight";
  let description = [{
    `out[n, o, y, x] = bias[o] + sum(in[n, g*C/G + c, y*s0 + ky*d0 - p0,
    x*s1 + kx*d1 - p1] * w[o, c, ky, kx])`, where `g = o / (O/G)` and
    reads outside the input are zero. `pads` is `[top, left, bottom, right]`.
    `layout` is the order of the input and result dimensions: `nchw` (the
    default, ONNX's) or `nhwc` (channels last, chosen by
    `kiln-select-layout`); the weight stays OIHW either way.

    ```mlir
    %y = kiln.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
           dilations = array<i64: 1, 1>, group = 1 : i64}
         : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$weight,
                       Optional<Kiln_FloatTensor>:$bias,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, I64Attr:$group,
                       DefaultValuedAttr<Kiln_LayoutAttr, "::kiln::Layout::NCHW">:$layout);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_GemmOp : Kiln_Op<"gemm", [Pure, InferTypeOpAdaptor]> {
  let summary = "general matrix product alpha * op(A) * op(B) + beta * C";
  let description = [{
    `op(X)` transposes X when the matching `trans_*` flag is set; `C`, when
    present, broadcasts to the `M x N` result.

    ```mlir
    %y = kiln.gemm %a, %b, %c {alpha = 1.0 : f32, beta = 1.0 : f32, trans_a = false, trans_b = true}
         : (tensor<2x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<2x4xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$a, Kiln_FloatTensor:$b,
                       Optional<Kiln_FloatTensor>:$c, F32Attr:$alpha,
                       F32Attr:$beta, BoolAttr:$trans_a, BoolAttr:$trans_b);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_MatMulOp : Kiln_Op<"matmul", [Pure, InferTypeOpAdaptor]> {
  let summary = "batched matrix product with numpy semantics";
  let description = [{
    As numpy.matmul: 1-D operands are promoted to matrices, batch dimensions
    broadcast.

    ```mlir
    %y = kiln.matmul %a, %b : tensor<2x3x4xf32>, tensor<4x5xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$lhs, Kiln_FloatTensor:$rhs);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs)";
}

def Kiln_Int8Tensor : StaticShapeTensorOf<[I8, UI8]>;

def Kiln_MatMulIntegerOp : Kiln_Op<"matmul_integer", [Pure, InferTypeOpAdaptor]> {
  let summary = "exact int32 product of 8-bit integer matrices less zero points";
  let description = [{
    `y[.., m, n] = sum_k (lhs[.., m, k] - lhs_zero) * (rhs[k, n] - rhs_zero)`
    in int32, wrapping past 2^31 as ONNX's MatMulInteger does. `lhs` is a
    batch of rows of 8-bit integers (rank 2 or more), `rhs` one 8-bit matrix
    shared by every batch (the weights), each zero point a scalar of its
    operand's element type (`lhs_zero` may be a run-time value: dynamic
    quantization computes it). The int8 contractions of quantized models
    (MatMulInteger, QLinearMatMul, QDQ matmuls) compute on it; the CPU runs
    it on the 8-bit ukernel with a constant `rhs`, and
    kiln-expand-integer-products rewrites the others into exact f32
    products.

    ```mlir
    %y = kiln.matmul_integer %a, %w, %az, %wz
         : tensor<4x64xui8>, tensor<64x32xi8>, tensor<ui8>, tensor<i8>
    ```
  }];
  let arguments = (ins Kiln_Int8Tensor:$lhs, Kiln_Int8Tensor:$rhs,
                       Kiln_Int8Tensor:$lhs_zero, Kiln_Int8Tensor:$rhs_zero);
  let results = (outs StaticShapeTensorOf<[I32]>:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $lhs_zero `,` $rhs_zero attr-dict `:` type($lhs) `,` type($rhs) `,`
    type($lhs_zero) `,` type($rhs_zero)
  }];
}

def Kiln_MatMulNBitsOp : Kiln_Op<"matmul_nbits", [Pure, InferTypeOpAdaptor]> {
  let summary = "product of f32 rows and weights quantized in blocks along k";
  let description = [{
    `y[.., m, n] = sum_k lhs[.., m, k] * (weight[n, k] - zero[n, b]) * scale[n, b]`
    with `b = k / block_size`: weight-only quantization, as onnxruntime's
    MatMulNBits computes it. `weight` holds the N output columns' K codes,
    `bits`-bit integers (2 to 8; unsigned, or signed in an i8) in 8-bit
    carriers; each block of `block_size` consecutive k has its own f32
    scale and zero point per column (the last block may be short). Products
    and sums are f32. The CPU streams the codes packed in `bits`-wide fields
    (4-bit codes: an eighth of f32 weights' bytes); the CUDA targets and a
    run-time weight take kiln-expand-integer-products's f32 form.

    ```mlir
    %y = kiln.matmul_nbits %x, %w, %s, %z {bits = 4 : i64, block_size = 32 : i64}
         : tensor<1x64xf32>, tensor<16x64xui8>, tensor<16x2xf32>, tensor<16x2xui8>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[F32]>:$lhs, Kiln_Int8Tensor:$weight,
                       StaticShapeTensorOf<[F32]>:$scale, Kiln_Int8Tensor:$zero,
                       I64Attr:$bits, I64Attr:$block_size);
  let results = (outs StaticShapeTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $lhs `,` $weight `,` $scale `,` $zero attr-dict `:` type($lhs) `,` type($weight) `,`
    type($scale) `,` type($zero)
  }];
}

def Kiln_ConvIntegerOp : Kiln_Op<"conv_integer", [Pure, InferTypeOpAdaptor]> {
  let summary = "exact int32 2-D grouped convolution of 8-bit integers less zero points";
  let description = [{
    `kiln.conv`'s sum (no bias) on 8-bit integers, each less its scalar zero
    point, in int32: reads outside the input are the input's zero point
    (they contribute nothing), as ONNX's ConvInteger pads. `layout` orders
    the input and result as kiln.conv's does; the weight stays OIHW.
    kiln-integer-contractions makes it from QDQ convolutions on the CPU,
    which runs it on the 8-bit ukernel over gathered rows (constant weights
    only).

    ```mlir
    %y = kiln.conv_integer %x, %w, %xz, %wz {strides = array<i64: 1, 1>,
           pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64}
         : (tensor<1x3x8x8xui8>, tensor<4x3x3x3xi8>, tensor<ui8>, tensor<i8>) -> tensor<1x4x8x8xi32>
    ```
  }];
  let arguments = (ins Kiln_Int8Tensor:$input, Kiln_Int8Tensor:$weight,
                       Kiln_Int8Tensor:$input_zero, Kiln_Int8Tensor:$weight_zero,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, I64Attr:$group,
                       DefaultValuedAttr<Kiln_LayoutAttr, "::kiln::Layout::NCHW">:$layout);
  let results = (outs StaticShapeTensorOf<[I32]>:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalization, pooling, softmax
//===----------------------------------------------------------------------===//

def Kiln_BatchNormOp : Kiln_Op<"batch_norm", [Pure, InferTypeOpAdaptor]> {
  let summary = "inference batch normalization over dimension 1";
  let description = [{
    `y = scale * (x - mean) / sqrt(var + epsilon) + bias`, per channel.

    ```mlir
    %y = kiln.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f32}
         : tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                       Kiln_FloatTensor:$bias, Kiln_FloatTensor:$mean,
                       Kiln_FloatTensor:$variance, F32Attr:$epsilon);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $variance attr-dict `:`
    type($input) `,` type($scale) `,` type($bias) `,` type($mean) `,` type($variance)
  }];
  let hasVerifier = 1;
}

class Kiln_PoolOp<string mnemonic, string what> : Kiln_Op<mnemonic,
    [Pure, InferTypeOpAdaptor]> {
  let summary = "2-D " # what # " pooling over NCHW or NHWC";
  let description = [{
    }] # what # [{ over `kernel_shape` windows; `pads` is
    `[top, left, bottom, right]`; `ceil_mode` rounds the output size up.
    `layout` (`nchw`, the default, or `nhwc`) orders the input and result.

    ```mlir
    %y = kiln.}] # mnemonic # [{ %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>,
           pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false,
           count_include_pad = false} : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, DenseI64ArrayAttr:$kernel_shape,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
                       DenseI64ArrayAttr:$dilations, BoolAttr:$ceil_mode,
                       BoolAttr:$count_include_pad,
                       DefaultValuedAttr<Kiln_LayoutAttr, "::kiln::Layout::NCHW">:$layout);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Kiln_MaxPoolOp : Kiln_PoolOp<"max_pool", "max">;
def Kiln_AvgPoolOp : Kiln_PoolOp<"avg_pool", "average">;

def Kiln_GlobalAvgPoolOp : Kiln_Op<"global_avg_pool", [Pure, InferTypeOpAdaptor]> {
  let summary = "mean over every spatial dimension";
  let description = [{
    With `layout = #kiln.layout<nhwc>` the input is rank 4, channels last, and the
    result is `N x 1 x 1 x C`.

    ```mlir
    %y = kiln.global_avg_pool %x : tensor<1x4x8x8xf32> -> tensor<1x4x1x1xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input,
                       DefaultValuedAttr<Kiln_LayoutAttr, "::kiln::Layout::NCHW">:$layout);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_SoftmaxOp : Kiln_Op<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "softmax along one axis";
  let description = [{
    ```mlir
    %y = kiln.softmax %x {axis = 1 : i64} : tensor<2x10xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

class Kiln_ReduceOp<string mnemonic, string what> : Kiln_Op<mnemonic,
    [Pure, InferTypeOpAdaptor]> {
  let summary = what # " over a set of axes";
  let description = [{
    Reduces `axes` (sorted, non-negative, distinct) by }] # what # [{; with
    `keepdims` the reduced dimensions stay with size 1, otherwise they go.

    ```mlir
    %m = kiln.}] # mnemonic # [{ %x {axes = array<i64: 2>, keepdims = true}
         : tensor<1x128x768xf32> -> tensor<1x128x1xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, DenseI64ArrayAttr:$axes,
                       BoolAttr:$keepdims);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Kiln_ReduceSumOp : Kiln_ReduceOp<"reduce_sum", "the sum">;
def Kiln_ReduceMeanOp : Kiln_ReduceOp<"reduce_mean", "the mean">;
def Kiln_ReduceMaxOp : Kiln_ReduceOp<"reduce_max", "the maximum">;
def Kiln_ReduceMinOp : Kiln_ReduceOp<"reduce_min", "the minimum">;
def Kiln_ReduceProdOp : Kiln_ReduceOp<"reduce_prod", "the product">;

def Kiln_LayerNormOp : Kiln_Op<"layer_norm", [Pure, InferTypeOpAdaptor]> {
  let summary = "layer normalization over the dimensions from `axis` on";
  let description = [{
    For every index of the leading dimensions `[0, axis)`:
    `y = (x - mean) / sqrt(var + epsilon) * scale + bias`, where mean and
    (biased) variance run over the dimensions `[axis, rank)`. `scale` and
    `bias` broadcast to those dimensions (one value or one per element).

    ```mlir
    %y = kiln.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f32}
         : tensor<1x128x768xf32>, tensor<768xf32>, tensor<768xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$scale,
                       Optional<Kiln_FloatTensor>:$bias, I64Attr:$axis,
                       F32Attr:$epsilon);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale (`,` $bias^)? attr-dict `:` type($input) `,` type($scale) (`,` type($bias)^)?
  }];
  let hasVerifier = 1;
}

def Kiln_AttentionOp : Kiln_Op<"attention", [Pure, InferTypeOpAdaptor]> {
  let summary = "scaled dot-product attention";
  let description = [{
    `softmax(q @ k^T * scale + mask) @ v` over the last two dimensions; `q` is
    `[..., Sq, D]`, `k` is `[..., Sk, D]`, `v` is `[..., Sk, Dv]` (the leading
    dimensions equal), the optional additive `mask` broadcasts to
    `[..., Sq, Sk]`. The result is `[..., Sq, Dv]`. Kernels never write the
    `Sq x Sk` score matrix to memory (online softmax over key blocks).

    ```mlir
    %o = kiln.attention %q, %k, %v {scale = 0.125 : f32}
         : tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32>, tensor<1x12x128x64xf32>
           -> tensor<1x12x128x64xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$query, Kiln_FloatTensor:$key,
                       Kiln_FloatTensor:$value, Optional<Kiln_FloatTensor>:$mask,
                       F32Attr:$scale);
  let results = (outs Kiln_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`,` $mask^)? attr-dict `:` type($query) `,` type($key) `,`
    type($value) (`,` type($mask)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Kiln_ReshapeOp : Kiln_Op<"reshape", [Pure]> {
  let summary = "reinterprets a tensor with a new static shape";
  let description = [{
    The element count stays the same; the row-major order of elements is kept.

    ```mlir
    %y = kiln.reshape %x : tensor<1x4x2x2xf32> -> tensor<1x16xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_TransposeOp : Kiln_Op<"transpose", [Pure, InferTypeOpAdaptor]> {
  let summary = "permutes dimensions";
  let description = [{
    `result.shape[i] = input.shape[perm[i]]`. Canonicalization turns a
    transpose that moves only size-1 dimensions into a `kiln.reshape` (the
    elements keep their order), and folds transposes of constants.

    ```mlir
    %y = kiln.transpose %x {perm = array<i64: 0, 2, 3, 1>} : tensor<1x4x8x8xf32> -> tensor<1x8x8x4xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizeMethod = 1;
}

def Kiln_SliceOp : Kiln_Op<"slice", [Pure, InferTypeOpAdaptor]> {
  let summary = "a strided box of a tensor";
  let description = [{
    `result[i...] = input[offsets + i * strides]` per dimension, for
    `i < sizes`; strides are non-zero (negative ones read backwards). ONNX
    Slice on run-time data imports to it; `kiln-fuse` makes slices when it
    joins matmuls that share an input (the query, key and value projections)
    into one, and an attention kernel reads its slices in place.

    ```mlir
    %q = kiln.slice %qkv {offsets = array<i64: 0, 0, 768>, sizes = array<i64: 1, 128, 768>,
           strides = array<i64: 1, 1, 1>} : tensor<1x128x2304xf32> -> tensor<1x128x768xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$offsets,
                       DenseI64ArrayAttr:$sizes, DenseI64ArrayAttr:$strides);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Kiln_ConcatOp : Kiln_Op<"concat", [Pure, InferTypeOpAdaptor]> {
  let summary = "joins tensors along one axis";
  let description = [{
    ```mlir
    %y = kiln.concat %a, %b {axis = 1 : i64} : tensor<1x2x4xf32>, tensor<1x3x4xf32> -> tensor<1x5x4xf32>
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
  let hasVerifier = 1;
}

def Kiln_GatherOp : Kiln_Op<"gather", [Pure, InferTypeOpAdaptor]> {
  let summary = "takes slices of `data` along an axis at run-time indices";
  let description = [{
    ONNX Gather: `result[o..., i..., r...] = data[o..., indices[i...], r...]`
    with `o` the dimensions before `axis`; negative indices count from the
    end, indices out of range are clamped (never read out of bounds).

    ```mlir
    %e = kiln.gather %table, %ids {axis = 0 : i64} : tensor<1000x64xf32>, tensor<2x7xi64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IntTensor:$indices, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` type($data) `,` type($indices)";
}

def Kiln_GatherElementsOp : Kiln_Op<"gather_elements", [Pure, InferTypeOpAdaptor]> {
  let summary = "reads `data` at run-time indices along one axis, elementwise";
  let description = [{
    ONNX GatherElements: the result has the indices' shape and
    `result[p] = data[p with p[axis] = indices[p]]` (negative indices count
    from the end, out-of-range ones are clamped).

    ```mlir
    %y = kiln.gather_elements %x, %i {axis = 1 : i64} : tensor<3x4xf32>, tensor<3x2xi64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IntTensor:$indices, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` type($data) `,` type($indices)";
}

def Kiln_ScatterElementsOp : Kiln_Op<"scatter_elements", [Pure, InferTypeOpAdaptor]> {
  let summary = "writes `updates` into a copy of `data` at run-time indices along one axis";
  let description = [{
    ONNX ScatterElements (and Scatter): the result is `data` with
    `result[p with p[axis] = indices[p]] = updates[p]` for every position
    `p` of `indices` (same shape as `updates`), combined with the element
    already there by `reduction` (`none`: replaced, `add`, `mul`, `max`,
    `min`), in the order of the indices along the axis. Negative indices
    count from the end; out-of-range ones are clamped.

    ```mlir
    %y = kiln.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "add"}
         : tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IntTensor:$indices, Kiln_Tensor:$updates,
                       I64Attr:$axis, DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `,` $updates attr-dict `:` type($data) `,` type($indices) `,`
    type($updates)
  }];
}

def Kiln_ScatterNDOp : Kiln_Op<"scatter_nd", [Pure, InferTypeOpAdaptor]> {
  let summary = "writes slices of `updates` into a copy of `data` at run-time index tuples";
  let description = [{
    ONNX ScatterND: `indices` has shape `[..., q]`; each index tuple picks a
    slice `data[i0, ..., iq-1]` (of shape `data.shape[q:]`) that the
    matching slice of `updates` (shape `indices.shape[:-1] + data.shape[q:]`)
    replaces or is combined into by `reduction` (`none`, `add`, `mul`,
    `max`, `min`), tuples in order. Negative indices count from the end;
    out-of-range ones are clamped.

    ```mlir
    %y = kiln.scatter_nd %x, %i, %u : tensor<4x5xf32>, tensor<2x1xi64>, tensor<2x5xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IntTensor:$indices, Kiln_Tensor:$updates,
                       DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = [{
    $data `,` $indices `,` $updates attr-dict `:` type($data) `,` type($indices) `,`
    type($updates)
  }];
}

def Kiln_TopKIndicesOp : Kiln_Op<"topk_indices", [Pure, InferTypeOpAdaptor]> {
  let summary = "the indices (i64) of the k largest or smallest values along an axis";
  let description = [{
    ONNX TopK's Indices output: along `axis`, the positions of the `k`
    largest (`largest = true`) or smallest values, best first; of equal
    values the lower index comes first; NaN never ranks. TopK's Values are
    `kiln.gather_elements` of the input at these indices.

    ```mlir
    %i = kiln.topk_indices %x {axis = 1 : i64, k = 3 : i64, largest = true}
         : tensor<2x10xf32> -> tensor<2x3xi64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, I64Attr:$axis, I64Attr:$k, BoolAttr:$largest);
  let results = (outs Kiln_IntTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Kiln_NonMaxSuppressionOp : Kiln_Op<"non_max_suppression", [Pure, InferTypeOpAdaptor]> {
  let summary = "the boxes a greedy non-maximum suppression keeps, per batch and class";
  let description = [{
    ONNX NonMaxSuppression's selection, one (batch, class) line at a time:
    of the first `count` boxes (`boxes` is `[B, N, 4]`, `scores`
    `[B, C, N]`), the candidates are those whose score is above
    `score_threshold` (every non-NaN score without `has_score_threshold`),
    taken by decreasing score (of equal scores the lower index first); a
    candidate is kept unless its IoU with a box kept before it exceeds
    `iou_threshold`, until `max_per_class` are kept. The result lists each
    line's kept box indices in that order, then -1 to the end of the line.
    Boxes are corners (`[y1, x1, y2, x2]`, either diagonal) or, with
    `center_point_box`, `[x_center, y_center, width, height]`. The
    thresholds and counts are `[1]` tensors.

    ```mlir
    %k = kiln.non_max_suppression %boxes, %scores, %count, %max, %iou, %score
         {center_point_box = false, has_score_threshold = true}
         : tensor<1x6x4xf32>, tensor<1x1x6xf32>, tensor<1xi64>, tensor<1xi64>,
           tensor<1xf32>, tensor<1xf32> -> tensor<1x1x6xi64>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$boxes, Kiln_FloatTensor:$scores, Kiln_IntTensor:$count,
      Kiln_IntTensor:$max_per_class, Kiln_FloatTensor:$iou_threshold,
      Kiln_FloatTensor:$score_threshold, BoolAttr:$center_point_box, BoolAttr:$has_score_threshold);
  let results = (outs Kiln_IntTensor:$result);
  let assemblyFormat = [{
    $boxes `,` $scores `,` $count `,` $max_per_class `,` $iou_threshold `,` $score_threshold
    attr-dict `:` type($boxes) `,` type($scores) `,` type($count) `,` type($max_per_class) `,`
    type($iou_threshold) `,` type($score_threshold) `->` type($result)
  }];
}

def Kiln_RoiAlignOp : Kiln_Op<"roi_align", [Pure]> {
  let summary = "regions of interest pooled to a fixed grid by bilinear samples";
  let description = [{
    ONNX RoiAlign: for each region `r` (`rois[r]` is `[x1, y1, x2, y2]`,
    scaled by `spatial_scale`, less 0.5 with `half_pixel`; without it a
    region is at least 1 x 1) of image `batch_indices[r]` of `input`
    (`[N, C, H, W]`), each bin of the result's `[H', W']` grid averages
    (or, with `max`, takes the largest of) its sample points' bilinear
    values: `sampling_ratio` points per bin and axis, or where that is 0,
    the bin's size rounded up. Samples more than one pixel outside the
    image count as 0. A batch index outside `[0, N)` fails the run. The
    result is `[R, C, H', W']`.

    ```mlir
    %y = kiln.roi_align %x, %rois, %batch
         {half_pixel = true, max = false, sampling_ratio = 2 : i64, spatial_scale = 0.25 : f32}
         : tensor<1x8x16x16xf32>, tensor<5x4xf32>, tensor<5xi64> -> tensor<5x8x7x7xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_FloatTensor:$rois,
      Kiln_IntTensor:$batch_indices, BoolAttr:$max, BoolAttr:$half_pixel, I64Attr:$sampling_ratio,
      F32Attr:$spatial_scale);
  let results = (outs Kiln_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = [{
    $input `,` $rois `,` $batch_indices attr-dict `:` type($input) `,` type($rois) `,`
    type($batch_indices) `->` type($result)
  }];
}

def Kiln_ArgReduceOp : Kiln_Op<"arg_reduce", [Pure, InferTypeOpAdaptor]> {
  let summary = "the index of the maximum or minimum along an axis (i64)";
  let description = [{
    ONNX ArgMax (`max = true`) and ArgMin: the first index of the extreme
    value, or the last with `select_last_index`; `keepdims` keeps the axis
    as size 1.

    ```mlir
    %i = kiln.arg_reduce %x {axis = 1 : i64, keepdims = false, max = true, select_last_index = false} : tensor<3x10xf32> -> tensor<3xi64>
    ```
  }];
  let arguments = (ins Kiln_NumTensor:$input, I64Attr:$axis, BoolAttr:$keepdims,
                       BoolAttr:$max, BoolAttr:$select_last_index);
  let results = (outs StaticShapeTensorOf<[I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Kiln_CumSumOp : Kiln_Op<"cumsum", [Pure, SameOperandsAndResultType]> {
  let summary = "running sum along an axis";
  let description = [{
    ONNX CumSum: `exclusive` leaves the element itself out, `reverse` sums
    from the end.

    ```mlir
    %y = kiln.cumsum %x {axis = 0 : i64, exclusive = false, reverse = false} : tensor<5x3xf32>
    ```
  }];
  let arguments = (ins Kiln_NumTensor:$input, I64Attr:$axis, BoolAttr:$exclusive,
                       BoolAttr:$reverse);
  let results = (outs Kiln_NumTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def Kiln_FusionOp : Kiln_Op<"fusion", [IsolatedFromAbove,
    SingleBlockImplicitTerminator<"YieldOp">, RecursiveMemoryEffects]> {
  let summary = "a group of ops that becomes one kernel";
  let description = [{
    The body computes the result from the block arguments (one per input).
    It is a chain of elementwise ops; or one convolution, gemm or matmul
    (the anchor) followed by elementwise ops applied to its output while
    the output tile is still in cache (its epilogue); or a reduction with
    the elementwise ops computing its input (prologue) and consuming its
    result; or an attention op with the transposes, reshapes and slices
    through which it reads its operands in place and the transpose of its
    result. Made by `kiln-fuse`; codegen emits one kernel per fusion.

    ```mlir
    %y = kiln.fusion %x, %w, %b, %r : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>,
                                        tensor<8xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
    ^bb0(%a: tensor<1x8x4x4xf32>, %aw: tensor<8x8x3x3xf32>, %ab: tensor<8xf32>, %ar: tensor<1x8x4x4xf32>):
      %c = kiln.conv %a, %aw, %ab {...} : (...) -> tensor<1x8x4x4xf32>
      %s = kiln.add %c, %ar : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>
      %z = kiln.relu %s : tensor<1x8x4x4xf32>
      kiln.yield %z : tensor<1x8x4x4xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs);
  let results = (outs Kiln_Tensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type($inputs, $result) $body
  }];
  let hasVerifier = 1;
}

def Kiln_YieldOp : Kiln_Op<"yield", [Pure, Terminator, HasParent<"FusionOp">,
    ReturnLike]> {
  let summary = "the result of a kiln.fusion body";
  let arguments = (ins Kiln_Tensor:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
  let builders = [OpBuilder<(ins), [{ /* filled by the fusion builder */ }]>];
}

#endif // KILN_OPS_TD
