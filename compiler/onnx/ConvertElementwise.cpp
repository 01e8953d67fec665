//===- ConvertElementwise.cpp - Add Sub Mul Div Relu Sigmoid Tanh Clip -----===//
//
// Elementwise ops. When every input is known at import time (shape
// arithmetic), the result is computed here and never reaches the IR.
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/HostEval.h"
#include "compiler/onnx/ImporterImpl.h"
#include "compiler/onnx/NodeContext.h"

#include <cmath>
#include <functional>

using namespace mlir;
namespace kiln::onnx_import {
namespace {

template <typename OpTy>
LogicalResult convertBinary(NodeContext &ctx, double (*fn)(double, double)) {
  const HostTensor *a = ctx.hostInput(0), *b = ctx.hostInput(1);
  HostTensor legacyB;
  Value rhs;
  if (ctx.opset < 7 && ctx.attrInt("broadcast", 0) && ctx.attr("axis")) {
    // Legacy broadcasting: B matches A's dimensions from `axis` on; as numpy
    // aligns trailing dimensions, pad B's shape with trailing ones.
    auto ta = ctx.inputType(0), tb = ctx.inputType(1);
    auto axis = normalizeAxis(ctx, ctx.attrInt("axis", 0), ta.getRank());
    if (failed(axis))
      return failure();
    int64_t trailing = ta.getRank() - *axis - tb.getRank();
    if (trailing < 0)
      return ctx.error("legacy broadcast: B has more dimensions than A after axis");
    SmallVector<int64_t> shape(tb.getShape());
    shape.append(trailing, 1);
    if (b) {
      legacyB = *b;
      legacyB.shape.assign(shape.begin(), shape.end());
      b = &legacyB;
      if (!a)
        rhs = Importer::materialize(ctx.builder, legacyB, ctx.node.input(1));
    } else {
      auto v = ctx.createTyped<kiln::ReshapeOp>(
          RankedTensorType::get(shape, tb.getElementType()), ctx.input(1));
      if (failed(v))
        return failure();
      rhs = *v;
    }
  }
  if (a && b) {
    auto r = hostBinary(*a, *b, fn);
    if (!r)
      return ctx.error("operand shapes do not broadcast");
    ctx.setHostOutput(0, std::move(*r));
    return success();
  }
  auto v = ctx.create<OpTy>(ctx.input(0), rhs ? rhs : ctx.input(1));
  if (failed(v))
    return failure();
  ctx.setOutput(0, *v);
  return success();
}

double addF(double a, double b) { return a + b; }
double subF(double a, double b) { return a - b; }
double mulF(double a, double b) { return a * b; }
double divF(double a, double b) { return a / b; }

template <typename OpTy> LogicalResult convertUnary(NodeContext &ctx) {
  auto v = ctx.createTyped<OpTy>(ctx.inputType(0), ctx.input(0));
  if (failed(v))
    return failure();
  ctx.setOutput(0, *v);
  return success();
}

LogicalResult convertClip(NodeContext &ctx) {
  float lo = -INFINITY, hi = INFINITY;
  if (ctx.opset < 11) {
    lo = ctx.attrFloat("min", lo);
    hi = ctx.attrFloat("max", hi);
  } else {
    for (int i = 1; i <= 2; ++i) {
      if (!ctx.hasInput(i))
        continue;
      const HostTensor *h = ctx.hostInput(i);
      if (!h || h->numElements() != 1)
        return ctx.error("min and max must be compile-time scalars");
      (i == 1 ? lo : hi) = static_cast<float>(h->values[0]);
    }
  }
  if (lo > hi) {
    // ONNX: min > max sets every element to max.
    lo = hi;
  }
  auto v = ctx.createTyped<kiln::ClipOp>(ctx.inputType(0), ctx.input(0),
                                         ctx.builder.getF32FloatAttr(lo),
                                         ctx.builder.getF32FloatAttr(hi));
  if (failed(v))
    return failure();
  ctx.setOutput(0, *v);
  return success();
}

LogicalResult convertIdentity(NodeContext &ctx) {
  if (const HostTensor *h = ctx.hostInput(0))
    ctx.setHostOutput(0, *h);
  else
    ctx.setOutput(0, ctx.input(0));
  return success();
}

} // namespace

void registerElementwiseConverters(llvm::StringMap<Converter> &t) {
  t["Add"] = [](NodeContext &c) { return convertBinary<kiln::AddOp>(c, addF); };
  t["Sub"] = [](NodeContext &c) { return convertBinary<kiln::SubOp>(c, subF); };
  t["Mul"] = [](NodeContext &c) { return convertBinary<kiln::MulOp>(c, mulF); };
  t["Div"] = [](NodeContext &c) { return convertBinary<kiln::DivOp>(c, divF); };
  t["Relu"] = convertUnary<kiln::ReluOp>;
  t["Sigmoid"] = convertUnary<kiln::SigmoidOp>;
  t["Tanh"] = convertUnary<kiln::TanhOp>;
  t["Clip"] = convertClip;
  t["Identity"] = convertIdentity;
}

} // namespace kiln::onnx_import
