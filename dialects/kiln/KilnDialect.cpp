//===- KilnDialect.cpp - kiln dialect registration -------------------------===//
#include "dialects/kiln/KilnDialect.h"

using namespace mlir;
using namespace kiln;

#include "dialects/kiln/KilnDialect.cpp.inc"

void KilnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/kiln/KilnOps.cpp.inc"
      >();
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

kiln::attr::Precision kiln::attr::precisionOf(mlir::Operation *op) {
  auto a = op->getAttrOfType<mlir::StringAttr>(kPrecision);
  if (!a)
    return Precision::F32;
  return a.getValue() == "bf16" ? Precision::BF16
         : a.getValue() == "f16" ? Precision::F16
                                 : Precision::F32;
}

void kiln::attr::setPrecision(mlir::Operation *op, Precision p) {
  if (p == Precision::F32)
    op->removeAttr(kPrecision);
  else
    op->setAttr(kPrecision, mlir::StringAttr::get(op->getContext(), precisionName(p)));
}

llvm::StringRef kiln::attr::precisionName(Precision p) {
  return p == Precision::BF16 ? "bf16" : p == Precision::F16 ? "f16" : "f32";
}

bool kiln::attr::isChannelsLast(mlir::Operation *op) {
  auto a = op->getAttrOfType<mlir::StringAttr>("layout");
  return a && a.getValue() == "nhwc";
}
