//===- AtenGenerators.cpp - ATen tensors made from sizes ------------------===//
//
// Constant fills, ranges and the Python operators on symbolic sizes (int64[1]
// values the ONNX importer evaluates from the graph inputs).
//
//===----------------------------------------------------------------------===//
#include "frontends/torch/AtenConverters.h"

using namespace kiln::torch_import;
using mlir::failure;
using mlir::LogicalResult;
using mlir::success;
using T = onnx::TensorProto;

namespace {

/// A tensor of the result's shape filled with `value`.
LogicalResult fill(AtenContext &c, double value, const std::string &like = "") {
  int t = outType(c);
  if (c.failed())
    return failure();
  std::string shape = c.shapeFromOutput(c.out(), like.empty() ? c.out() : like, 1);
  if (c.failed())
    return failure();
  c.emit("Expand", {c.constScalar(value, t), shape}, {c.out()});
  return success();
}

/// Python operators on symbolic sizes (int64[1] values) and int constants.
LogicalResult symOp(AtenContext &c, const std::string &op) {
  const llvm::json::Array *ins = c.node.getArray("inputs");
  if (!ins || ins->size() != 2)
    return c.fail("expects two operands");
  std::vector<std::string> vals;
  for (const auto &in : *ins) {
    const llvm::json::Object *o = in.getAsObject();
    const llvm::json::Object *a = o ? o->getObject("arg") : nullptr;
    if (!a)
      return c.fail("has an unreadable operand");
    if (const llvm::json::Object *s = a->getObject("as_sym_int")) {
      if (auto n = s->getString("as_name"))
        vals.push_back(n->str());
      else if (auto v = s->getInteger("as_int"))
        vals.push_back(c.constI64({*v}));
    } else if (auto v = a->getInteger("as_int")) {
      vals.push_back(c.constI64({*v}));
    } else {
      return c.fail("has an operand that is not an integer size");
    }
  }
  c.emit(op, vals, {c.out()});
  return success();
}

} // namespace

void kiln::torch_import::registerGeneratorConverters(llvm::StringMap<AtenConverter> &t) {
  AtenRegistrar reg{t};
  // Tensors made from sizes and values.
  reg({"aten.full.default", "aten.new_full.default"}, [](AtenContext &c) {
    return fill(c, c.f("fill_value", 0.0));
  });
  reg({"aten.zeros.default", "aten.new_zeros.default", "aten.empty.memory_format",
       "aten.new_empty.default"},
      [](AtenContext &c) { return fill(c, 0.0); });
  reg({"aten.ones.default", "aten.new_ones.default"}, [](AtenContext &c) { return fill(c, 1.0); });
  reg({"aten.full_like.default"}, [](AtenContext &c) {
    return fill(c, c.f("fill_value", 0.0), c.tensor("self"));
  });
  reg({"aten.zeros_like.default", "aten.empty_like.default"},
      [](AtenContext &c) { return fill(c, 0.0, c.tensor("self")); });
  reg({"aten.ones_like.default"}, [](AtenContext &c) { return fill(c, 1.0, c.tensor("self")); });
  reg({"aten.scalar_tensor.default"}, [](AtenContext &c) {
    int t = outType(c);
    auto v = c.scalarValue("s");
    if (!v)
      return c.fail("scalar_tensor of a non-constant");
    c.emit("Identity", {c.constScalar(*v, t)}, {c.out()});
    return success();
  });
  reg({"aten.arange.default", "aten.arange.start", "aten.arange.start_step"},
      [](AtenContext &c) {
        // (start and end may be symbolic sizes: arange(T), arange(P, P + T))
        int t = outType(c);
        auto start = c.sizeOrScalar("start", t), end = c.sizeOrScalar("end", t),
             step = c.sizeOrScalar("step", t);
        if (c.failed())
          return failure();
        if (!end)
          return c.fail("has no end");
        c.emit("Range", {start ? *start : c.constScalar(0, t), *end,
                         step ? *step : c.constScalar(1, t)},
               {c.out()});
        return success();
      });

  // Symbolic sizes: int64[1] values the ONNX importer evaluates from the
  // inputs' symbolic shapes.
  reg({"aten.sym_size.int"}, [](AtenContext &c) {
    std::string x = c.tensor("self");
    int64_t dim = c.i("dim", 0);
    if (c.failed())
      return failure();
    dim = normAxis(dim, rankOf(c, x));
    c.emit("Shape", {x}, {c.out()}, {Attr::i("start", dim), Attr::i("end", dim + 1)});
    return success();
  });
  reg({"_operator.mul"}, [](AtenContext &c) { return symOp(c, "Mul"); });
  reg({"_operator.add"}, [](AtenContext &c) { return symOp(c, "Add"); });
  reg({"_operator.sub"}, [](AtenContext &c) { return symOp(c, "Sub"); });
  reg({"_operator.floordiv"}, [](AtenContext &c) { return symOp(c, "Div"); });
}
