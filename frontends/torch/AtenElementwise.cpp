//===- AtenElementwise.cpp - ATen elementwise ops -------------------------===//
//
// Arithmetic, activations, comparisons, logic and clamps, one ONNX node each
// (or a few where torch promotes types or takes an alpha).
//
//===----------------------------------------------------------------------===//
#include "frontends/torch/AtenConverters.h"

using namespace kiln::torch_import;
using mlir::failure;
using mlir::LogicalResult;
using mlir::success;
using T = onnx::TensorProto;

namespace {

LogicalResult unary(AtenContext &c, const std::string &op, std::vector<Attr> attrs = {}) {
  std::string x = c.tensor("self");
  if (c.failed())
    return failure();
  c.emit(op, {c.castTo(x, outType(c))}, {c.out()}, std::move(attrs));
  return success();
}

/// add/sub: self op alpha * other; rsub (`reversed`): other - alpha * self.
LogicalResult addSub(AtenContext &c, const std::string &op, bool reversed = false) {
  int t = outType(c);
  std::string a = operand(c, "self", t), b = operand(c, "other", t);
  double alpha = c.f("alpha", 1.0);
  if (c.failed())
    return failure();
  if (reversed)
    std::swap(a, b);
  if (alpha != 1.0)
    b = c.emit("Mul", {b, c.constScalar(alpha, t)});
  c.emit(op, {a, b}, {c.out()});
  return success();
}

/// The type both sides of a comparison are compared in (torch's promotion
/// between a tensor and a tensor or a Python number).
int compareType(AtenContext &c) {
  const llvm::json::Object *o = c.arg("other");
  const TensorInfo &a = c.info(c.tensor("self"));
  if (o && o->getObject("as_tensor")) {
    const TensorInfo &b = c.info(c.tensor("other"));
    if (a.elemType == b.elemType)
      return a.elemType;
    if (a.isFloat() != b.isFloat())
      return a.isFloat() ? a.elemType : b.elemType;
    if (a.isFloat())
      return T::FLOAT;
    return T::INT64;
  }
  auto v = c.scalarValue("other");
  if (!a.isFloat() && v && *v != std::floor(*v))
    return T::FLOAT;
  return a.elemType;
}

LogicalResult compare(AtenContext &c, const std::string &op, bool negate = false) {
  int t = compareType(c);
  std::string a = operand(c, "self", t), b = operand(c, "other", t);
  if (c.failed())
    return failure();
  if (negate)
    c.emit("Not", {c.emit(op, {a, b})}, {c.out()});
  else
    c.emit(op, {a, b}, {c.out()});
  return success();
}

LogicalResult logical(AtenContext &c, const std::string &op) {
  std::string a = c.castTo(c.tensor("self"), T::BOOL), b = c.castTo(c.tensor("other"), T::BOOL);
  if (c.failed())
    return failure();
  c.emit(op, {a, b}, {c.out()});
  return success();
}

/// torch's &, | and ^ (bitwise_and, __and__, ...): logical on bools,
/// bitwise on integers (ONNX BitwiseAnd, ...), in the result's type.
LogicalResult bitwise(AtenContext &c, const std::string &logicalOp,
                      const std::string &bitwiseOp) {
  int t = outType(c);
  if (t == T::BOOL)
    return logical(c, logicalOp);
  std::string a = operand(c, "self", t), b = operand(c, "other", t);
  if (c.failed())
    return failure();
  c.emit(bitwiseOp, {a, b}, {c.out()});
  return success();
}

/// Clip(x, lo, hi) in the result's type; absent bounds stay open.
LogicalResult clip(AtenContext &c, std::optional<double> lo, std::optional<double> hi) {
  int t = outType(c);
  std::string x = c.castTo(c.tensor("self"), t);
  if (c.failed())
    return failure();
  std::vector<std::string> ins = {x, lo ? c.constScalar(*lo, t) : std::string(),
                                  hi ? c.constScalar(*hi, t) : std::string()};
  while (ins.back().empty())
    ins.pop_back();
  c.emit("Clip", ins, {c.out()});
  return success();
}

} // namespace

void kiln::torch_import::registerElementwiseConverters(llvm::StringMap<AtenConverter> &t) {
  AtenRegistrar reg{t};
  auto un = [&](std::initializer_list<const char *> names, std::string op) {
    reg(names, [op](AtenContext &c) { return unary(c, op); });
  };
  // Elementwise.
  un({"aten.relu.default", "aten.relu_.default"}, "Relu");
  un({"aten.sigmoid.default", "aten.sigmoid_.default"}, "Sigmoid");
  un({"aten.tanh.default", "aten.tanh_.default"}, "Tanh");
  un({"aten.exp.default"}, "Exp");
  un({"aten.log.default"}, "Log");
  un({"aten.sqrt.default"}, "Sqrt");
  un({"aten.neg.default"}, "Neg");
  un({"aten.abs.default"}, "Abs");
  un({"aten.erf.default"}, "Erf");
  un({"aten.sin.default"}, "Sin");
  un({"aten.cos.default"}, "Cos");
  un({"aten.floor.default"}, "Floor");
  un({"aten.ceil.default"}, "Ceil");
  un({"aten.round.default"}, "Round");
  un({"aten.sign.default"}, "Sign");
  un({"aten.reciprocal.default"}, "Reciprocal");
  un({"aten.hardswish.default", "aten.hardswish_.default"}, "HardSwish");
  un({"aten.logical_not.default", "aten.bitwise_not.default"}, "Not");
  reg({"aten.rsqrt.default"}, [](AtenContext &c) {
    std::string x = c.tensor("self");
    if (c.failed())
      return failure();
    c.emit("Reciprocal", {c.emit("Sqrt", {c.castTo(x, outType(c))})}, {c.out()});
    return success();
  });
  reg({"aten.silu.default", "aten.silu_.default"}, [](AtenContext &c) {
    std::string x = c.tensor("self");
    if (c.failed())
      return failure();
    c.emit("Mul", {x, c.emit("Sigmoid", {x})}, {c.out()});
    return success();
  });
  reg({"aten.gelu.default", "aten.gelu_.default"}, [](AtenContext &c) {
    std::string approx = c.str("approximate").value_or("none");
    return unary(c, "Gelu", {Attr::s("approximate", approx)});
  });
  reg({"aten.hardsigmoid.default", "aten.hardsigmoid_.default"}, [](AtenContext &c) {
    return unary(c, "HardSigmoid", {Attr::f("alpha", 1.0f / 6), Attr::f("beta", 0.5f)});
  });
  reg({"aten.leaky_relu.default", "aten.leaky_relu_.default"}, [](AtenContext &c) {
    return unary(c, "LeakyRelu", {Attr::f("alpha", float(c.f("negative_slope", 0.01)))});
  });
  reg({"aten.elu.default", "aten.elu_.default"}, [](AtenContext &c) {
    if (c.f("scale", 1.0) != 1.0 || c.f("input_scale", 1.0) != 1.0)
      return c.fail("elu with a scale");
    return unary(c, "Elu", {Attr::f("alpha", float(c.f("alpha", 1.0)))});
  });
  reg({"aten.hardtanh.default", "aten.hardtanh_.default"}, [](AtenContext &c) {
    return clip(c, c.f("min_val", -1.0), c.f("max_val", 1.0));
  });
  reg({"aten.relu6.default"}, [](AtenContext &c) { return clip(c, 0.0, 6.0); });
  reg({"aten.clamp.default", "aten.clamp_.default"}, [](AtenContext &c) {
    return clip(c, c.scalarValue("min"), c.scalarValue("max"));
  });
  reg({"aten.clamp_min.default"}, [](AtenContext &c) {
    return clip(c, c.scalarValue("min"), std::nullopt);
  });
  reg({"aten.clamp_max.default"}, [](AtenContext &c) {
    return clip(c, std::nullopt, c.scalarValue("max"));
  });
  reg({"aten.clamp.Tensor"}, [](AtenContext &c) {
    int t = outType(c);
    std::string x = c.castTo(c.tensor("self"), t);
    if (!c.isNone("min"))
      x = c.emit("Max", {x, c.castTo(c.tensor("min"), t)});
    if (!c.isNone("max"))
      x = c.emit("Min", {x, c.castTo(c.tensor("max"), t)});
    c.emit("Identity", {x}, {c.out()});
    return c.failed() ? failure() : success();
  });
  reg({"aten.softplus.default"}, [](AtenContext &c) {
    double beta = c.f("beta", 1.0), threshold = c.f("threshold", 20.0);
    int t = outType(c);
    std::string x = c.castTo(c.tensor("self"), t);
    if (c.failed())
      return failure();
    // log(1 + exp(beta x)) / beta, and x itself where beta x > threshold.
    std::string bx = beta == 1.0 ? x : c.emit("Mul", {x, c.constScalar(beta, t)});
    std::string sp = c.emit("Softplus", {bx});
    if (beta != 1.0)
      sp = c.emit("Div", {sp, c.constScalar(beta, t)});
    std::string big = c.emit("Greater", {bx, c.constScalar(threshold, t)});
    c.emit("Where", {big, x, sp}, {c.out()});
    return success();
  });
  reg({"aten.add.Tensor", "aten.add_.Tensor", "aten.add.Scalar", "aten.add_.Scalar"},
      [](AtenContext &c) { return addSub(c, "Add"); });
  reg({"aten.sub.Tensor", "aten.sub_.Tensor", "aten.sub.Scalar", "aten.sub_.Scalar"},
      [](AtenContext &c) { return addSub(c, "Sub"); });
  reg({"aten.rsub.Scalar", "aten.rsub.Tensor"},
      [](AtenContext &c) { return addSub(c, "Sub", /*reversed=*/true); });
  reg({"aten.mul.Tensor", "aten.mul_.Tensor", "aten.mul.Scalar", "aten.mul_.Scalar"},
      [](AtenContext &c) { return binary(c, "Mul"); });
  reg({"aten.div.Tensor", "aten.div_.Tensor", "aten.div.Scalar", "aten.div_.Scalar"},
      [](AtenContext &c) { return binary(c, "Div"); });
  reg({"aten.div.Tensor_mode", "aten.div.Scalar_mode"}, [](AtenContext &c) {
    auto mode = c.str("rounding_mode");
    if (!mode)
      return binary(c, "Div");
    int t = outType(c);
    bool isFloat = c.info(c.out()).isFloat();
    // Round in floating point: trunc or floor of the true quotient.
    int ft = isFloat ? t : int(T::DOUBLE);
    std::string a = operand(c, "self", ft), b = operand(c, "other", ft);
    if (c.failed())
      return failure();
    std::string q = c.emit("Div", {a, b});
    if (*mode == "floor") {
      q = c.emit("Floor", {q});
    } else if (*mode == "trunc") {
      std::string neg = c.emit("Less", {q, c.constScalar(0, ft)});
      q = c.emit("Where", {neg, c.emit("Ceil", {q}), c.emit("Floor", {q})});
    } else {
      return c.fail("rounding mode '" + *mode + "'");
    }
    c.emit(isFloat ? "Identity" : "Cast", {q}, {c.out()},
           isFloat ? std::vector<Attr>{} : std::vector<Attr>{Attr::i("to", t)});
    return success();
  });
  reg({"aten.floor_divide.default"}, [](AtenContext &c) {
    int t = outType(c);
    bool isFloat = c.info(c.out()).isFloat();
    int ft = isFloat ? t : int(T::DOUBLE);
    std::string a = operand(c, "self", ft), b = operand(c, "other", ft);
    if (c.failed())
      return failure();
    std::string q = c.emit("Floor", {c.emit("Div", {a, b})});
    c.emit("Cast", {q}, {c.out()}, {Attr::i("to", t)});
    return success();
  });
  reg({"aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor"}, [](AtenContext &c) {
    return binary(c, "Pow", "self", "exponent");
  });
  reg({"aten.pow.Scalar"}, [](AtenContext &c) { return binary(c, "Pow", "self", "exponent"); });
  reg({"aten.maximum.default", "aten.max.other"},
      [](AtenContext &c) { return binary(c, "Max"); });
  reg({"aten.minimum.default", "aten.min.other"},
      [](AtenContext &c) { return binary(c, "Min"); });
  reg({"aten.remainder.Tensor", "aten.remainder.Scalar"}, [](AtenContext &c) {
    int t = outType(c);
    std::string a = operand(c, "self", t), b = operand(c, "other", t);
    if (c.failed())
      return failure();
    // Python's remainder takes the divisor's sign: ONNX Mod with fmod=0
    // (integers) or a - floor(a / b) * b (floats).
    if (!c.info(c.out()).isFloat()) {
      c.emit("Mod", {a, b}, {c.out()}, {Attr::i("fmod", 0)});
      return success();
    }
    std::string q = c.emit("Floor", {c.emit("Div", {a, b})});
    c.emit("Sub", {a, c.emit("Mul", {q, b})}, {c.out()});
    return success();
  });
  reg({"aten.fmod.Tensor", "aten.fmod.Scalar"}, [](AtenContext &c) {
    int t = outType(c);
    std::string a = operand(c, "self", t), b = operand(c, "other", t);
    if (c.failed())
      return failure();
    c.emit("Mod", {a, b}, {c.out()}, {Attr::i("fmod", 1)});
    return success();
  });
  reg({"aten.eq.Tensor", "aten.eq.Scalar"}, [](AtenContext &c) { return compare(c, "Equal"); });
  reg({"aten.ne.Tensor", "aten.ne.Scalar"},
      [](AtenContext &c) { return compare(c, "Equal", true); });
  reg({"aten.lt.Tensor", "aten.lt.Scalar"}, [](AtenContext &c) { return compare(c, "Less"); });
  reg({"aten.le.Tensor", "aten.le.Scalar"},
      [](AtenContext &c) { return compare(c, "LessOrEqual"); });
  reg({"aten.gt.Tensor", "aten.gt.Scalar"}, [](AtenContext &c) { return compare(c, "Greater"); });
  reg({"aten.ge.Tensor", "aten.ge.Scalar"},
      [](AtenContext &c) { return compare(c, "GreaterOrEqual"); });
  reg({"aten.logical_and.default"}, [](AtenContext &c) { return logical(c, "And"); });
  reg({"aten.logical_or.default"}, [](AtenContext &c) { return logical(c, "Or"); });
  reg({"aten.logical_xor.default"}, [](AtenContext &c) { return logical(c, "Xor"); });
  reg({"aten.bitwise_and.Tensor", "aten.bitwise_and.Scalar", "aten.__and__.Tensor",
       "aten.__and__.Scalar"},
      [](AtenContext &c) { return bitwise(c, "And", "BitwiseAnd"); });
  reg({"aten.bitwise_or.Tensor", "aten.bitwise_or.Scalar", "aten.__or__.Tensor",
       "aten.__or__.Scalar"},
      [](AtenContext &c) { return bitwise(c, "Or", "BitwiseOr"); });
  reg({"aten.bitwise_xor.Tensor", "aten.bitwise_xor.Scalar", "aten.__xor__.Tensor",
       "aten.__xor__.Scalar"},
      [](AtenContext &c) { return bitwise(c, "Xor", "BitwiseXor"); });
  reg({"aten.where.self", "aten.where.ScalarOther", "aten.where.ScalarSelf",
       "aten.where.Scalar"},
      [](AtenContext &c) {
        int t = outType(c);
        std::string cond = c.castTo(c.tensor("condition"), T::BOOL);
        std::string a = operand(c, "self", t), b = operand(c, "other", t);
        if (c.failed())
          return failure();
        c.emit("Where", {cond, a, b}, {c.out()});
        return success();
      });
  reg({"aten.masked_fill.Scalar", "aten.masked_fill.Tensor", "aten.masked_fill_.Scalar"},
      [](AtenContext &c) {
        int t = outType(c);
        std::string x = c.castTo(c.tensor("self"), t);
        std::string m = c.castTo(c.tensor("mask"), T::BOOL);
        std::string v = operand(c, "value", t);
        if (c.failed())
          return failure();
        c.emit("Where", {m, v, x}, {c.out()});
        return success();
      });
}
