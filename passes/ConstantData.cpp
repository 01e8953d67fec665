//===- ConstantData.cpp - reading and making float constants ---------------===//
#include "passes/ConstantData.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>

using namespace mlir;

namespace kiln {

std::optional<std::vector<float>> getF32Constant(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return std::nullopt;
  auto type = llvm::cast<RankedTensorType>(c.getType());
  if (!type.getElementType().isF32())
    return std::nullopt;
  int64_t n = type.getNumElements();
  std::vector<float> out(n);
  Attribute value = c.getValue();
  if (auto res = llvm::dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob || static_cast<int64_t>(blob->getData().size()) != n * 4)
      return std::nullopt;
    std::memcpy(out.data(), blob->getData().data(), n * 4);
    return out;
  }
  if (auto dense = llvm::dyn_cast<DenseFPElementsAttr>(value)) {
    int64_t i = 0;
    for (APFloat f : dense.getValues<APFloat>())
      out[i++] = f.convertToFloat();
    return out;
  }
  return std::nullopt;
}

std::optional<std::vector<float>> getNumberConstant(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return std::nullopt;
  auto type = llvm::cast<RankedTensorType>(c.getType());
  auto et = llvm::dyn_cast<IntegerType>(type.getElementType());
  if (!et)
    return getFloatConstant(v);
  auto ints = llvm::dyn_cast<DenseIntElementsAttr>(c.getValue());
  if (!ints)
    return std::nullopt;
  std::vector<float> out;
  out.reserve(type.getNumElements());
  for (APInt x : ints.getValues<APInt>())
    out.push_back(et.isUnsigned() || et.getWidth() == 1
                      ? static_cast<float>(x.getZExtValue())
                      : static_cast<float>(x.getSExtValue()));
  return out;
}

std::optional<std::vector<float>> getFloatConstant(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return std::nullopt;
  auto type = llvm::cast<RankedTensorType>(c.getType());
  Type et = type.getElementType();
  if (et.isF32())
    return getF32Constant(v);
  if (!et.isF16() && !et.isBF16())
    return std::nullopt;
  const auto &sem = llvm::cast<FloatType>(et).getFloatSemantics();
  int64_t n = type.getNumElements();
  std::vector<float> out(n);
  Attribute value = c.getValue();
  if (auto res = llvm::dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = res.getRawHandle().getBlob();
    if (!blob || static_cast<int64_t>(blob->getData().size()) != n * 2)
      return std::nullopt;
    const char *p = blob->getData().data();
    for (int64_t i = 0; i < n; ++i) {
      uint16_t bits;
      std::memcpy(&bits, p + 2 * i, 2);
      out[i] = APFloat(sem, APInt(16, bits)).convertToFloat();
    }
    return out;
  }
  if (auto dense = llvm::dyn_cast<DenseFPElementsAttr>(value)) {
    int64_t i = 0;
    for (APFloat f : dense.getValues<APFloat>()) {
      bool lost;
      f.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &lost);
      out[i++] = f.convertToFloat();
    }
    return out;
  }
  return std::nullopt;
}

ConstantOp makeFloatConstant(OpBuilder &b, Location loc, RankedTensorType type,
                             ArrayRef<float> values, StringRef name) {
  Type et = type.getElementType();
  if (et.isF32())
    return makeF32Constant(b, loc, type, values, name);
  const auto &sem = llvm::cast<FloatType>(et).getFloatSemantics();
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    APFloat f(values[i]);
    bool lost;
    f.convert(sem, APFloat::rmNearestTiesToEven, &lost);
    bits[i] = static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
  }
  auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      ArrayRef<char>(reinterpret_cast<const char *>(bits.data()), bits.size() * 2), 2);
  return ConstantOp::create(b, loc, DenseResourceElementsAttr::get(type, name, std::move(blob)));
}

ConstantOp makeF32Constant(OpBuilder &b, Location loc, RankedTensorType type,
                           ArrayRef<float> values, StringRef name) {
  auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      ArrayRef<char>(reinterpret_cast<const char *>(values.data()),
                     values.size() * sizeof(float)),
      alignof(float));
  auto attr = DenseResourceElementsAttr::get(type, name, std::move(blob));
  return ConstantOp::create(b, loc, attr);
}

std::optional<ConstantWeightProduct> constantWeightProduct(Operation *op) {
  ConstantWeightProduct p;
  if (auto g = dyn_cast<GemmOp>(op)) {
    if (g.getTransA() || g.getAlpha().convertToFloat() != 1.0f ||
        (g.getC() && g.getBeta().convertToFloat() != 1.0f))
      return std::nullopt;
    p = {g.getA(), g.getB(), g.getC(), g.getTransB()};
  } else if (auto m = dyn_cast<MatMulOp>(op)) {
    p = {m.getLhs(), m.getRhs(), Value(), false};
  } else {
    return std::nullopt;
  }
  auto lt = llvm::cast<RankedTensorType>(p.lhs.getType());
  auto wt = llvm::cast<RankedTensorType>(p.weights.getType());
  if (lt.getRank() < 2 || !lt.getElementType().isF32() || wt.getRank() != 2 ||
      !wt.getElementType().isF32() || !p.weights.getDefiningOp<ConstantOp>())
    return std::nullopt;
  return p;
}

} // namespace kiln
