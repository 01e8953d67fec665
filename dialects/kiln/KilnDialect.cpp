//===- KilnDialect.cpp - kiln dialect registration -------------------------===//
#include "dialects/kiln/KilnDialect.h"

using namespace mlir;
using namespace kiln;

#include "dialects/kiln/KilnDialect.cpp.inc"
#include "dialects/kiln/KilnEnums.cpp.inc"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <type_traits>

#define GET_ATTRDEF_CLASSES
#include "dialects/kiln/KilnAttrs.cpp.inc"

void KilnDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/kiln/KilnAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/kiln/KilnOps.cpp.inc"
      >();
}

LogicalResult KilnDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  // Each helper knows its attribute's name and kind of value.
  std::optional<bool> ok;
  auto check = [&](auto helper) {
    if (!ok && name == helper.getNameStr())
      ok = helper.isAttrPresent(op);
  };
  check(getPrecisionAttrHelper());
  check(getRecomputedAttrHelper());
  check(getNameAttrHelper());
  check(getSymbolsAttrHelper());
  check(getWireTypeAttrHelper());
  check(getSymbolInputAttrHelper());
  check(getSymbolNamesAttrHelper());
  check(getSymbolBoundsAttrHelper());
  check(getSymbolDerivedAttrHelper());
  check(getSymbolPinsAttrHelper());
  check(getAxisSymbolAttrHelper());
  check(getSymbolIndicesAttrHelper());
  check(getUserIndicesAttrHelper());
  check(getMaskedAxesAttrHelper());
  check(getPinsSymbolAttrHelper());
  check(getRepackedAttrHelper());
  check(getInt8RangeAttrHelper());
  check(getWorkgroupsAttrHelper());
  check(getLiveLaunchAttrHelper());
  check(getSizeArgsAttrHelper());
  if (!ok)
    return op->emitOpError() << "has '" << name
                             << "', which the kiln dialect does not declare (KilnDialect.td)";
  if (!*ok)
    return op->emitOpError() << "'" << name << "' holds the wrong kind of value: "
                             << attr.getValue();
  return success();
}

namespace {
/// An op whose results all have zero elements computes nothing: its results
/// are empty constants (a batch-0 convolution, a product with an empty side,
/// a window larger than its padded input). Kernels then never see a loop of
/// zero trips, nor a tile count divided by zero.
struct EmptyResultsAreConstants : RewritePattern {
  explicit EmptyResultsAreConstants(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!llvm::isa_and_present<KilnDialect>(op->getDialect()) || isa<ConstantOp>(op) ||
        op->getNumResults() == 0 || op->hasTrait<OpTrait::IsTerminator>())
      return failure();
    SmallVector<RankedTensorType> types;
    for (Type t : op->getResultTypes()) {
      auto rt = llvm::dyn_cast<RankedTensorType>(t);
      if (!rt || !rt.hasStaticShape() || rt.getNumElements() != 0)
        return failure();
      types.push_back(rt);
    }
    SmallVector<Value> empties;
    for (RankedTensorType t : types)
      empties.push_back(ConstantOp::create(rewriter, op->getLoc(),
                                           DenseElementsAttr::get(t, ArrayRef<Attribute>())));
    rewriter.replaceOp(op, empties);
    return success();
  }
};

/// A sum or product over nothing is its identity (0, 1) everywhere: no
/// kernel reads an empty input.
template <typename ReduceOp> struct EmptySumsAreIdentities : OpRewritePattern<ReduceOp> {
  using OpRewritePattern<ReduceOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceOp op, PatternRewriter &rewriter) const override {
    auto in = llvm::dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    auto out = llvm::dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!in || !out || !in.hasStaticShape() || !out.hasStaticShape() ||
        in.getNumElements() != 0 || out.getNumElements() == 0)
      return failure();
    double identity = std::is_same_v<ReduceOp, ReduceProdOp> ? 1.0 : 0.0;
    Type e = out.getElementType();
    Attribute v;
    if (auto ft = llvm::dyn_cast<FloatType>(e))
      v = FloatAttr::get(ft, identity);
    else if (auto it = llvm::dyn_cast<IntegerType>(e))
      v = IntegerAttr::get(it, static_cast<int64_t>(identity));
    else
      return failure();
    rewriter.replaceOpWithNewOp<ConstantOp>(op, DenseElementsAttr::get(out, v));
    return success();
  }
};
} // namespace

void KilnDialect::getCanonicalizationPatterns(RewritePatternSet &results) const {
  results.add<EmptyResultsAreConstants, EmptySumsAreIdentities<ReduceSumOp>,
              EmptySumsAreIdentities<ReduceProdOp>>(getContext());
}

Operation *KilnDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = llvm::dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

bool kiln::isElementwise(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, ReluOp, SigmoidOp,
             TanhOp, ClipOp, ExpOp, LogOp, SqrtOp, ErfOp, NegOp, ReciprocalOp,
             AbsOp, SiluOp, HardSwishOp, GeluOp, HardSigmoidOp, LeakyReluOp, WhereOp,
             CastOp, SignOp, NotOp, SinOp, CosOp, TanOp, AsinOp, AcosOp, AtanOp, SinhOp,
             CoshOp, AsinhOp, AcoshOp, AtanhOp, FloorOp, CeilOp, RoundOp, Log1pOp, IsNanOp,
             IsInfOp, ExpandOp, ModOp, AndOp, OrOp, XorOp, ShlOp, ShrOp, CompareOp, NarrowOp>(op);
}

kiln::StridedView kiln::rowMajorView(Value v) {
  ArrayRef<int64_t> shape = llvm::cast<RankedTensorType>(v.getType()).getShape();
  StridedView view;
  view.base = v;
  view.strides.assign(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    view.strides[d] = view.strides[d + 1] * shape[d + 1];
  return view;
}

bool kiln::isRowMajorOf(const StridedView &view, ArrayRef<int64_t> shape) {
  if (view.offset != 0 || view.strides.size() != shape.size())
    return false;
  int64_t expect = 1, count = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] != 1 && view.strides[d] != expect)
      return false;
    expect *= shape[d];
  }
  for (int64_t n : llvm::cast<RankedTensorType>(view.base.getType()).getShape())
    count *= n;
  return count == expect;
}

std::optional<kiln::StridedView> kiln::viewThrough(Operation *def, const StridedView &in) {
  auto shapeOf = [](Value x) { return llvm::cast<RankedTensorType>(x.getType()).getShape(); };
  StridedView view{in.base, in.offset, {}};
  if (auto t = dyn_cast<TransposeOp>(def)) {
    for (int64_t p : t.getPerm())
      view.strides.push_back(in.strides[p]);
    return view;
  }
  if (auto s = dyn_cast<SliceOp>(def)) {
    for (size_t d = 0; d < in.strides.size(); ++d) {
      view.offset += s.getOffsets()[d] * in.strides[d];
      view.strides.push_back(in.strides[d] * s.getStrides()[d]);
    }
    return view;
  }
  if (!isa<ReshapeOp>(def))
    return std::nullopt;
  // Reshape: walk both shapes from the innermost dimension, matching runs
  // of input dimensions to runs of output dimensions with the same element
  // count; a run of input dimensions must be contiguous in the view (each
  // stride the next one's times its size; size-1 dimensions don't count),
  // and its output dimensions then get strides from the run's innermost.
  ArrayRef<int64_t> from = shapeOf(def->getOperand(0)), to = shapeOf(def->getResult(0));
  view.strides.assign(to.size(), 0);
  int64_t o = static_cast<int64_t>(to.size()) - 1;
  int64_t i = static_cast<int64_t>(from.size()) - 1;
  while (i >= 0 || o >= 0) {
    // Size-1 output dimensions take any stride.
    if (o >= 0 && to[o] == 1) {
      view.strides[o--] = 1;
      continue;
    }
    if (i >= 0 && from[i] == 1) {
      --i;
      continue;
    }
    if (i < 0 || o < 0)
      return std::nullopt;
    // One run: grow the input side and the output side until they match.
    int64_t inner = in.strides[i];
    int64_t inCount = from[i], outCount = 1, last = i;
    --i;
    int64_t runOut = o;
    while (true) {
      while (o >= 0 && outCount * to[o] <= inCount && (outCount < inCount || to[o] == 1))
        outCount *= to[o--];
      if (outCount == inCount)
        break;
      // Need another input dimension, contiguous with the run.
      while (i >= 0 && from[i] == 1)
        --i;
      if (i < 0 || in.strides[i] != in.strides[last] * from[last])
        return std::nullopt;
      inCount *= from[i];
      last = i--;
    }
    int64_t stride = inner;
    for (int64_t d = runOut; d > o; --d) {
      view.strides[d] = stride;
      stride *= to[d];
    }
  }
  return view;
}

std::optional<kiln::StridedView> kiln::stridedViewOf(Value v, Value stop) {
  Operation *def = v.getDefiningOp();
  if (!def || v == stop || !isa<TransposeOp, SliceOp, ReshapeOp>(def))
    return rowMajorView(v);
  auto in = stridedViewOf(def->getOperand(0), stop);
  if (!in)
    return std::nullopt;
  return viewThrough(def, *in);
}

//===----------------------------------------------------------------------===//
// The kiln.* attributes' typed accessors (KilnAttributes.h)
//===----------------------------------------------------------------------===//

kiln::Precision kiln::attr::precisionOf(mlir::Operation *op) {
  auto a = op->getAttrOfType<PrecisionAttr>(kPrecision);
  return a ? a.getValue() : Precision::F32;
}

void kiln::attr::setPrecision(mlir::Operation *op, Precision p) {
  if (p == Precision::F32)
    op->removeAttr(kPrecision);
  else
    op->setAttr(kPrecision, PrecisionAttr::get(op->getContext(), p));
}

llvm::StringRef kiln::attr::precisionName(Precision p) { return stringifyPrecision(p); }

kiln::Layout kiln::attr::layoutOf(mlir::Operation *op) {
  auto a = op->getAttrOfType<LayoutAttr>(kLayout);
  return a ? a.getValue() : Layout::NCHW;
}

bool kiln::attr::isChannelsLast(mlir::Operation *op) { return layoutOf(op) == Layout::NHWC; }

void kiln::attr::setLayout(mlir::Operation *op, Layout layout) {
  op->setAttr(kLayout, LayoutAttr::get(op->getContext(), layout));
}
