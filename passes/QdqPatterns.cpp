//===- QdqPatterns.cpp - matchers of quantize/dequantize chains -----------===//
//
// See QdqPatterns.h.
//
//===----------------------------------------------------------------------===//
#include "passes/QdqPatterns.h"
#include "passes/ConstantData.h"

#include <cmath>

using namespace mlir;

namespace kiln {
namespace {
RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }
} // namespace

/// The one value of a constant scalar (any shape of one element).
std::optional<float> scalarOf(Value v) {
  if (!v || typeOf(v).getNumElements() != 1)
    return std::nullopt;
  auto vals = getNumberConstant(v);
  if (!vals || vals->size() != 1)
    return std::nullopt;
  return vals->front();
}

std::optional<Dequantized> dequantized(Value a) {
  auto mul = a.getDefiningOp<MulOp>();
  if (!mul)
    return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    auto scale = scalarOf(mul->getOperand(1 - side));
    if (!scale || !(*scale > 0) || !std::isfinite(*scale))
      continue;
    Value x = mul->getOperand(side);
    Dequantized d;
    d.scale = *scale;
    if (auto sub = x.getDefiningOp<SubOp>()) {
      auto zero = scalarOf(sub.getRhs());
      if (!zero)
        continue;
      d.zero = *zero;
      x = sub.getLhs();
    }
    auto cast = x.getDefiningOp<CastOp>();
    if (!cast || typeOf(x).getShape() != typeOf(a).getShape() ||
        !typeOf(cast.getInput()).getElementType().isInteger(8) ||
        !typeOf(x).getElementType().isF32())
      continue;
    d.q = cast.getInput();
    bool isUnsigned = typeOf(d.q).getElementType().isUnsignedInteger();
    float lo = isUnsigned ? 0.0f : -128.0f, hi = isUnsigned ? 255.0f : 127.0f;
    if (d.zero != std::nearbyint(d.zero) || d.zero < lo || d.zero > hi)
      continue;
    return d;
  }
  return std::nullopt;
}

std::optional<Quantization> quantizationOf(CastOp cast) {
  // The one scalar-constant operand of a binary op and the other one.
  auto split = [](Operation *op) -> std::optional<std::pair<Value, float>> {
    if (!op || op->getNumOperands() != 2)
      return std::nullopt;
    for (int side = 0; side < 2; ++side)
      if (auto c = scalarOf(op->getOperand(1 - side)))
        return std::make_pair(op->getOperand(side), *c);
    return std::nullopt;
  };
  if (!cast.getType().getElementType().isInteger(8))
    return std::nullopt;
  Quantization qz;
  auto hi = split(cast.getInput().getDefiningOp<MinOp>());
  auto lo = hi ? split(hi->first.getDefiningOp<MaxOp>()) : std::nullopt;
  if (!lo)
    return std::nullopt;
  qz.hi = hi->second, qz.lo = lo->second;
  Value v = lo->first;
  if (auto zero = split(v.getDefiningOp<AddOp>()))
    v = zero->first, qz.zero = zero->second;
  auto round = v.getDefiningOp<RoundOp>();
  if (!round)
    return std::nullopt;
  qz.rounded = round.getResult();
  auto div = round.getInput().getDefiningOp<DivOp>();
  auto scale = div ? scalarOf(div.getRhs()) : std::nullopt;
  if (!scale || div.getType() != typeOf(div.getLhs())) {
    // No division: a product took the scale into its own (scale 1 here).
    qz.x = round.getInput(), qz.scale = 1.0f;
    return qz;
  }
  qz.x = div.getLhs(), qz.scale = *scale;
  return qz;
}

} // namespace kiln
