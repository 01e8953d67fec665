//===- ConvertLogic.cpp - comparisons, logic, bitwise, rounding, trig ------===//
//
// Ops whose results are bools or integers, and the float functions that map
// one to one onto a kiln op. Inputs all known at import time are evaluated
// here (shape arithmetic), like the other elementwise converters.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/HostEval.h"
#include "frontends/onnx/ImporterImpl.h"
#include "frontends/onnx/NodeContext.h"

#include <cmath>

using namespace mlir;
namespace kiln::onnx_import {
namespace {

using HostFn = double (*)(double, double);

/// A host result of `fn` over both inputs, with element type `type` (null:
/// the first input's).
LogicalResult hostBinaryAs(NodeContext &ctx, HostFn fn, Type type) {
  auto r = hostBinary(*ctx.hostInput(0), *ctx.hostInput(1), fn);
  if (!r)
    return ctx.error("operand shapes do not broadcast");
  if (type)
    r->elementType = type;
  ctx.setHostOutput(0, std::move(*r));
  return success();
}

bool bothHost(NodeContext &ctx) { return ctx.hostInput(0) && ctx.hostInput(1); }

LogicalResult convertCompare(NodeContext &ctx, StringRef pred, HostFn fn) {
  if (bothHost(ctx))
    return hostBinaryAs(ctx, fn, ctx.builder.getI1Type());
  return ctx.setResult(ctx.create<kiln::CompareOp>(ctx.input(0), ctx.input(1),
                                                   ctx.builder.getStringAttr(pred)));
}

double eqF(double a, double b) { return a == b; }
double ltF(double a, double b) { return a < b; }
double leF(double a, double b) { return a <= b; }
double gtF(double a, double b) { return a > b; }
double geF(double a, double b) { return a >= b; }

/// Bitwise/logical binary ops (on i1 the logical ones).
template <typename OpTy>
LogicalResult convertBitwise(NodeContext &ctx, HostFn fn) {
  if (!ctx.inputType(0).getElementType().isInteger())
    return ctx.error("expects integer or bool operands");
  if (bothHost(ctx))
    return hostBinaryAs(ctx, fn, Type());
  return ctx.setResult(ctx.create<OpTy>(ctx.input(0), ctx.input(1)));
}

double andF(double a, double b) {
  return static_cast<double>(hostInt(a) & hostInt(b));
}
double orF(double a, double b) {
  return static_cast<double>(hostInt(a) | hostInt(b));
}
double xorF(double a, double b) {
  return static_cast<double>(hostInt(a) ^ hostInt(b));
}

LogicalResult convertNot(NodeContext &ctx) {
  auto t = ctx.inputType(0);
  if (!t.getElementType().isInteger())
    return ctx.error("expects integer or bool operands");
  if (const HostTensor *h = ctx.hostInput(0)) {
    HostTensor r = *h;
    unsigned w = t.getElementType().getIntOrFloatBitWidth();
    bool uns = t.getElementType().isUnsignedInteger();
    for (double &v : r.values) {
      if (w == 1) {
        v = v == 0;
        continue;
      }
      APInt x(w, static_cast<uint64_t>(hostInt(v)), true, true);
      x.flipAllBits();
      v = uns ? static_cast<double>(x.getZExtValue()) : static_cast<double>(x.getSExtValue());
    }
    ctx.setHostOutput(0, std::move(r));
    return success();
  }
  return ctx.setResult(ctx.createTyped<kiln::NotOp>(t, ctx.input(0)));
}

LogicalResult convertBitShift(NodeContext &ctx) {
  std::string dir = ctx.attrString("direction", "");
  if (dir != "LEFT" && dir != "RIGHT")
    return ctx.error("direction must be 'LEFT' or 'RIGHT', not '" + dir + "'");
  if (!ctx.inputType(0).getElementType().isUnsignedInteger())
    return ctx.error("expects unsigned integer operands");
  if (dir == "LEFT")
    return ctx.setResult(ctx.create<kiln::ShlOp>(ctx.input(0), ctx.input(1)));
  return ctx.setResult(ctx.create<kiln::ShrOp>(ctx.input(0), ctx.input(1)));
}

LogicalResult convertMod(NodeContext &ctx) {
  bool fmod = ctx.attrInt("fmod", 0) != 0;
  Type et = ctx.inputType(0).getElementType();
  if (llvm::isa<FloatType>(et) && !fmod)
    return ctx.error("fmod must be 1 for floating-point operands");
  if (bothHost(ctx)) {
    HostFn fn = fmod ? +[](double a, double b) { return b == 0 ? 0.0 : std::fmod(a, b); }
                     : +[](double a, double b) {
                         if (b == 0)
                           return 0.0;
                         double r = std::fmod(a, b);
                         return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
                       };
    return hostBinaryAs(ctx, fn, Type());
  }
  return ctx.setResult(ctx.create<kiln::ModOp>(ctx.input(0), ctx.input(1),
                                               ctx.builder.getBoolAttr(fmod)));
}

/// Float functions with one kiln op each.
template <typename OpTy>
LogicalResult convertFloatUnary(NodeContext &ctx, double (*host)(double)) {
  auto t = ctx.inputType(0);
  if (!llvm::isa<FloatType>(t.getElementType()))
    return ctx.error("expects floating-point operands");
  if (const HostTensor *h = ctx.hostInput(0)) {
    ctx.setHostOutput(0, hostUnary(*h, host));
    return success();
  }
  return ctx.setResult(ctx.createTyped<OpTy>(t, ctx.input(0)));
}

double signF(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }

LogicalResult convertSign(NodeContext &ctx) {
  if (const HostTensor *h = ctx.hostInput(0)) {
    ctx.setHostOutput(0, hostUnary(*h, signF));
    return success();
  }
  return ctx.setResult(ctx.createTyped<kiln::SignOp>(ctx.inputType(0), ctx.input(0)));
}

LogicalResult convertIsNaN(NodeContext &ctx) {
  auto t = ctx.inputType(0);
  if (!llvm::isa<FloatType>(t.getElementType()))
    return ctx.error("expects floating-point operands");
  return ctx.setResult(
      ctx.createTyped<kiln::IsNanOp>(t.clone(ctx.builder.getI1Type()), ctx.input(0)));
}

LogicalResult convertIsInf(NodeContext &ctx) {
  auto t = ctx.inputType(0);
  if (!llvm::isa<FloatType>(t.getElementType()))
    return ctx.error("expects floating-point operands");
  OpBuilder &b = ctx.builder;
  return ctx.setResult(ctx.createTyped<kiln::IsInfOp>(
      t.clone(b.getI1Type()), ctx.input(0),
      b.getBoolAttr(ctx.attrInt("detect_positive", 1) != 0),
      b.getBoolAttr(ctx.attrInt("detect_negative", 1) != 0)));
}

double roundF(double x) { return std::nearbyint(x); } // the default mode: to even

} // namespace

void registerLogicConverters(llvm::StringMap<Converter> &t) {
  t["Equal"] = [](NodeContext &c) { return convertCompare(c, "eq", eqF); };
  t["Less"] = [](NodeContext &c) { return convertCompare(c, "lt", ltF); };
  t["LessOrEqual"] = [](NodeContext &c) { return convertCompare(c, "le", leF); };
  t["Greater"] = [](NodeContext &c) { return convertCompare(c, "gt", gtF); };
  t["GreaterOrEqual"] = [](NodeContext &c) { return convertCompare(c, "ge", geF); };
  t["And"] = [](NodeContext &c) { return convertBitwise<kiln::AndOp>(c, andF); };
  t["Or"] = [](NodeContext &c) { return convertBitwise<kiln::OrOp>(c, orF); };
  t["Xor"] = [](NodeContext &c) { return convertBitwise<kiln::XorOp>(c, xorF); };
  t["BitwiseAnd"] = t["And"];
  t["BitwiseOr"] = t["Or"];
  t["BitwiseXor"] = t["Xor"];
  t["Not"] = convertNot;
  t["BitwiseNot"] = convertNot;
  t["BitShift"] = convertBitShift;
  t["Mod"] = convertMod;
  t["Sign"] = convertSign;
  t["IsNaN"] = convertIsNaN;
  t["IsInf"] = convertIsInf;
#define KILN_FLOAT_UNARY(NAME, OP, FN)                                          \
  t[NAME] = [](NodeContext &c) {                                               \
    return convertFloatUnary<kiln::OP>(c, +[](double x) { return FN(x); });    \
  };
  KILN_FLOAT_UNARY("Sin", SinOp, std::sin)
  KILN_FLOAT_UNARY("Cos", CosOp, std::cos)
  KILN_FLOAT_UNARY("Tan", TanOp, std::tan)
  KILN_FLOAT_UNARY("Asin", AsinOp, std::asin)
  KILN_FLOAT_UNARY("Acos", AcosOp, std::acos)
  KILN_FLOAT_UNARY("Atan", AtanOp, std::atan)
  KILN_FLOAT_UNARY("Sinh", SinhOp, std::sinh)
  KILN_FLOAT_UNARY("Cosh", CoshOp, std::cosh)
  KILN_FLOAT_UNARY("Asinh", AsinhOp, std::asinh)
  KILN_FLOAT_UNARY("Acosh", AcoshOp, std::acosh)
  KILN_FLOAT_UNARY("Atanh", AtanhOp, std::atanh)
  KILN_FLOAT_UNARY("Floor", FloorOp, std::floor)
  KILN_FLOAT_UNARY("Ceil", CeilOp, std::ceil)
  KILN_FLOAT_UNARY("Round", RoundOp, roundF)
#undef KILN_FLOAT_UNARY
}

} // namespace kiln::onnx_import
