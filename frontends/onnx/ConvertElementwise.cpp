//===- ConvertElementwise.cpp - arithmetic and activation functions -------===//
//
// Elementwise ops. When every input is known at import time (shape
// arithmetic), the result is computed here and never reaches the IR.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/HostEval.h"
#include "frontends/onnx/ImporterImpl.h"
#include "frontends/onnx/NodeContext.h"

#include <algorithm>
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

double powF(double a, double b) { return std::pow(a, b); }
double maxF(double a, double b) { return std::max(a, b); }
double minF(double a, double b) { return std::min(a, b); }

/// Max and Min take one or more inputs: a chain of binary ops.
template <typename OpTy>
LogicalResult convertVariadic(NodeContext &ctx, double (*fn)(double, double)) {
  if (ctx.numInputs() == 0)
    return ctx.error("expects at least one input");
  bool allHost = true;
  for (size_t i = 0; i < ctx.numInputs(); ++i)
    allHost = allHost && ctx.hostInput(i);
  if (allHost) {
    HostTensor acc = *ctx.hostInput(0);
    for (size_t i = 1; i < ctx.numInputs(); ++i) {
      auto r = hostBinary(acc, *ctx.hostInput(i), fn);
      if (!r)
        return ctx.error("operand shapes do not broadcast");
      acc = std::move(*r);
    }
    ctx.setHostOutput(0, std::move(acc));
    return success();
  }
  Value acc = ctx.input(0);
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    auto v = ctx.create<OpTy>(acc, ctx.input(i));
    if (failed(v))
      return failure();
    acc = *v;
  }
  ctx.setOutput(0, acc);
  return success();
}

/// Pow: an integer exponent known at import time becomes an f32 constant.
LogicalResult convertPow(NodeContext &ctx) {
  const HostTensor *a = ctx.hostInput(0), *b = ctx.hostInput(1);
  if (a && b) {
    auto r = hostBinary(*a, *b, powF);
    if (!r)
      return ctx.error("operand shapes do not broadcast");
    ctx.setHostOutput(0, std::move(*r));
    return success();
  }
  // ONNX lets the exponent's type differ from the base's: a float base takes
  // the exponent converted to its type; an integer base with a float
  // exponent is raised in the exponent's type and truncated back.
  Type bt = ctx.inputType(0).getElementType(), et = ctx.inputType(1).getElementType();
  Value base = ctx.input(0), exponent;
  if (bt == et) {
    exponent = ctx.input(1);
  } else if (b && (llvm::isa<FloatType>(bt) || !llvm::isa<FloatType>(et))) {
    HostTensor f = *b;
    f.elementType = bt;
    f.raw.clear();
    exponent = Importer::materialize(ctx.builder, f, ctx.node.input(1));
  } else if (llvm::isa<FloatType>(bt) || !llvm::isa<FloatType>(et)) {
    auto c = ctx.createTyped<kiln::CastOp>(ctx.inputType(1).clone(bt), ctx.input(1));
    if (failed(c))
      return failure();
    exponent = *c;
  } else {
    auto c = ctx.createTyped<kiln::CastOp>(ctx.inputType(0).clone(et), ctx.input(0));
    if (failed(c))
      return failure();
    auto p = ctx.create<kiln::PowOp>(*c, ctx.input(1));
    if (failed(p))
      return failure();
    return ctx.setResult(ctx.createTyped<kiln::CastOp>(ctx.inputType(0), *p));
  }
  return ctx.setResult(ctx.create<kiln::PowOp>(base, exponent));
}

template <typename OpTy>
LogicalResult convertUnary(NodeContext &ctx, double (*host)(double) = nullptr) {
  if (const HostTensor *h = ctx.hostInput(0); h && host) {
    ctx.setHostOutput(0, hostUnary(*h, host));
    return success();
  }
  auto v = ctx.createTyped<OpTy>(ctx.inputType(0), ctx.input(0));
  if (failed(v))
    return failure();
  ctx.setOutput(0, *v);
  return success();
}

/// Clip of a tensor known at compile time with known bounds (the legacy
/// exporter's Clip(min=0) of constant pads): evaluated here, so what reads
/// it (Pad, Reshape, ...) still sees constants. False when not all are known.
static bool foldClip(NodeContext &ctx) {
  const HostTensor *x = ctx.hostInput(0);
  if (!x)
    return false;
  double bound[2] = {-INFINITY, INFINITY};
  for (int i = 1; i <= 2; ++i) {
    if (ctx.opset < 11) {
      bound[i - 1] = ctx.attrFloat(i == 1 ? "min" : "max", static_cast<float>(bound[i - 1]));
      continue;
    }
    if (!ctx.hasInput(i))
      continue;
    const HostTensor *h = ctx.hostInput(i);
    if (!h || h->fromSymbolicShape || h->numElements() != 1)
      return false;
    bound[i - 1] = h->values[0];
  }
  HostTensor r = *x;
  r.raw.clear(); // (the values change: rebuilt from them)
  r.symbolTags.clear();
  r.axisSymbols.clear();
  for (double &v : r.values) // (min > max gives max; NaN stays)
    v = std::min(std::max(v, bound[0]), bound[1]);
  ctx.setHostOutput(0, std::move(r));
  return true;
}

LogicalResult convertClip(NodeContext &ctx) {
  if (foldClip(ctx))
    return success();
  float lo = -INFINITY, hi = INFINITY;
  bool general = !llvm::isa<FloatType>(ctx.inputType(0).getElementType());
  for (int i = 1; i <= 2 && ctx.opset >= 11; ++i)
    general = general || (ctx.hasInput(i) && !ctx.hostInput(i));
  if (general)
    return convertClipGeneral(ctx);
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

LogicalResult convertGelu(NodeContext &ctx) {
  std::string approx = ctx.attrString("approximate", "none");
  if (approx != "none" && approx != "tanh")
    return ctx.error("approximate must be 'none' or 'tanh', not '" + approx + "'");
  return ctx.setResult(ctx.createTyped<kiln::GeluOp>(
      ctx.inputType(0), ctx.input(0), ctx.builder.getBoolAttr(approx == "tanh")));
}

LogicalResult convertHardSigmoid(NodeContext &ctx) {
  return ctx.setResult(ctx.createTyped<kiln::HardSigmoidOp>(
      ctx.inputType(0), ctx.input(0),
      ctx.builder.getF32FloatAttr(ctx.attrFloat("alpha", 0.2f)),
      ctx.builder.getF32FloatAttr(ctx.attrFloat("beta", 0.5f))));
}

LogicalResult convertLeakyRelu(NodeContext &ctx) {
  return ctx.setResult(ctx.createTyped<kiln::LeakyReluOp>(
      ctx.inputType(0), ctx.input(0),
      ctx.builder.getF32FloatAttr(ctx.attrFloat("alpha", 0.01f))));
}

double expF(double x) { return std::exp(x); }
double logF(double x) { return std::log(x); }
double sqrtF(double x) { return std::sqrt(x); }
double erfF(double x) { return std::erf(x); }
double negF(double x) { return -x; }
double reluF(double x) { return x < 0 ? 0.0 : x; } // (NaN stays NaN)
double recipF(double x) { return 1.0 / x; }
double absF(double x) { return std::fabs(x); }

LogicalResult convertIdentity(NodeContext &ctx) {
  if (const HostTensor *h = ctx.hostInput(0))
    ctx.setHostOutput(0, *h);
  else
    ctx.setOutput(0, ctx.input(0));
  return success();
}

} // namespace

/// Where(condition, X, Y): kiln.where on a run-time condition; all three
/// known: evaluated here.
LogicalResult convertWhere(NodeContext &ctx) {
  const HostTensor *c = ctx.hostInput(0);
  const HostTensor *x = ctx.hostInput(1), *y = ctx.hostInput(2);
  if (c && x && y) {
    // Numpy broadcasting of three shapes.
    const HostTensor *ts[3] = {c, x, y};
    size_t rank = std::max({c->shape.size(), x->shape.size(), y->shape.size()});
    std::vector<int64_t> out(rank, 1);
    std::vector<std::vector<int64_t>> st(3, std::vector<int64_t>(rank, 0));
    for (int k = 0; k < 3; ++k) {
      auto strides = stridesOf(ts[k]->shape);
      size_t pad = rank - ts[k]->shape.size();
      for (size_t i = pad; i < rank; ++i) {
        int64_t d = ts[k]->shape[i - pad];
        if (d != 1 && out[i] != 1 && out[i] != d)
          return ctx.error("operand shapes do not broadcast");
        if (d != 1) {
          out[i] = d;
          st[k][i] = strides[i - pad];
        }
      }
    }
    HostTensor r;
    r.elementType = x->elementType;
    r.shape = out;
    if (failed(ctx.checkConstantSize(r.numElements(), "the output")))
      return failure();
    std::vector<int64_t> idx(rank, 0);
    for (int64_t e = 0, n = r.numElements(); e < n; ++e) {
      int64_t off[3] = {0, 0, 0};
      for (int k = 0; k < 3; ++k)
        for (size_t i = 0; i < rank; ++i)
          off[k] += idx[i] * st[k][i];
      r.values.push_back(c->values[off[0]] != 0 ? x->values[off[1]] : y->values[off[2]]);
      for (int64_t i = static_cast<int64_t>(rank) - 1; i >= 0; --i) {
        if (++idx[i] < out[i])
          break;
        idx[i] = 0;
      }
    }
    ctx.setHostOutput(0, std::move(r));
    return success();
  }
  return ctx.setResult(ctx.create<kiln::WhereOp>(ctx.input(0), ctx.input(1), ctx.input(2)));
}

void registerElementwiseConverters(llvm::StringMap<Converter> &t) {
  t["Where"] = convertWhere;
  t["Add"] = [](NodeContext &c) { return convertBinary<kiln::AddOp>(c, addF); };
  t["Sub"] = [](NodeContext &c) { return convertBinary<kiln::SubOp>(c, subF); };
  t["Mul"] = [](NodeContext &c) { return convertBinary<kiln::MulOp>(c, mulF); };
  t["Div"] = [](NodeContext &c) { return convertBinary<kiln::DivOp>(c, divF); };
  t["Pow"] = convertPow;
  t["Max"] = [](NodeContext &c) { return convertVariadic<kiln::MaxOp>(c, maxF); };
  t["Min"] = [](NodeContext &c) { return convertVariadic<kiln::MinOp>(c, minF); };
  t["Relu"] = [](NodeContext &c) { return convertUnary<kiln::ReluOp>(c, reluF); };
  t["Sigmoid"] = [](NodeContext &c) { return convertUnary<kiln::SigmoidOp>(c); };
  t["Tanh"] = [](NodeContext &c) { return convertUnary<kiln::TanhOp>(c); };
  t["Exp"] = [](NodeContext &c) { return convertUnary<kiln::ExpOp>(c, expF); };
  t["Log"] = [](NodeContext &c) { return convertUnary<kiln::LogOp>(c, logF); };
  t["Sqrt"] = [](NodeContext &c) { return convertUnary<kiln::SqrtOp>(c, sqrtF); };
  t["Erf"] = [](NodeContext &c) { return convertUnary<kiln::ErfOp>(c, erfF); };
  t["Neg"] = [](NodeContext &c) { return convertUnary<kiln::NegOp>(c, negF); };
  t["Reciprocal"] = [](NodeContext &c) { return convertUnary<kiln::ReciprocalOp>(c, recipF); };
  t["Abs"] = [](NodeContext &c) { return convertUnary<kiln::AbsOp>(c, absF); };
  t["HardSwish"] = [](NodeContext &c) { return convertUnary<kiln::HardSwishOp>(c); };
  t["Gelu"] = convertGelu;
  t["HardSigmoid"] = convertHardSigmoid;
  t["LeakyRelu"] = convertLeakyRelu;
  t["Clip"] = convertClip;
  t["Identity"] = convertIdentity;
}

} // namespace kiln::onnx_import
