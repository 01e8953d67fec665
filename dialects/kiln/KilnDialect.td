//===- KilnDialect.td - the kiln dialect ---------------------*- tablegen -*-===//
//
// The kiln dialect: Kiln's tensor-level graph IR. Every ONNX op Kiln supports is
// imported into one of these ops; passes and codegen work on them.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_TD
#define KILN_DIALECT_TD

include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/OpBase.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::kiln";
  let summary = "Kiln's tensor-level graph dialect";
  let description = [{
    Ops on ranked, statically shaped tensors with value semantics. Each op
    mirrors one inference-time operator (convolution, matrix product,
    elementwise arithmetic, pooling, data movement). Weights are
    `kiln.constant` ops whose values live in dialect resource blobs, never in
    attribute text.
  }];
  let hasConstantMaterializer = 1;
  // Dialect-wide canonicalization: an op whose results are all empty
  // (zero-element) tensors is a constant (KilnDialect.cpp).
  let hasCanonicalizer = 1;
  // The enum attributes (#kiln.layout<nhwc>, #kiln.precision<bf16>).
  let useDefaultAttributePrinterParser = 1;
  // Each kiln.* attribute on an op holds the kind of value declared below.
  let hasOperationAttrVerify = 1;
  // Inherent attributes live in the attribute dictionary: the parsers of ops
  // whose result types are inferred read them from it (with properties they
  // would infer before the properties are filled).
  let usePropertiesForAttributes = 0;
  // The attributes stages hand each other beside the ops' own (each is
  // `kiln.<name>`; C++ names them through kiln::attr, KilnAttributes.h).
  let discardableAttrs = (ins
    // kiln-lower-precision: the contraction computes in bf16 or f16.
    "::kiln::PrecisionAttr":$precision,
    // kiln-rematerialize: the op is recomputed inside the kernels that read it.
    "::mlir::UnitAttr":$recomputed,
    // Function arguments and results: the ONNX name, the symbolic size of
    // each axis (-1: static), and the narrow ONNX type a value travels in.
    "::mlir::StringAttr":$name,
    "::mlir::DenseI32ArrayAttr":$symbols,
    "::mlir::TypeAttr":$wire_type,
    // An argument that carries a symbol's run-time size; a result that is
    // the size of a data-dependent symbol (the runtime reads it after the
    // run: NonZero's count, Compress's length).
    "::mlir::IntegerAttr":$symbol_input,
    "::mlir::IntegerAttr":$symbol_output,
    // The function: its symbols' names and bounds, the symbols derived from
    // others (pairs), and the symbols pinned to an input's axis (pairs).
    "::mlir::ArrayAttr":$symbol_names,
    "::mlir::DenseI64ArrayAttr":$symbol_bounds,
    "::mlir::DenseI64ArrayAttr":$symbol_derived,
    "::mlir::DenseI64ArrayAttr":$symbol_pins,
    // The importer's symbolic-size bookkeeping (DynamicDims, MaskSymbols):
    // (axis, symbol) pairs an op's result runs along; a gather whose indices
    // are a symbol's positions; indices the model gave; axes a mask already
    // covers; a slice that pins a symbol; a constant repacked at import.
    "::mlir::DenseI64ArrayAttr":$axis_symbol,
    "::mlir::UnitAttr":$symbol_indices,
    "::mlir::UnitAttr":$user_indices,
    "::mlir::DenseI64ArrayAttr":$masked_axes,
    "::mlir::IntegerAttr":$pins_symbol,
    "::mlir::UnitAttr":$repacked,
    // --precision=int8: a product's calibrated lhs range [min, max], for
    // kiln-quantize-int8.
    "::mlir::DenseF32ArrayAttr":$int8_range,
    // Kernels (codegen): their workgroup count, how the launch shrinks with
    // a run's symbolic sizes, and the symbols whose sizes they take.
    "::mlir::IntegerAttr":$workgroups,
    "::mlir::DenseI64ArrayAttr":$live_launch,
    "::mlir::DenseI32ArrayAttr":$size_args
  );
}

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Enum attributes
//===----------------------------------------------------------------------===//

/// The order of an NCHW tensor's dimensions in memory: channels first (ONNX's)
/// or channels last (chosen by kiln-select-layout).
def Kiln_Layout : I32EnumAttr<"Layout", "the order of an NCHW tensor's dimensions in memory", [
    I32EnumAttrCase<"NCHW", 0, "nchw">,
    I32EnumAttrCase<"NHWC", 1, "nhwc">]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_LayoutAttr : EnumAttr<Kiln_Dialect, Kiln_Layout, "layout"> {
  let summary = "a layout: #kiln.layout<nchw> or #kiln.layout<nhwc>";
  let assemblyFormat = "`<` $value `>`";
}

/// The precision a contraction computes in (kiln.precision, set by
/// kiln-lower-precision): operands and result rounded to it, f32
/// accumulation. f32 is the attribute's absence.
def Kiln_Precision : I32EnumAttr<"Precision", "a contraction's precision", [
    I32EnumAttrCase<"F32", 0, "f32">,
    I32EnumAttrCase<"BF16", 1, "bf16">,
    I32EnumAttrCase<"F16", 2, "f16">]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_PrecisionAttr : EnumAttr<Kiln_Dialect, Kiln_Precision, "precision"> {
  let summary = "a precision: #kiln.precision<bf16> or #kiln.precision<f16>";
  let assemblyFormat = "`<` $value `>`";
}

#endif // KILN_DIALECT_TD
