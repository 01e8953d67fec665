//===- ConstantData.cpp - reading and making f32 constants -----------------===//
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

ConstantOp makeF32Constant(OpBuilder &b, Location loc, RankedTensorType type,
                           ArrayRef<float> values, StringRef name) {
  auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      ArrayRef<char>(reinterpret_cast<const char *>(values.data()),
                     values.size() * sizeof(float)),
      alignof(float));
  auto attr = DenseResourceElementsAttr::get(type, name, std::move(blob));
  return ConstantOp::create(b, loc, attr);
}

} // namespace kiln
