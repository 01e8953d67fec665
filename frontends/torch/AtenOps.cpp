//===- AtenOps.cpp - ATen ops as ONNX nodes --------------------------------===//
//
// One converter per ATen op (both the default export's ops, conv2d, linear,
// batch_norm, scaled_dot_product_attention, ..., and the core ATen set
// run_decompositions() leaves: convolution, addmm, _native_batch_norm_legit_
// no_training, ...), keyed by target ("aten.add.Tensor"). Each appends one
// ONNX node or a few; the ONNX importer turns them into kiln ops. Scalars
// become constants of the result's dtype, tensors are cast to it where torch
// promotes, and shapes come from the arguments or the recorded result types.
//
// The converters live by family in AtenElementwise, AtenNN, AtenReduce,
// AtenShape and AtenGenerators; this file gathers their tables.
//
//===----------------------------------------------------------------------===//
#include "frontends/torch/AtenConverters.h"

void kiln::torch_import::registerAtenConverters(llvm::StringMap<AtenConverter> &table) {
  registerElementwiseConverters(table);
  registerNNConverters(table);
  registerReduceConverters(table);
  registerShapeConverters(table);
  registerGeneratorConverters(table);
}
