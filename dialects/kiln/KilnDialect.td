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
}

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, traits>;

#endif // KILN_DIALECT_TD
