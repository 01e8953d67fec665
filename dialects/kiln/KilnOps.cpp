//===- KilnOps.cpp - kiln op verifiers, type inference, folders ------------===//
#include "dialects/kiln/KilnDialect.h"
#include "dialects/kiln/ConstantFolds.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/APSInt.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"

#include <cstring>
#include <vector>

using namespace mlir;
using namespace kiln;

namespace {
RankedTensorType rankedOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

LogicalResult failWith(std::optional<Location> loc, const llvm::Twine &msg) {
  return emitOptionalError(loc, msg);
}

/// Numpy broadcasting of two static shapes.
LogicalResult broadcast(ArrayRef<int64_t> a, ArrayRef<int64_t> b,
                        SmallVectorImpl<int64_t> &out) {
  size_t rank = std::max(a.size(), b.size());
  out.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return failure();
    out[i] = da == 1 ? db : da;
  }
  return success();
}

} // namespace

/// Fails unless the dilated window fits the padded input along each spatial
/// axis (onnxruntime refuses such a Conv: it has no output). An
/// input without elements has an empty result anyway.
static LogicalResult checkWindowFits(std::optional<Location> loc, RankedTensorType input,
                                     ArrayRef<int64_t> in, ArrayRef<int64_t> k,
                                     ArrayRef<int64_t> dilations, ArrayRef<int64_t> pads) {
  if (input.getNumElements() == 0)
    return success();
  size_t n = k.size();
  for (size_t i = 0; i < n; ++i) {
    int64_t span = (k[i] - 1) * dilations[i] + 1, padded = in[i] + pads[i] + pads[n + i];
    if (span > padded)
      return failWith(loc, "the window spans " + std::to_string(span) +
                               " positions along spatial axis " + std::to_string(i) +
                               ", more than the padded input's " + std::to_string(padded));
  }
  return success();
}

int64_t kiln::windowOut(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pBegin,
                  int64_t pEnd, bool ceilMode) {
  int64_t span = in + pBegin + pEnd - ((k - 1) * d + 1);
  // (A window longer than the padded input: none, or with ceil mode one
  // when it falls short by less than a stride -- ceil(span / s) + 1, as
  // onnxruntime counts.)
  if (span < 0)
    return ceilMode && in > 0 && -span < s ? 1 : 0;
  int64_t out = (ceilMode ? (span + s - 1) / s : span / s) + 1;
  // With ceil mode the last window must start inside the input or left pad.
  if (ceilMode && (out - 1) * s >= in + pBegin)
    --out;
  return out;
}

namespace {

/// `dense` with its dimensions permuted (result dimension i is input
/// dimension perm[i]); null for bit-packed (i1) elements.
DenseElementsAttr transposeElements(DenseElementsAttr dense, ArrayRef<int64_t> perm,
                                    Type resultType) {
  auto type = llvm::cast<ShapedType>(resultType);
  if (dense.isSplat())
    return dense.reshape(type);
  unsigned bits = dense.getElementType().getIntOrFloatBitWidth();
  if (bits % 8 != 0)
    return {};
  size_t width = bits / 8;
  ArrayRef<int64_t> inShape = dense.getType().getShape();
  int64_t rank = inShape.size(), n = dense.getNumElements();
  SmallVector<int64_t> inStrides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    inStrides[d] = inStrides[d + 1] * inShape[d + 1];
  ArrayRef<char> src = dense.getRawData();
  std::vector<char> dst(n * width);
  SmallVector<int64_t> idx(rank, 0); // result coordinates, row-major order
  for (int64_t i = 0; i < n; ++i) {
    int64_t from = 0;
    for (int64_t d = 0; d < rank; ++d)
      from += idx[d] * inStrides[perm[d]];
    std::memcpy(dst.data() + i * width, src.data() + from * width, width);
    for (int64_t d = rank - 1; d >= 0 && ++idx[d] == type.getDimSize(d); --d)
      idx[d] = 0;
  }
  return DenseElementsAttr::getFromRawBuffer(type, dst);
}

/// A layout attribute's value; absent (as while parsing) means NCHW.
kiln::Layout layoutOf(kiln::LayoutAttr attr) { return attr ? attr.getValue() : kiln::Layout::NCHW; }

LogicalResult checkWindowAttrs(std::optional<Location> loc, size_t spatial,
                               ArrayRef<int64_t> kernel,
                               ArrayRef<int64_t> strides,
                               ArrayRef<int64_t> pads,
                               ArrayRef<int64_t> dilations) {
  if (kernel.size() != spatial || strides.size() != spatial ||
      dilations.size() != spatial || pads.size() != 2 * spatial)
    return failWith(loc, "expects " + llvm::Twine(spatial) +
                             " kernel sizes, strides and dilations and " +
                             llvm::Twine(2 * spatial) + " pads");
  for (size_t i = 0; i < spatial; ++i)
    if (kernel[i] < 1 || strides[i] < 1 || dilations[i] < 1 || pads[i] < 0 ||
        pads[i + spatial] < 0)
      return failWith(loc, "kernel sizes, strides and dilations must be "
                           "positive and pads non-negative");
  return success();
}
} // namespace

//===----------------------------------------------------------------------===//
// ConstantOp
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange, DictionaryAttr attrs,
    OpaqueProperties, RegionRange, SmallVectorImpl<Type> &inferred) {
  Attribute value = attrs ? attrs.get("value") : Attribute();
  auto elements = llvm::dyn_cast_or_null<ElementsAttr>(value);
  if (!elements)
    return failWith(loc, "expects an elements attribute");
  inferred.push_back(elements.getType());
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

//===----------------------------------------------------------------------===//
// CastOp
//===----------------------------------------------------------------------===//

namespace {
/// Whether every value of element type `from` is exactly a value of `to`.
bool holdsExactly(Type to, Type from) {
  if (to == from)
    return true;
  if (from.isInteger(1))
    return to.isIntOrFloat();
  auto fromF = llvm::dyn_cast<FloatType>(from), toF = llvm::dyn_cast<FloatType>(to);
  if (fromF && toF)
    return APFloat::isRepresentableBy(fromF.getFloatSemantics(), toF.getFloatSemantics());
  if (fromF)
    return false;
  auto fromI = llvm::cast<IntegerType>(from);
  unsigned bits = fromI.getWidth() - (fromI.isUnsigned() ? 0 : 1); // magnitude bits
  if (toF)
    return static_cast<unsigned>(APFloat::semanticsPrecision(toF.getFloatSemantics())) >= bits &&
           APFloat::semanticsMaxExponent(toF.getFloatSemantics()) >= static_cast<int>(bits);
  auto toI = llvm::cast<IntegerType>(to);
  if (!fromI.isUnsigned() && toI.isUnsigned())
    return false;
  return toI.getWidth() - (toI.isUnsigned() ? 0 : 1) >= bits;
}

/// One element converted as kiln.cast does.
APInt castElement(const APInt &raw, Type from, Type to) {
  auto fromF = llvm::dyn_cast<FloatType>(from), toF = llvm::dyn_cast<FloatType>(to);
  unsigned toBits = to.getIntOrFloatBitWidth();
  bool fromSigned = !from.isInteger(1) && !from.isUnsignedInteger();
  if (fromF) {
    APFloat f(fromF.getFloatSemantics(), raw);
    if (toF) {
      bool lost;
      f.convert(toF.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      return f.bitcastToAPInt();
    }
    if (to.isInteger(1))
      return APInt(1, f.isZero() ? 0 : 1);
    APSInt i(toBits, to.isUnsignedInteger());
    bool exact;
    f.convertToInteger(i, APFloat::rmTowardZero, &exact);
    return i;
  }
  if (toF) {
    APFloat f(toF.getFloatSemantics());
    f.convertFromAPInt(raw, fromSigned, APFloat::rmNearestTiesToEven);
    return f.bitcastToAPInt();
  }
  if (to.isInteger(1))
    return APInt(1, raw.isZero() ? 0 : 1);
  return fromSigned ? raw.sextOrTrunc(toBits) : raw.zextOrTrunc(toBits);
}

/// The elements of a constant as raw bit patterns, or nullopt.
std::optional<std::vector<APInt>> rawElements(Attribute attr, Type elem, int64_t n) {
  std::vector<APInt> out;
  if (auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(attr)) {
    out.reserve(n);
    if (llvm::isa<FloatType>(elem)) {
      for (APFloat f : dense.getValues<APFloat>())
        out.push_back(f.bitcastToAPInt());
    } else {
      for (APInt i : dense.getValues<APInt>())
        out.push_back(i);
    }
    return out;
  }
  auto res = llvm::dyn_cast_or_null<DenseResourceElementsAttr>(attr);
  if (!res || elem.isInteger(1) || elem.getIntOrFloatBitWidth() % 8)
    return std::nullopt;
  AsmResourceBlob *blob = res.getRawHandle().getBlob();
  unsigned bytes = elem.getIntOrFloatBitWidth() / 8;
  if (!blob || static_cast<int64_t>(blob->getData().size()) != n * bytes)
    return std::nullopt;
  const char *p = blob->getData().data();
  out.reserve(n);
  for (int64_t i = 0; i < n; ++i, p += bytes) {
    uint64_t word = 0;
    std::memcpy(&word, p, bytes);
    out.emplace_back(bytes * 8, word);
  }
  return out;
}
} // namespace

/// The f8E8M0FNU rounding modes of kiln.cast and kiln.narrow.
static LogicalResult verifyRoundMode(Operation *op, StringRef mode) {
  if (roundModeCode(mode) < 0)
    return op->emitOpError("round_mode must be \"up\", \"down\" or \"nearest\", not \"")
           << mode << "\"";
  return success();
}

LogicalResult CastOp::verify() { return verifyRoundMode(*this, getRoundMode()); }

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  auto inType = rankedOf(getInput()), outType = rankedOf(getResult());
  if (inType == outType)
    return getInput();
  Type from = inType.getElementType(), to = outType.getElementType();
  // Narrow types are rounded by kiln.narrow after kiln-widen-narrow-types
  // (saturation and round modes are theirs): nothing folds before.
  if (narrowDtype(from) || narrowDtype(to))
    return {};
  // cast(cast(x, A -> B), B -> C) is cast(x, A -> C) when B holds every A.
  if (auto inner = getInput().getDefiningOp<CastOp>()) {
    Type a = rankedOf(inner.getInput()).getElementType();
    if (holdsExactly(from, a)) {
      if (a == to)
        return inner.getInput();
      getInputMutable().assign(inner.getInput());
      return getResult();
    }
  }
  // Constants convert at compile time; large ones into a resource blob.
  int64_t n = inType.getNumElements();
  auto raw = rawElements(adaptor.getInput(), from, n);
  if (!raw)
    return {};
  std::vector<APInt> converted;
  converted.reserve(n);
  for (const APInt &v : *raw)
    converted.push_back(castElement(v, from, to));
  if (n <= 64 || to.isInteger(1)) {
    if (auto f = llvm::dyn_cast<FloatType>(to)) {
      SmallVector<APFloat> fs;
      for (const APInt &v : converted)
        fs.emplace_back(f.getFloatSemantics(), v);
      return DenseElementsAttr::get(outType, fs);
    }
    return DenseElementsAttr::get(outType, converted);
  }
  unsigned bytes = to.getIntOrFloatBitWidth() / 8;
  std::vector<char> data(n * bytes);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t word = converted[i].getZExtValue();
    std::memcpy(&data[i * bytes], &word, bytes);
  }
  auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(data, bytes);
  return DenseResourceElementsAttr::get(outType, "cast", std::move(blob));
}

LogicalResult NarrowOp::verify() {
  Type format = getFormat(), elem = rankedOf(getInput()).getElementType();
  if (!narrowDtype(format))
    return emitOpError("format must be a narrow type (float8, float4, 4- or 2-bit integer), not ")
           << format;
  if (elem != narrowCarrier(format))
    return emitOpError("carries ") << format << " in " << narrowCarrier(format) << ", not "
                                   << elem;
  return verifyRoundMode(*this, getRoundMode());
}

OpFoldResult NarrowOp::fold(FoldAdaptor adaptor) {
  // Rounding twice the same way is rounding once.
  if (auto inner = getInput().getDefiningOp<NarrowOp>())
    if (inner.getFormat() == getFormat() && inner.getSaturate() == getSaturate() &&
        inner.getRoundMode() == getRoundMode())
      return getInput();
  auto type = rankedOf(getResult());
  Type elem = type.getElementType();
  auto raw = rawElements(adaptor.getInput(), elem, type.getNumElements());
  if (!raw)
    return {};
  std::vector<APInt> out;
  out.reserve(raw->size());
  for (const APInt &v : *raw) {
    double x = elem.isF32() ? APFloat(APFloat::IEEEsingle(), v).convertToDouble()
               : elem.isUnsignedInteger() ? static_cast<double>(v.getZExtValue())
                                          : static_cast<double>(v.getSExtValue());
    double r = roundToNarrow(x, getFormat(), getSaturate(), getRoundMode());
    if (elem.isF32())
      out.push_back(APFloat(static_cast<float>(r)).bitcastToAPInt());
    else
      out.push_back(APInt(8, static_cast<uint64_t>(static_cast<int64_t>(r)), true, true));
  }
  if (elem.isF32()) {
    SmallVector<APFloat> fs;
    for (const APInt &v : out)
      fs.emplace_back(APFloat::IEEEsingle(), v);
    return DenseElementsAttr::get(type, fs);
  }
  return DenseElementsAttr::get(type, out);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult ClipOp::verify() {
  if (getMin().convertToFloat() > getMax().convertToFloat())
    return emitOpError("min must not exceed max");
  return success();
}

#define KILN_BINARY_INFER(OP)                                                  \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> loc, \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &inferred) {        \
    auto l = rankedOf(adaptor.getLhs()), r = rankedOf(adaptor.getRhs());       \
    if (l.getElementType() != r.getElementType())                              \
      return failWith(loc, "operand element types differ");                    \
    SmallVector<int64_t> shape;                                                \
    if (failed(broadcast(l.getShape(), r.getShape(), shape)))                  \
      return failWith(loc, "operand shapes do not broadcast");                 \
    inferred.push_back(RankedTensorType::get(shape, l.getElementType()));     \
    return success();                                                          \
  }
KILN_BINARY_INFER(AddOp)
KILN_BINARY_INFER(SubOp)
KILN_BINARY_INFER(MulOp)
KILN_BINARY_INFER(DivOp)
KILN_BINARY_INFER(PowOp)
KILN_BINARY_INFER(MaxOp)
KILN_BINARY_INFER(MinOp)
KILN_BINARY_INFER(ModOp)
KILN_BINARY_INFER(AndOp)
KILN_BINARY_INFER(OrOp)
KILN_BINARY_INFER(XorOp)
KILN_BINARY_INFER(ShlOp)
KILN_BINARY_INFER(ShrOp)
#undef KILN_BINARY_INFER

LogicalResult CompareOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                          Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto l = rankedOf(adaptor.getLhs()), r = rankedOf(adaptor.getRhs());
  if (l.getElementType() != r.getElementType())
    return failWith(loc, "operand element types differ");
  SmallVector<int64_t> shape;
  if (failed(broadcast(l.getShape(), r.getShape(), shape)))
    return failWith(loc, "operand shapes do not broadcast");
  inferred.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 1)));
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto d = rankedOf(adaptor.getData()), i = rankedOf(adaptor.getIndices());
  int64_t axis = static_cast<int64_t>(adaptor.getAxis());
  if (axis < 0 || axis >= d.getRank())
    return failWith(loc, "axis " + llvm::Twine(axis) + " is out of range");
  SmallVector<int64_t> shape(d.getShape().take_front(axis));
  llvm::append_range(shape, i.getShape());
  llvm::append_range(shape, d.getShape().drop_front(axis + 1));
  inferred.push_back(RankedTensorType::get(shape, d.getElementType()));
  return success();
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                 Adaptor adaptor,
                                                 SmallVectorImpl<Type> &inferred) {
  auto d = rankedOf(adaptor.getData()), i = rankedOf(adaptor.getIndices());
  int64_t axis = static_cast<int64_t>(adaptor.getAxis());
  if (axis < 0 || axis >= d.getRank())
    return failWith(loc, "axis " + llvm::Twine(axis) + " is out of range");
  if (i.getRank() != d.getRank())
    return failWith(loc, "indices and data differ in rank");
  for (int64_t k = 0; k < d.getRank(); ++k)
    if (k != axis && i.getDimSize(k) > d.getDimSize(k))
      return failWith(loc, "indices exceed data in dimension " + llvm::Twine(k));
  inferred.push_back(RankedTensorType::get(i.getShape(), d.getElementType()));
  return success();
}

/// The reduction of a scatter: none (also when absent), add, mul, max or min.
/// (Read as the attribute: the adaptor's default-valued getter needs an
/// attribute dictionary that is not empty.)
static bool isScatterReduction(StringAttr a) {
  StringRef r = a ? a.getValue() : "none";
  return r == "none" || r == "add" || r == "mul" || r == "max" || r == "min";
}

LogicalResult ScatterElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                  Adaptor adaptor,
                                                  SmallVectorImpl<Type> &inferred) {
  auto d = rankedOf(adaptor.getData()), i = rankedOf(adaptor.getIndices()),
       u = rankedOf(adaptor.getUpdates());
  int64_t axis = static_cast<int64_t>(adaptor.getAxis());
  if (axis < 0 || axis >= d.getRank())
    return failWith(loc, "axis " + llvm::Twine(axis) + " is out of range");
  if (i.getRank() != d.getRank())
    return failWith(loc, "indices and data differ in rank");
  if (u.getShape() != i.getShape() || u.getElementType() != d.getElementType())
    return failWith(loc, "updates must have the indices' shape and the data's element type");
  for (int64_t k = 0; k < d.getRank(); ++k)
    if (k != axis && i.getDimSize(k) > d.getDimSize(k))
      return failWith(loc, "indices exceed data in dimension " + llvm::Twine(k));
  if (!isScatterReduction(adaptor.getReductionAttr()))
    return failWith(loc, "unknown reduction '" + adaptor.getReductionAttr().getValue() + "'");
  inferred.push_back(d);
  return success();
}

LogicalResult ScatterNDOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto d = rankedOf(adaptor.getData()), i = rankedOf(adaptor.getIndices()),
       u = rankedOf(adaptor.getUpdates());
  if (i.getRank() < 1)
    return failWith(loc, "indices need at least one dimension");
  int64_t q = i.getDimSize(i.getRank() - 1);
  if (q < 1 || q > d.getRank())
    return failWith(loc, "index tuples of " + llvm::Twine(q) + " entries for data of rank " +
                             llvm::Twine(d.getRank()));
  SmallVector<int64_t> want(i.getShape().drop_back());
  want.append(d.getShape().begin() + q, d.getShape().end());
  if (u.getShape() != ArrayRef<int64_t>(want) || u.getElementType() != d.getElementType())
    return failWith(loc, "updates must have shape indices.shape[:-1] + data.shape[q:] and the "
                         "data's element type");
  if (!isScatterReduction(adaptor.getReductionAttr()))
    return failWith(loc, "unknown reduction '" + adaptor.getReductionAttr().getValue() + "'");
  inferred.push_back(d);
  return success();
}

LogicalResult TopKIndicesOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  auto in = rankedOf(adaptor.getInput());
  auto axisAttr = adaptor.getAxisAttr(), kAttr = adaptor.getKAttr();
  if (!axisAttr || !kAttr)
    return failWith(loc, "needs axis and k");
  int64_t axis = axisAttr.getInt(), k = kAttr.getInt();
  if (axis < 0 || axis >= in.getRank())
    return failWith(loc, "axis " + llvm::Twine(axis) + " is out of range");
  if (k < 0 || k > in.getDimSize(axis))
    return failWith(loc, "k = " + llvm::Twine(k) + " is not within the axis' size " +
                             llvm::Twine(in.getDimSize(axis)));
  SmallVector<int64_t> shape(in.getShape());
  shape[axis] = k;
  inferred.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult NonMaxSuppressionOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                                    Adaptor adaptor,
                                                    SmallVectorImpl<Type> &inferred) {
  auto boxes = rankedOf(adaptor.getBoxes()), scores = rankedOf(adaptor.getScores());
  if (boxes.getRank() != 3 || boxes.getDimSize(2) != 4)
    return failWith(loc, "boxes must be [batches, boxes, 4]");
  if (scores.getRank() != 3 || scores.getDimSize(0) != boxes.getDimSize(0) ||
      scores.getDimSize(2) != boxes.getDimSize(1))
    return failWith(loc, "scores must be [batches, classes, boxes] for the boxes' batches and "
                         "boxes");
  for (Value v : {adaptor.getCount(), adaptor.getMaxPerClass(), adaptor.getIouThreshold(),
                  adaptor.getScoreThreshold()})
    if (rankedOf(v).getNumElements() != 1)
      return failWith(loc, "the count, the maximum and the thresholds must be single values");
  inferred.push_back(RankedTensorType::get(scores.getShape(), IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult RoiAlignOp::verify() {
  auto in = rankedOf(getInput()), rois = rankedOf(getRois());
  auto batch = rankedOf(getBatchIndices()), out = rankedOf(getResult());
  if (in.getRank() != 4)
    return emitOpError("input must be [N, C, H, W]");
  if (rois.getRank() != 2 || rois.getDimSize(1) != 4)
    return emitOpError("rois must be [R, 4]");
  if (batch.getRank() != 1 || batch.getDimSize(0) != rois.getDimSize(0))
    return emitOpError("batch_indices must be [R] for the rois' R");
  if (out.getRank() != 4 || out.getDimSize(0) != rois.getDimSize(0) ||
      out.getDimSize(1) != in.getDimSize(1) || out.getDimSize(2) < 1 || out.getDimSize(3) < 1)
    return emitOpError("result must be [R, C, H', W'] for the rois' R and the input's C");
  if (getSamplingRatioAttr().getInt() < 0) // (I64Attr reads as unsigned)
    return emitOpError("sampling_ratio must be 0 or more");
  return success();
}

LogicalResult ArgReduceOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto in = rankedOf(adaptor.getInput());
  int64_t axis = static_cast<int64_t>(adaptor.getAxis());
  if (axis < 0 || axis >= in.getRank())
    return failWith(loc, "axis " + llvm::Twine(axis) + " is out of range");
  if (in.getDimSize(axis) == 0)
    return failWith(loc, "reduces an empty dimension");
  SmallVector<int64_t> shape(in.getShape());
  if (adaptor.getKeepdims())
    shape[axis] = 1;
  else
    shape.erase(shape.begin() + axis);
  inferred.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult CumSumOp::verify() {
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0 || axis >= rankedOf(getInput()).getRank())
    return emitOpError("axis ") << axis << " is out of range";
  return success();
}

LogicalResult ExpandOp::verify() {
  auto in = rankedOf(getInput()), out = rankedOf(getResult());
  if (in.getElementType() != out.getElementType())
    return emitOpError("result element type differs from the input's");
  SmallVector<int64_t> shape;
  if (failed(broadcast(in.getShape(), out.getShape(), shape)) || shape != out.getShape())
    return emitOpError("input shape does not broadcast to the result shape");
  return success();
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto c = rankedOf(adaptor.getCondition()), l = rankedOf(adaptor.getLhs()),
       r = rankedOf(adaptor.getRhs());
  SmallVector<int64_t> lr, shape;
  if (l.getElementType() != r.getElementType())
    return failWith(loc, "operand element types differ");
  if (failed(broadcast(l.getShape(), r.getShape(), lr)) ||
      failed(broadcast(c.getShape(), lr, shape)))
    return failWith(loc, "operand shapes do not broadcast");
  inferred.push_back(RankedTensorType::get(shape, l.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// ConvOp
//===----------------------------------------------------------------------===//

/// The result shape of a 2-D convolution (kiln.conv, kiln.conv_integer) of
/// `in` by OIHW `w` in `layout`, or a failure at `loc`.
static FailureOr<SmallVector<int64_t>>
convResultShape(std::optional<Location> loc, RankedTensorType in, RankedTensorType w,
                ArrayRef<int64_t> strides, ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                kiln::Layout layout) {
  if (in.getRank() != 4 || w.getRank() != 4)
    return failWith(loc, "expects a rank-4 input and weight");
  ArrayRef<int64_t> k = w.getShape().drop_front(2);
  if (failed(checkWindowAttrs(loc, 2, k, strides, pads, dilations)))
    return failure();
  bool nhwc = layout == kiln::Layout::NHWC;
  if (failed(checkWindowFits(loc, in, in.getShape().slice(nhwc ? 1 : 2, 2), k, dilations, pads)))
    return failure();
  SmallVector<int64_t> shape{in.getDimSize(0)};
  if (!nhwc)
    shape.push_back(w.getDimSize(0));
  for (int i = 0; i < 2; ++i)
    shape.push_back(windowOut(in.getDimSize(nhwc ? 1 + i : 2 + i), k[i], strides[i],
                              dilations[i], pads[i], pads[2 + i], false));
  if (nhwc)
    shape.push_back(w.getDimSize(0));
  return shape;
}

/// The group checks of a convolution (kiln.conv, kiln.conv_integer).
static LogicalResult verifyConvGroups(Operation *op, RankedTensorType in, RankedTensorType w,
                                      int64_t g, kiln::Layout layout) {
  int64_t channels = in.getDimSize(layout == kiln::Layout::NHWC ? 3 : 1);
  if (g < 1 || channels % g || w.getDimSize(0) % g)
    return op->emitOpError("group ") << g << " must divide the input channels ("
                                     << channels << ") and output channels ("
                                     << w.getDimSize(0) << ")";
  if (w.getDimSize(1) * g != channels)
    return op->emitOpError("weight has ")
           << w.getDimSize(1) << " input channels per group; the input has "
           << channels << " channels in " << g << " groups";
  return success();
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto in = rankedOf(adaptor.getInput()), w = rankedOf(adaptor.getWeight());
  if (in.getElementType() != w.getElementType() ||
      (adaptor.getBias() &&
       rankedOf(adaptor.getBias()).getElementType() != in.getElementType()))
    return failWith(loc, "operand element types differ");
  auto shape = convResultShape(loc, in, w, adaptor.getStrides(), adaptor.getPads(),
                               adaptor.getDilations(), layoutOf(adaptor.getLayoutAttr()));
  if (failed(shape))
    return failure();
  inferred.push_back(RankedTensorType::get(*shape, in.getElementType()));
  return success();
}

LogicalResult ConvOp::verify() {
  auto in = rankedOf(getInput()), w = rankedOf(getWeight());
  if (failed(verifyConvGroups(*this, in, w, static_cast<int64_t>(getGroup()), getLayout())))
    return failure();
  if (getBias() && (rankedOf(getBias()).getRank() != 1 ||
                    rankedOf(getBias()).getDimSize(0) != w.getDimSize(0)))
    return emitOpError("bias must be a vector of ") << w.getDimSize(0) << " values";
  return success();
}

//===----------------------------------------------------------------------===//
// GemmOp, MatMulOp
//===----------------------------------------------------------------------===//

LogicalResult GemmOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  auto a = rankedOf(adaptor.getA()), b = rankedOf(adaptor.getB());
  if (a.getRank() != 2 || b.getRank() != 2)
    return failWith(loc, "expects matrices");
  if (a.getElementType() != b.getElementType() ||
      (adaptor.getC() && rankedOf(adaptor.getC()).getElementType() != a.getElementType()))
    return failWith(loc, "operand element types differ");
  int64_t m = adaptor.getTransA() ? a.getDimSize(1) : a.getDimSize(0);
  int64_t n = adaptor.getTransB() ? b.getDimSize(0) : b.getDimSize(1);
  inferred.push_back(RankedTensorType::get({m, n}, a.getElementType()));
  return success();
}

LogicalResult GemmOp::verify() {
  auto a = rankedOf(getA()), b = rankedOf(getB());
  int64_t ka = getTransA() ? a.getDimSize(0) : a.getDimSize(1);
  int64_t kb = getTransB() ? b.getDimSize(1) : b.getDimSize(0);
  if (ka != kb)
    return emitOpError("inner dimensions differ: ") << ka << " vs " << kb;
  if (getC()) {
    SmallVector<int64_t> shape;
    auto out = rankedOf(getResult());
    if (rankedOf(getC()).getRank() > 2 ||
        failed(broadcast(rankedOf(getC()).getShape(), out.getShape(), shape)) ||
        ArrayRef<int64_t>(shape) != out.getShape())
      return emitOpError("C does not broadcast to the result shape");
  }
  return success();
}

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  SmallVector<int64_t> a(rankedOf(adaptor.getLhs()).getShape());
  SmallVector<int64_t> b(rankedOf(adaptor.getRhs()).getShape());
  if (a.empty() || b.empty())
    return failWith(loc, "expects operands of rank 1 or more");
  if (rankedOf(adaptor.getLhs()).getElementType() != rankedOf(adaptor.getRhs()).getElementType())
    return failWith(loc, "operand element types differ");
  bool vecA = a.size() == 1, vecB = b.size() == 1;
  if (vecA)
    a.insert(a.begin(), 1);
  if (vecB)
    b.push_back(1);
  if (a.back() != b[b.size() - 2])
    return failWith(loc, "inner dimensions differ: " + llvm::Twine(a.back()) +
                             " vs " + llvm::Twine(b[b.size() - 2]));
  SmallVector<int64_t> batch;
  if (failed(broadcast(ArrayRef<int64_t>(a).drop_back(2),
                       ArrayRef<int64_t>(b).drop_back(2), batch)))
    return failWith(loc, "batch dimensions do not broadcast");
  if (!vecA)
    batch.push_back(a[a.size() - 2]);
  if (!vecB)
    batch.push_back(b.back());
  inferred.push_back(RankedTensorType::get(
      batch, rankedOf(adaptor.getLhs()).getElementType()));
  return success();
}

LogicalResult MatMulIntegerOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &inferred) {
  auto a = rankedOf(adaptor.getLhs()), b = rankedOf(adaptor.getRhs());
  if (a.getRank() < 2 || b.getRank() != 2)
    return failWith(loc, "expects a lhs of rank 2 or more and a 2-D rhs");
  if (a.getShape().back() != b.getDimSize(0))
    return failWith(loc, "inner dimensions differ: " + llvm::Twine(a.getShape().back()) +
                             " vs " + llvm::Twine(b.getDimSize(0)));
  if (rankedOf(adaptor.getLhsZero()).getRank() != 0 ||
      rankedOf(adaptor.getRhsZero()).getRank() != 0)
    return failWith(loc, "the zero points must be scalars");
  if (rankedOf(adaptor.getLhsZero()).getElementType() != a.getElementType() ||
      rankedOf(adaptor.getRhsZero()).getElementType() != b.getElementType())
    return failWith(loc, "a zero point must have its operand's element type");
  SmallVector<int64_t> shape(a.getShape());
  shape.back() = b.getDimSize(1);
  inferred.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 32)));
  return success();
}

LogicalResult MatMulNBitsOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  auto a = rankedOf(adaptor.getLhs()), w = rankedOf(adaptor.getWeight());
  auto s = rankedOf(adaptor.getScale()), z = rankedOf(adaptor.getZero());
  if (a.getRank() < 2 || w.getRank() != 2)
    return failWith(loc, "expects a lhs of rank 2 or more and a 2-D weight");
  int64_t N = w.getDimSize(0), K = w.getDimSize(1), block = adaptor.getBlockSize();
  if (a.getShape().back() != K)
    return failWith(loc, "the lhs's rows have " + llvm::Twine(a.getShape().back()) +
                             " values; the weight's columns " + llvm::Twine(K));
  if (block <= 0)
    return failWith(loc, "block_size must be positive");
  if (adaptor.getBits() < 2 || adaptor.getBits() > 8)
    return failWith(loc, "bits must be 2 to 8");
  int64_t blocks = (K + block - 1) / block;
  if (s.getShape() != ArrayRef<int64_t>{N, blocks} || z.getShape() != s.getShape())
    return failWith(loc, "the scale and zero point must be " + llvm::Twine(N) + "x" +
                             llvm::Twine(blocks) + " (a value per column and block)");
  if (z.getElementType() != w.getElementType())
    return failWith(loc, "the zero point must have the weight's element type");
  SmallVector<int64_t> shape(a.getShape());
  shape.back() = N;
  inferred.push_back(RankedTensorType::get(shape, Float32Type::get(ctx)));
  return success();
}

LogicalResult ConvIntegerOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &inferred) {
  auto in = rankedOf(adaptor.getInput()), w = rankedOf(adaptor.getWeight());
  auto xz = rankedOf(adaptor.getInputZero()), wz = rankedOf(adaptor.getWeightZero());
  if (xz.getRank() != 0 || wz.getRank() != 0)
    return failWith(loc, "the zero points must be scalars");
  if (xz.getElementType() != in.getElementType() || wz.getElementType() != w.getElementType())
    return failWith(loc, "a zero point must have its operand's element type");
  auto shape = convResultShape(loc, in, w, adaptor.getStrides(), adaptor.getPads(),
                               adaptor.getDilations(), layoutOf(adaptor.getLayoutAttr()));
  if (failed(shape))
    return failure();
  inferred.push_back(RankedTensorType::get(*shape, IntegerType::get(ctx, 32)));
  return success();
}

LogicalResult ConvIntegerOp::verify() {
  return verifyConvGroups(*this, rankedOf(getInput()), rankedOf(getWeight()),
                          static_cast<int64_t>(getGroup()), getLayout());
}

//===----------------------------------------------------------------------===//
// BatchNormOp, pooling, softmax
//===----------------------------------------------------------------------===//

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location>,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult BatchNormOp::verify() {
  auto in = rankedOf(getInput());
  if (in.getRank() < 2)
    return emitOpError("expects an input of rank 2 or more");
  for (Value v : {getScale(), getBias(), getMean(), getVariance()})
    if (rankedOf(v).getRank() != 1 ||
        rankedOf(v).getDimSize(0) != in.getDimSize(1))
      return emitOpError("scale, bias, mean and variance must be vectors of ")
             << in.getDimSize(1) << " values";
  return success();
}

static LogicalResult inferPool(std::optional<Location> loc, Value input,
                               ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                               ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                               bool ceilMode, kiln::Layout layout,
                               SmallVectorImpl<Type> &inferred) {
  auto in = rankedOf(input);
  if (in.getRank() != 4)
    return failWith(loc, "expects a rank-4 input");
  if (failed(checkWindowAttrs(loc, 2, kernel, strides, pads, dilations)))
    return failure();
  // (a window larger than the padded input gives an empty result, as in
  // onnxruntime -- with ceil mode one window if it falls short by less than
  // a stride; the canonicalizer makes an empty one a constant)
  bool nhwc = layout == kiln::Layout::NHWC;
  SmallVector<int64_t> shape{in.getDimSize(0)};
  if (!nhwc)
    shape.push_back(in.getDimSize(1));
  for (int i = 0; i < 2; ++i)
    shape.push_back(windowOut(in.getDimSize(nhwc ? 1 + i : 2 + i), kernel[i], strides[i],
                              dilations[i], pads[i], pads[2 + i], ceilMode));
  if (nhwc)
    shape.push_back(in.getDimSize(3));
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

#define KILN_POOL(OP)                                                          \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> loc, \
                                     Adaptor a, SmallVectorImpl<Type> &inf) {  \
    return inferPool(loc, a.getInput(), a.getKernelShape(), a.getStrides(),    \
                     a.getPads(), a.getDilations(), a.getCeilMode(),           \
                     layoutOf(a.getLayoutAttr()), inf);                        \
  }
KILN_POOL(MaxPoolOp)
KILN_POOL(AvgPoolOp)
#undef KILN_POOL

LogicalResult GlobalAvgPoolOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &inferred) {
  auto in = rankedOf(adaptor.getInput());
  if (in.getRank() < 3)
    return failWith(loc, "expects an input of rank 3 or more");
  bool nhwc = layoutOf(adaptor.getLayoutAttr()) == kiln::Layout::NHWC;
  if (nhwc && in.getRank() != 4)
    return failWith(loc, "expects a rank-4 input with layout nhwc");
  SmallVector<int64_t> shape(in.getShape());
  for (size_t i = nhwc ? 1 : 2; i < (nhwc ? 3 : shape.size()); ++i)
    shape[i] = 1;
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult GlobalAvgPoolOp::verify() { return success(); }

LogicalResult SoftmaxOp::verify() {
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0 || axis >= rankedOf(getInput()).getRank())
    return emitOpError("axis ") << axis << " is out of range";
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions, layer norm, attention
//===----------------------------------------------------------------------===//

static LogicalResult inferReduce(std::optional<Location> loc, Value input,
                                 ArrayRef<int64_t> axes, bool keepdims,
                                 SmallVectorImpl<Type> &inferred) {
  auto in = rankedOf(input);
  int64_t prev = -1;
  for (int64_t a : axes) {
    if (a < 0 || a >= in.getRank())
      return failWith(loc, "axis " + llvm::Twine(a) + " is out of range for rank " +
                               llvm::Twine(in.getRank()));
    if (a <= prev)
      return failWith(loc, "axes must be sorted and distinct");
    prev = a;
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < in.getRank(); ++d) {
    if (!llvm::is_contained(axes, d))
      shape.push_back(in.getDimSize(d));
    else if (keepdims)
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

#define KILN_REDUCE(OP)                                                        \
  LogicalResult OP::inferReturnTypes(MLIRContext *, std::optional<Location> loc, \
                                     Adaptor a, SmallVectorImpl<Type> &inf) {  \
    return inferReduce(loc, a.getInput(), a.getAxes(), a.getKeepdims(), inf);  \
  }
KILN_REDUCE(ReduceSumOp)
KILN_REDUCE(ReduceMeanOp)
KILN_REDUCE(ReduceMaxOp)
KILN_REDUCE(ReduceMinOp)
KILN_REDUCE(ReduceProdOp)
#undef KILN_REDUCE

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  inferred.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult LayerNormOp::verify() {
  auto in = rankedOf(getInput());
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0 || axis >= in.getRank())
    return emitOpError("axis ") << axis << " is out of range for rank " << in.getRank();
  int64_t normalized = 1;
  for (int64_t d = axis; d < in.getRank(); ++d)
    normalized *= in.getDimSize(d);
  for (Value v : {getScale(), getBias()}) {
    if (!v)
      continue;
    auto t = rankedOf(v);
    // Right-aligned, the parameter may not reach into [0, axis) except with
    // size-1 dimensions, and holds one value or one per normalized element.
    int64_t lead = t.getRank() - (in.getRank() - axis);
    for (int64_t d = 0; d < lead; ++d)
      if (t.getDimSize(d) != 1)
        return emitOpError("scale and bias must broadcast over the normalized "
                           "dimensions only");
    if (t.getNumElements() != 1 && t.getNumElements() != normalized)
      return emitOpError("scale and bias must hold 1 or ")
             << normalized << " values, not " << t.getNumElements();
    if (t.getNumElements() == normalized && lead < 0)
      return emitOpError("scale and bias must have the normalized shape");
    if (t.getNumElements() == normalized &&
        t.getShape().take_back(in.getRank() - axis) != in.getShape().drop_front(axis))
      return emitOpError("scale and bias must have the normalized shape");
  }
  if (getEpsilon().convertToFloat() < 0)
    return emitOpError("epsilon must not be negative");
  return success();
}

LogicalResult AttentionOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto q = rankedOf(adaptor.getQuery()), v = rankedOf(adaptor.getValue());
  if (q.getRank() < 2 || v.getRank() != q.getRank())
    return failWith(loc, "query and value must have the same rank, 2 or more");
  SmallVector<int64_t> shape(q.getShape());
  shape.back() = v.getShape().back();
  inferred.push_back(RankedTensorType::get(shape, q.getElementType()));
  return success();
}

LogicalResult AttentionOp::verify() {
  auto q = rankedOf(getQuery()), k = rankedOf(getKey()), v = rankedOf(getValue());
  int64_t r = q.getRank();
  if (k.getRank() != r)
    return emitOpError("query, key and value must have the same rank");
  if (q.getShape().drop_back(2) != k.getShape().drop_back(2) ||
      q.getShape().drop_back(2) != v.getShape().drop_back(2))
    return emitOpError("query, key and value differ in their leading dimensions");
  if (q.getDimSize(r - 1) != k.getDimSize(r - 1))
    return emitOpError("query and key differ in head size: ")
           << q.getDimSize(r - 1) << " vs " << k.getDimSize(r - 1);
  if (k.getDimSize(r - 2) != v.getDimSize(r - 2))
    return emitOpError("key and value differ in sequence length: ")
           << k.getDimSize(r - 2) << " vs " << v.getDimSize(r - 2);
  if (getMask()) {
    SmallVector<int64_t> scores(q.getShape());
    scores.back() = k.getDimSize(r - 2);
    SmallVector<int64_t> shape;
    if (failed(broadcast(rankedOf(getMask()).getShape(), scores, shape)) ||
        ArrayRef<int64_t>(shape) != ArrayRef<int64_t>(scores))
      return emitOpError("mask does not broadcast to the score shape");
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  if (rankedOf(getInput()).getNumElements() !=
      rankedOf(getResult()).getNumElements())
    return emitOpError("changes the number of elements from ")
           << rankedOf(getInput()).getNumElements() << " to "
           << rankedOf(getResult()).getNumElements();
  if (rankedOf(getInput()).getElementType() !=
      rankedOf(getResult()).getElementType())
    return emitOpError("changes the element type");
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // reshape(reshape(x)) -> reshape(x)
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  if (auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(llvm::cast<ShapedType>(getType()));
  return reshapedResource(adaptor.getInput(), llvm::cast<RankedTensorType>(getType()));
}

// f32 arithmetic over constants (a QDQ model's dequantized weights).
OpFoldResult AddOp::fold(FoldAdaptor a) {
  return foldF32Binary(*this, a.getLhs(), a.getRhs(), [](float x, float y) { return x + y; });
}
OpFoldResult SubOp::fold(FoldAdaptor a) {
  return foldF32Binary(*this, a.getLhs(), a.getRhs(), [](float x, float y) { return x - y; });
}
OpFoldResult MulOp::fold(FoldAdaptor a) {
  return foldF32Binary(*this, a.getLhs(), a.getRhs(), [](float x, float y) { return x * y; });
}
OpFoldResult DivOp::fold(FoldAdaptor a) {
  return foldF32Binary(*this, a.getLhs(), a.getRhs(), [](float x, float y) { return x / y; });
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  auto in = rankedOf(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  if (static_cast<int64_t>(perm.size()) != in.getRank())
    return failWith(loc, "perm must have one entry per dimension");
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank() || seen[p])
      return failWith(loc, "perm must be a permutation of the dimensions");
    seen[p] = true;
    shape.push_back(in.getDimSize(p));
  }
  inferred.push_back(RankedTensorType::get(shape, in.getElementType()));
  return success();
}

LogicalResult TransposeOp::verify() { return success(); }

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  // A constant's transpose is a constant.
  if (auto dense = llvm::dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    if (auto folded = transposeElements(dense, getPerm(), getType()))
      return folded;
  // transpose(transpose(x, p), q) -> transpose(x, p[q])
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    SmallVector<int64_t> perm;
    for (int64_t q : getPerm())
      perm.push_back(inner.getPerm()[q]);
    getInputMutable().assign(inner.getInput());
    setPerm(perm);
    if (!llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
      return getResult();
  }
  for (auto [i, p] : llvm::enumerate(getPerm()))
    if (static_cast<int64_t>(i) != p)
      return {};
  return getInput();
}

LogicalResult TransposeOp::canonicalize(TransposeOp op, PatternRewriter &rewriter) {
  // Dimensions of size > 1 in their original order: only unit dimensions
  // move, so the row-major element order is unchanged.
  auto in = rankedOf(op.getInput());
  int64_t last = -1;
  bool ordered = true;
  for (int64_t p : op.getPerm()) {
    if (in.getDimSize(p) == 1)
      continue;
    if (p < last)
      ordered = false;
    last = p;
  }
  if (ordered) {
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), op.getInput());
    return success();
  }
  // A chain of transposes and reshapes that puts every element back where
  // it was: a reshape of the chain's start. (An NHWC conv's result taken
  // back to NCHW, reshaped to [N, C, H*W] and transposed to [N, H*W, C] --
  // a ViT's patch embedding -- is its NHWC buffer as it lies.)
  auto view = stridedViewOf(op.getResult());
  if (!view || !isRowMajorOf(*view, rankedOf(op.getResult()).getShape()))
    return failure();
  rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), view->base);
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto in = rankedOf(adaptor.getInput());
  ArrayRef<int64_t> sizes = adaptor.getSizes();
  if (static_cast<int64_t>(sizes.size()) != in.getRank() ||
      static_cast<int64_t>(adaptor.getOffsets().size()) != in.getRank() ||
      static_cast<int64_t>(adaptor.getStrides().size()) != in.getRank())
    return failWith(loc, "expects one offset, size and stride per dimension");
  inferred.push_back(RankedTensorType::get(sizes, in.getElementType()));
  return success();
}

LogicalResult SliceOp::verify() {
  auto in = rankedOf(getInput());
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t off = getOffsets()[d], size = getSizes()[d], stride = getStrides()[d];
    if (size < 0 || stride == 0)
      return emitOpError("dimension ") << d << ": sizes must be non-negative and strides "
                                       << "non-zero";
    int64_t last = off + (size - 1) * stride, n = in.getDimSize(d);
    if (size > 0 && (off < 0 || off >= n || last < 0 || last >= n))
      return emitOpError("dimension ") << d << ": the slice reads outside the input's "
                                       << n << " elements";
  }
  return success();
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType() &&
      llvm::all_of(getOffsets(), [](int64_t o) { return o == 0; }) &&
      llvm::all_of(getStrides(), [](int64_t s) { return s == 1; }))
    return getInput();
  return {};
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  if (adaptor.getInputs().empty())
    return failWith(loc, "expects at least one input");
  auto first = rankedOf(adaptor.getInputs().front());
  int64_t axis = static_cast<int64_t>(adaptor.getAxis());
  if (axis < 0 || axis >= first.getRank())
    return failWith(loc, "axis " + llvm::Twine(axis) + " is out of range");
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (Value v : adaptor.getInputs()) {
    auto t = rankedOf(v);
    if (t.getRank() != first.getRank() ||
        t.getElementType() != first.getElementType())
      return failWith(loc, "inputs differ in rank or element type");
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != axis && t.getDimSize(d) != first.getDimSize(d))
        return failWith(loc, "inputs differ in dimension " + llvm::Twine(d));
    shape[axis] += t.getDimSize(axis);
  }
  inferred.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult ConcatOp::verify() { return success(); }

//===----------------------------------------------------------------------===//
// FusionOp
//===----------------------------------------------------------------------===//

LogicalResult FusionOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body has ") << body.getNumArguments()
                                    << " arguments for " << getInputs().size()
                                    << " inputs";
  for (auto [arg, in] : llvm::zip(body.getArguments(), getInputs()))
    if (arg.getType() != in.getType())
      return emitOpError("body argument type ")
             << arg.getType() << " differs from input type " << in.getType();
  auto yield = llvm::dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end with kiln.yield");
  if (yield.getValue().getType() != getResult().getType())
    return emitOpError("yields ") << yield.getValue().getType()
                                  << " but the result is " << getResult().getType();
  return success();
}

#define GET_OP_CLASSES
#include "dialects/kiln/KilnOps.cpp.inc"
