//===- AtenHelpers.cpp - helpers shared by the ATen converters ------------===//
//
// The definitions of AtenConverters.h's shared helpers.
//
//===----------------------------------------------------------------------===//
#include "frontends/torch/AtenConverters.h"

using namespace kiln::torch_import;
using mlir::failure;
using mlir::LogicalResult;
using mlir::success;

std::string kiln::torch_import::operand(AtenContext &c, llvm::StringRef argName, int elemType) {
  const llvm::json::Object *a = c.arg(argName);
  if (a && a->getObject("as_tensor"))
    return c.castTo(c.tensor(argName), elemType);
  if (a && a->getObject("as_sym_int")) {
    auto n = a->getObject("as_sym_int")->getString("as_name");
    if (n)
      return c.castTo(n->str(), elemType);
  }
  auto s = c.scalar(argName, elemType);
  if (!s) {
    (void)c.fail("argument '" + argName.str() + "' is missing");
    return "";
  }
  return *s;
}

LogicalResult kiln::torch_import::binary(AtenContext &c, const std::string &op, llvm::StringRef lhs,
                                         llvm::StringRef rhs) {
  int t = outType(c);
  std::string a = operand(c, lhs, t), b = operand(c, rhs, t);
  if (c.failed())
    return failure();
  c.emit(op, {a, b}, {c.out()});
  return success();
}

LogicalResult kiln::torch_import::reshapeTo(AtenContext &c, const std::string &x) {
  if (c.failed())
    return failure();
  std::string shape = c.shapeFromOutput(c.out(), x, -1);
  if (c.failed())
    return failure();
  c.emit("Reshape", {x, shape}, {c.out()});
  return success();
}

LogicalResult kiln::torch_import::identity(AtenContext &c, llvm::StringRef arg) {
  std::string x = c.tensor(arg);
  if (c.failed())
    return failure();
  c.emit("Identity", {c.castTo(x, outType(c))}, {c.out()});
  return success();
}
