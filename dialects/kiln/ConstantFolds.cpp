//===- ConstantFolds.cpp - folding kiln ops over constant operands --------===//
#include "dialects/kiln/ConstantFolds.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>
#include <optional>
#include <vector>

using namespace mlir;

namespace kiln {
namespace {

/// The f32 values of a dense or resource constant of `type`, or nullopt.
std::optional<std::vector<float>> f32Elements(Attribute value, RankedTensorType type) {
  if (!value || !type.getElementType().isF32() || !type.hasStaticShape())
    return std::nullopt;
  int64_t n = type.getNumElements();
  if (auto dense = llvm::dyn_cast<DenseFPElementsAttr>(value)) {
    std::vector<float> out;
    out.reserve(n);
    if (dense.isSplat()) {
      out.assign(n, dense.getSplatValue<APFloat>().convertToFloat());
      return out;
    }
    for (APFloat f : dense.getValues<APFloat>())
      out.push_back(f.convertToFloat());
    return out;
  }
  auto res = llvm::dyn_cast<DenseResourceElementsAttr>(value);
  if (!res)
    return std::nullopt;
  AsmResourceBlob *blob = res.getRawHandle().getBlob();
  if (!blob || static_cast<int64_t>(blob->getData().size()) != n * 4)
    return std::nullopt;
  std::vector<float> out(n);
  std::memcpy(out.data(), blob->getData().data(), n * 4);
  return out;
}

/// `values` as a constant of `type`: dense when small, else a resource blob.
Attribute f32Attr(RankedTensorType type, ArrayRef<float> values) {
  if (values.size() <= 64)
    return DenseElementsAttr::get(type, values);
  auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      ArrayRef<char>(reinterpret_cast<const char *>(values.data()), values.size() * 4),
      alignof(float));
  return DenseResourceElementsAttr::get(type, "folded", std::move(blob));
}

/// The strides of `in` (right-aligned against `out`) with 0 on broadcast
/// axes: element e of the result reads element sum(idx_d * s_d) of `in`.
SmallVector<int64_t> broadcastStrides(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  SmallVector<int64_t> s(out.size(), 0);
  int64_t stride = 1;
  size_t lead = out.size() - in.size();
  for (size_t a = in.size(); a-- > 0;) {
    if (in[a] != 1)
      s[lead + a] = stride;
    stride *= in[a];
  }
  return s;
}

} // namespace

Attribute foldF32Binary(Operation *op, Attribute lhs, Attribute rhs, float (*fn)(float, float)) {
  if (!lhs || !rhs || op->getNumOperands() != 2 || op->getNumResults() != 1)
    return {};
  auto lt = llvm::dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto rt = llvm::dyn_cast<RankedTensorType>(op->getOperand(1).getType());
  auto ot = llvm::dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!lt || !rt || !ot || !ot.getElementType().isF32() || !ot.hasStaticShape() ||
      ot.getRank() < lt.getRank() || ot.getRank() < rt.getRank())
    return {};
  int64_t n = ot.getNumElements();
  if (n > 1024 && n > std::max(lt.getNumElements(), rt.getNumElements()))
    return {};
  auto a = f32Elements(lhs, lt), b = f32Elements(rhs, rt);
  if (!a || !b)
    return {};
  auto out = ot.getShape();
  auto sa = broadcastStrides(lt.getShape(), out), sb = broadcastStrides(rt.getShape(), out);
  std::vector<float> y(n);
  SmallVector<int64_t> idx(out.size(), 0);
  int64_t oa = 0, ob = 0;
  for (int64_t e = 0; e < n; ++e) {
    y[e] = fn((*a)[oa], (*b)[ob]);
    // The next index, odometer style, moving both operands' offsets.
    for (int64_t d = static_cast<int64_t>(out.size()) - 1; d >= 0; --d) {
      oa += sa[d];
      ob += sb[d];
      if (++idx[d] < out[d])
        break;
      oa -= sa[d] * out[d];
      ob -= sb[d] * out[d];
      idx[d] = 0;
    }
  }
  return f32Attr(ot, y);
}

Attribute reshapedResource(Attribute value, RankedTensorType type) {
  auto res = llvm::dyn_cast_or_null<DenseResourceElementsAttr>(value);
  if (!res || !type.hasStaticShape() || res.getType().getElementType() != type.getElementType() ||
      res.getType().getNumElements() != type.getNumElements())
    return {};
  AsmResourceBlob *blob = res.getRawHandle().getBlob();
  if (!blob)
    return {};
  auto copy = HeapAsmResourceBlob::allocateAndCopyWithAlign(blob->getData(),
                                                            blob->getDataAlignment());
  return DenseResourceElementsAttr::get(type, "reshaped", std::move(copy));
}

} // namespace kiln
