//===- ConvertNN.cpp - Conv Gemm MatMul pooling BatchNorm Softmax ----------===//
#include "compiler/onnx/ImporterImpl.h"
#include "compiler/onnx/NodeContext.h"

using namespace mlir;
namespace kiln::onnx_import {
namespace {

/// Strides and dilations default to 1 per spatial dimension.
FailureOr<std::vector<int64_t>> spatialInts(NodeContext &ctx, StringRef name,
                                            size_t n) {
  auto v = ctx.attrInts(name).value_or(std::vector<int64_t>(n, 1));
  if (v.size() != n)
    return ctx.error("expects " + Twine(n) + " values in '" + name + "', got " +
                     Twine(v.size()));
  return v;
}

/// Input `i` with a unit dimension inserted at 2: 1-D windows run as 2-D
/// windows of height 1.
FailureOr<Value> insertUnitDim(NodeContext &ctx, size_t i) {
  auto t = ctx.inputType(i);
  SmallVector<int64_t> shape(t.getShape());
  shape.insert(shape.begin() + 2, 1);
  return ctx.createTyped<kiln::ReshapeOp>(
      RankedTensorType::get(shape, t.getElementType()), ctx.input(i));
}

/// 1-D window attributes as 2-D ones (height 1): [v] -> [1, v]; pads
/// [b, e] -> [0, b, 0, e].
std::vector<int64_t> lift(ArrayRef<int64_t> v, bool isPads) {
  if (isPads)
    return {0, v[0], 0, v[1]};
  return {1, v[0]};
}

/// Sets output 0 from a 2-D result, dropping the unit dimension again if
/// the node was 1-D.
LogicalResult setWindowResult(NodeContext &ctx, FailureOr<Value> v, bool oneD) {
  if (failed(v) || !oneD)
    return ctx.setResult(v);
  auto t = llvm::cast<RankedTensorType>(v->getType());
  SmallVector<int64_t> shape(t.getShape());
  shape.erase(shape.begin() + 2);
  return ctx.setResult(ctx.createTyped<kiln::ReshapeOp>(
                      RankedTensorType::get(shape, t.getElementType()), *v));
}

LogicalResult convertConv(NodeContext &ctx) {
  auto in = ctx.inputType(0), w = ctx.inputType(1);
  if ((in.getRank() != 4 && in.getRank() != 3) || w.getRank() != in.getRank())
    return ctx.error("only 1-D and 2-D convolution (rank-3 or rank-4 input and "
                     "weight) is supported; the input has rank " +
                     Twine(in.getRank()));
  size_t spatial = in.getRank() - 2;
  std::vector<int64_t> kernel(w.getShape().begin() + 2, w.getShape().end());
  if (auto k = ctx.attrInts("kernel_shape"); k && *k != kernel)
    return ctx.error("kernel_shape does not match the weight's shape");
  auto strides = spatialInts(ctx, "strides", spatial);
  auto dil = spatialInts(ctx, "dilations", spatial);
  if (failed(strides) || failed(dil))
    return failure();
  auto pads = windowPads(ctx, in.getShape().drop_front(2), kernel, *strides, *dil);
  if (failed(pads))
    return failure();
  Value x = ctx.input(0), wt = ctx.input(1);
  bool oneD = spatial == 1;
  if (oneD) {
    auto x4 = insertUnitDim(ctx, 0), w4 = insertUnitDim(ctx, 1);
    if (failed(x4) || failed(w4))
      return failure();
    x = *x4;
    wt = *w4;
    *strides = lift(*strides, false);
    *dil = lift(*dil, false);
    *pads = lift(*pads, true);
  }
  OpBuilder &b = ctx.builder;
  return setWindowResult(
      ctx,
      ctx.create<kiln::ConvOp>(x, wt, ctx.input(2), b.getDenseI64ArrayAttr(*strides),
                               b.getDenseI64ArrayAttr(*pads),
                               b.getDenseI64ArrayAttr(*dil),
                               b.getI64IntegerAttr(ctx.attrInt("group", 1))),
      oneD);
}

LogicalResult convertGemm(NodeContext &ctx) {
  // Before opset 7, broadcast=0 required C to be M x N already; numpy
  // broadcasting (what kiln.gemm does) agrees on those shapes.
  OpBuilder &b = ctx.builder;
  return ctx.setResult(ctx.create<kiln::GemmOp>(
                      ctx.input(0), ctx.input(1), ctx.input(2),
                      b.getF32FloatAttr(ctx.attrFloat("alpha", 1.0f)),
                      b.getF32FloatAttr(ctx.attrFloat("beta", 1.0f)),
                      b.getBoolAttr(ctx.attrInt("transA", 0) != 0),
                      b.getBoolAttr(ctx.attrInt("transB", 0) != 0)));
}

LogicalResult convertMatMul(NodeContext &ctx) {
  return ctx.setResult(ctx.create<kiln::MatMulOp>(ctx.input(0), ctx.input(1)));
}

/// A max or average pool of `x` (the node's input, or a value computed from
/// it with its shape) with the node's window attributes; 1-D pools run as
/// 2-D ones of height 1.
template <typename OpTy>
FailureOr<Value> buildPool(NodeContext &ctx, Value x, bool countIncludePad) {
  auto in = llvm::cast<RankedTensorType>(x.getType());
  if (in.getRank() != 4 && in.getRank() != 3)
    return ctx.error("only 1-D and 2-D pooling (a rank-3 or rank-4 input) is "
                     "supported; the input has rank " + Twine(in.getRank()));
  size_t spatial = in.getRank() - 2;
  auto kernel = ctx.attrInts("kernel_shape");
  if (!kernel || kernel->size() != spatial)
    return ctx.error("expects a kernel_shape of " + Twine(spatial) + " values");
  auto strides = spatialInts(ctx, "strides", spatial);
  auto dil = spatialInts(ctx, "dilations", spatial);
  if (failed(strides) || failed(dil))
    return failure();
  auto pads = windowPads(ctx, in.getShape().drop_front(2), *kernel, *strides, *dil);
  if (failed(pads))
    return failure();
  if (ctx.attrInt("storage_order", 0) != 0 && ctx.node.output_size() > 1)
    return ctx.error("column-major Indices output is not supported");
  bool oneD = spatial == 1;
  if (oneD) {
    SmallVector<int64_t> shape(in.getShape());
    shape.insert(shape.begin() + 2, 1);
    auto x4 = ctx.createTyped<kiln::ReshapeOp>(
        RankedTensorType::get(shape, in.getElementType()), x);
    if (failed(x4))
      return failure();
    x = *x4;
    *kernel = lift(*kernel, false);
    *strides = lift(*strides, false);
    *dil = lift(*dil, false);
    *pads = lift(*pads, true);
  }
  OpBuilder &b = ctx.builder;
  auto y = ctx.create<OpTy>(x, b.getDenseI64ArrayAttr(*kernel), b.getDenseI64ArrayAttr(*strides),
                            b.getDenseI64ArrayAttr(*pads), b.getDenseI64ArrayAttr(*dil),
                            b.getBoolAttr(ctx.attrInt("ceil_mode", 0) != 0),
                            b.getBoolAttr(countIncludePad));
  if (failed(y) || !oneD)
    return y;
  auto t = llvm::cast<RankedTensorType>(y->getType());
  SmallVector<int64_t> shape(t.getShape());
  shape.erase(shape.begin() + 2);
  return ctx.createTyped<kiln::ReshapeOp>(RankedTensorType::get(shape, t.getElementType()), *y);
}

template <typename OpTy> LogicalResult convertPool(NodeContext &ctx) {
  return ctx.setResult(
      buildPool<OpTy>(ctx, ctx.input(0), ctx.attrInt("count_include_pad", 0) != 0));
}

/// LpPool: (sum over the window of |x|^p)^(1/p), the sum as an average pool
/// that counts the (zero) padding, times the window size.
LogicalResult convertLpPool(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  if (!llvm::isa<FloatType>(in.getElementType()))
    return ctx.error("expects a floating-point input");
  int64_t p = ctx.attrInt("p", 2);
  if (p <= 0)
    return ctx.error("p must be positive");
  auto kernel = ctx.attrInts("kernel_shape");
  if (!kernel)
    return ctx.error("expects a kernel_shape");
  int64_t taps = 1;
  for (int64_t k : *kernel)
    taps *= k;
  auto scalar = [&](Value like, double v) {
    HostTensor h{llvm::cast<RankedTensorType>(like.getType()).getElementType(), {}, {v}, {}};
    return Importer::materialize(ctx.builder, h, ctx.node.name() + ".c");
  };
  Value x = ctx.input(0);
  auto ax = ctx.createTyped<kiln::AbsOp>(x.getType(), x);
  if (failed(ax))
    return failure();
  auto xp = p == 1 ? ax : ctx.create<kiln::PowOp>(*ax, scalar(x, static_cast<double>(p)));
  if (failed(xp))
    return failure();
  auto avg = buildPool<kiln::AvgPoolOp>(ctx, *xp, true);
  if (failed(avg))
    return failure();
  auto sum = ctx.create<kiln::MulOp>(*avg, scalar(*avg, static_cast<double>(taps)));
  if (failed(sum) || p == 1)
    return ctx.setResult(sum);
  return ctx.setResult(ctx.create<kiln::PowOp>(*sum, scalar(*sum, 1.0 / p)));
}

LogicalResult convertGlobalAvgPool(NodeContext &ctx) {
  return ctx.setResult(ctx.create<kiln::GlobalAvgPoolOp>(ctx.input(0)));
}

LogicalResult convertBatchNorm(NodeContext &ctx) {
  if (ctx.attrInt("training_mode", 0) != 0)
    return ctx.error("training_mode=1 is not supported (inference only)");
  if (ctx.opset < 9 && ctx.attrInt("spatial", 1) == 0)
    return ctx.error("spatial=0 is not supported");
  return ctx.setResult(ctx.create<kiln::BatchNormOp>(
                      ctx.input(0), ctx.input(1), ctx.input(2), ctx.input(3),
                      ctx.input(4),
                      ctx.builder.getF32FloatAttr(ctx.attrFloat("epsilon", 1e-5f))));
}

LogicalResult convertSoftmax(NodeContext &ctx) {
  auto in = ctx.inputType(0);
  int64_t rank = in.getRank();
  auto axis = normalizeAxis(ctx, ctx.attrInt("axis", ctx.opset < 13 ? 1 : -1),
                            rank);
  if (failed(axis))
    return failure();
  OpBuilder &b = ctx.builder;
  Value x = ctx.input(0);
  if (ctx.opset >= 13 || *axis == rank - 1)
    return ctx.setResult(ctx.createTyped<kiln::SoftmaxOp>(
                        in, x, b.getI64IntegerAttr(*axis)));
  // Before opset 13: softmax of the input coerced to 2-D at `axis`.
  int64_t rows = 1, cols = 1;
  for (int64_t i = 0; i < rank; ++i)
    (i < *axis ? rows : cols) *= in.getDimSize(i);
  auto flat = RankedTensorType::get({rows, cols}, in.getElementType());
  auto r = ctx.createTyped<kiln::ReshapeOp>(flat, x);
  if (failed(r))
    return failure();
  auto s = ctx.createTyped<kiln::SoftmaxOp>(flat, *r, b.getI64IntegerAttr(1));
  if (failed(s))
    return failure();
  return ctx.setResult(ctx.createTyped<kiln::ReshapeOp>(in, *s));
}

} // namespace

void registerNNConverters(llvm::StringMap<Converter> &t) {
  t["Conv"] = convertConv;
  t["Gemm"] = convertGemm;
  t["MatMul"] = convertMatMul;
  t["MaxPool"] = convertPool<kiln::MaxPoolOp>;
  t["AveragePool"] = convertPool<kiln::AvgPoolOp>;
  t["LpPool"] = convertLpPool;
  t["GlobalAveragePool"] = convertGlobalAvgPool;
  t["BatchNormalization"] = convertBatchNorm;
  t["Softmax"] = convertSoftmax;
}

} // namespace kiln::onnx_import
