//===- KilnDialect.td - the kiln dialect ---------------------*- tablegen -*-===//
//
// The kiln dialect: Kiln's tensor-level graph IR. Every ONNX op Kiln supports is
// imported into one of these ops; passes and codegen work on them.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECT_TD
#define KILN_DIALECT_TD

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
  // Inherent attributes live in the attribute dictionary: the parsers of ops
  // whose result types are inferred read them from it (with properties they
  // would infer before the properties are filled).
  let usePropertiesForAttributes = 0;
  // The attributes stages hand each other beside the ops' own (each is
  // `kiln.<name>`; C++ names them through kiln::attr, KilnAttributes.h).
  let discardableAttrs = (ins
    // kiln-lower-precision: the contraction computes in "bf16" or "f16".
    "::mlir::StringAttr":$precision,
    // kiln-rematerialize: the op is recomputed inside the kernels that read it.
    "::mlir::UnitAttr":$recomputed,
    // Function arguments and results: the ONNX name, the symbolic size of
    // each axis (-1: static), and the narrow ONNX type a value travels in.
    "::mlir::StringAttr":$name,
    "::mlir::DenseI32ArrayAttr":$symbols,
    "::mlir::TypeAttr":$wire_type,
    // An argument that carries a symbol's run-time size.
    "::mlir::IntegerAttr":$symbol_input,
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
    // Kernels (codegen): their workgroup count, and the rows a run with
    // symbolic sizes computes.
    "::mlir::IntegerAttr":$workgroups,
    "::mlir::DenseI64ArrayAttr":$live_rows
  );
}

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, traits>;

#endif // KILN_DIALECT_TD
