//===- CompositeBuilder.h - building an ONNX node from kiln ops -*- C++ -*-===//
//
// A small helper for converters that express an ONNX op as several kiln ops
// (ConvertComposite, ConvertActivations, ConvertNormalization,
// ConvertGatherScatter, ConvertGenerators, ConvertLoss, ConvertQuant): each call
// builds one op; the first failure (already reported) sticks and every later
// call returns null, so a converter reads as the formula it implements.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_FRONTENDS_ONNX_COMPOSITEBUILDER_H
#define KILN_FRONTENDS_ONNX_COMPOSITEBUILDER_H

#include "frontends/onnx/HostEval.h"
#include "frontends/onnx/ImporterImpl.h"
#include "frontends/onnx/NodeContext.h"

namespace kiln::onnx_import {

/// Builds ops for one node; the first failure (already reported) sticks and
/// every later call returns null.
struct Builder {
  using Value = mlir::Value;
  using Type = mlir::Type;
  using StringRef = llvm::StringRef;
  template <typename T> using ArrayRef = llvm::ArrayRef<T>;
  using RankedTensorType = mlir::RankedTensorType;
  using LogicalResult = mlir::LogicalResult;

  NodeContext &ctx;
  bool failed = false;

  Value take(mlir::FailureOr<Value> v) {
    if (mlir::failed(v)) {
      failed = true;
      return {};
    }
    return *v;
  }
  bool ok(std::initializer_list<Value> vs) {
    for (Value v : vs)
      failed = failed || !v;
    return !failed;
  }
  Type elem(Value v) { return llvm::cast<RankedTensorType>(v.getType()).getElementType(); }
  /// A scalar constant of `like`'s element type.
  Value scalar(Value like, double v) {
    if (!ok({like}))
      return {};
    HostTensor h{elem(like), {}, {v}, {}};
    return Importer::materialize(ctx.builder, h, ctx.node.name() + ".c");
  }
  template <typename OpTy> Value bin(Value a, Value b) {
    return ok({a, b}) ? take(ctx.create<OpTy>(a, b)) : Value();
  }
  template <typename OpTy> Value un(Value a) {
    return ok({a}) ? take(ctx.createTyped<OpTy>(a.getType(), a)) : Value();
  }
  Value add(Value a, Value b) { return bin<kiln::AddOp>(a, b); }
  Value sub(Value a, Value b) { return bin<kiln::SubOp>(a, b); }
  Value mul(Value a, Value b) { return bin<kiln::MulOp>(a, b); }
  Value div(Value a, Value b) { return bin<kiln::DivOp>(a, b); }
  Value cmp(StringRef p, Value a, Value b) {
    return ok({a, b}) ? take(ctx.create<kiln::CompareOp>(a, b, ctx.builder.getStringAttr(p)))
                      : Value();
  }
  Value where(Value c, Value a, Value b) {
    return ok({c, a, b}) ? take(ctx.create<kiln::WhereOp>(c, a, b)) : Value();
  }
  template <typename OpTy> Value reduce(Value x, ArrayRef<int64_t> axes, bool keep) {
    if (!ok({x}))
      return {};
    return take(ctx.create<OpTy>(x, ctx.builder.getDenseI64ArrayAttr(axes),
                                 ctx.builder.getBoolAttr(keep)));
  }
  Value reshape(Value x, ArrayRef<int64_t> shape) {
    if (!ok({x}))
      return {};
    if (this->shape(x) == shape)
      return x;
    return take(ctx.createTyped<kiln::ReshapeOp>(
        RankedTensorType::get(shape, elem(x)), x));
  }
  Value transpose(Value x, ArrayRef<int64_t> perm) {
    if (!ok({x}))
      return {};
    return take(ctx.create<kiln::TransposeOp>(x, ctx.builder.getDenseI64ArrayAttr(perm)));
  }
  Value slice(Value x, ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes,
              ArrayRef<int64_t> strides) {
    if (!ok({x}))
      return {};
    mlir::OpBuilder &b = ctx.builder;
    return take(ctx.create<kiln::SliceOp>(x, b.getDenseI64ArrayAttr(offsets),
                                          b.getDenseI64ArrayAttr(sizes),
                                          b.getDenseI64ArrayAttr(strides)));
  }
  Value expand(Value x, ArrayRef<int64_t> shape) {
    if (!ok({x}))
      return {};
    auto t = RankedTensorType::get(shape, elem(x));
    return t == x.getType() ? x : take(ctx.createTyped<kiln::ExpandOp>(t, x));
  }
  /// `x` converted to element type `t` (no op when it already is).
  Value cast(Value x, Type t) {
    if (!ok({x}))
      return {};
    if (elem(x) == t)
      return x;
    return take(ctx.createTyped<kiln::CastOp>(RankedTensorType::get(shape(x), t), x));
  }
  /// x[:, 0, .., 0] kept as [N, 1, .., 1]: a value that carries x's batch
  /// (its symbol, under a dynamic batch) and nothing else.
  Value batchCorner(Value x) {
    if (!ok({x}))
      return {};
    auto s = shape(x);
    llvm::SmallVector<int64_t> zero(s.size(), 0), one(s.size(), 1), sizes(s.size(), 1);
    sizes[0] = s[0];
    return slice(x, zero, sizes, one);
  }
  /// The constant `v` in x's batch shape [N, 1, .., 1] (element type `t`):
  /// computed from x, so that a dynamic batch keeps its symbol.
  Value batchFill(Value x, double v, Type t) {
    Value c = batchCorner(x);
    if (!ok({c}))
      return {};
    Value k = scalar(c, v);
    return cast(where(cmp("eq", c, c), k, k), t);
  }
  /// The batch index n of each row of x, [N, 1, .., 1] int64 (an exclusive
  /// running sum of ones along the batch: exact under a dynamic batch).
  Value batchIota(Value x) {
    Value ones = batchFill(x, 1.0, ctx.builder.getF32Type());
    if (!ok({ones}))
      return {};
    mlir::OpBuilder &b = ctx.builder;
    Value n = take(ctx.createTyped<kiln::CumSumOp>(ones.getType(), ones, b.getI64IntegerAttr(0),
                                                   b.getBoolAttr(true), b.getBoolAttr(false)));
    return cast(n, b.getIntegerType(64));
  }
  ArrayRef<int64_t> shape(Value v) {
    return llvm::cast<RankedTensorType>(v.getType()).getShape();
  }
  LogicalResult result(Value v) {
    if (!ok({v}))
      return mlir::failure();
    ctx.setOutput(0, v);
    return mlir::success();
  }
};

/// Fails with a diagnostic unless the node's first input holds floats.
inline mlir::LogicalResult requireFloat(NodeContext &ctx) {
  if (!llvm::isa<mlir::FloatType>(ctx.inputType(0).getElementType()))
    return ctx.error("expects floating-point operands");
  return mlir::success();
}

/// The node's input 0 and axis for ops whose `axis` attribute is optional
/// (Compress, Unique): without it, the input flattened and axis 0.
inline mlir::FailureOr<std::pair<mlir::Value, int64_t>> axisOrFlattened(Builder &g) {
  NodeContext &ctx = g.ctx;
  mlir::Value x = ctx.input(0);
  auto xt = ctx.inputType(0);
  int64_t axis = 0;
  if (ctx.attr("axis")) {
    auto a = normalizeAxis(ctx, ctx.attrInt("axis", 0), xt.getRank());
    if (mlir::failed(a))
      return mlir::failure();
    axis = *a;
  } else {
    x = g.reshape(x, {xt.getNumElements()});
  }
  if (!g.ok({x}))
    return mlir::failure();
  return std::make_pair(x, axis);
}

/// A host tensor 0, 1, ..., n-1 of shape (1, .., n, .., 1) (n at `axis`).
inline mlir::Value iotaAlong(Builder &g, int64_t n, int64_t axis, int64_t rank) {
  if (g.failed || mlir::failed(g.ctx.checkConstantSize(n, "an iota"))) {
    g.failed = true;
    return {};
  }
  HostTensor h;
  h.elementType = g.ctx.builder.getIntegerType(64);
  h.shape.assign(rank, 1);
  h.shape[axis] = n;
  for (int64_t i = 0; i < n; ++i)
    h.values.push_back(static_cast<double>(i));
  return Importer::materialize(g.ctx.builder, h, g.ctx.node.name() + ".iota");
}

} // namespace kiln::onnx_import

#endif // KILN_FRONTENDS_ONNX_COMPOSITEBUILDER_H
