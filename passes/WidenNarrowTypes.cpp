//===- WidenNarrowTypes.cpp - float8/float4/int4/int2 in wider carriers ----===//
//
// Every tensor of a narrow type is retyped to its carrier (f32, i8, ui8),
// every cast into a narrow type becomes a cast into the carrier and a
// kiln.narrow that rounds there, constants convert, and the function's
// narrow arguments and results keep their type in `kiln.wire_type` (the
// runtime converts them at the boundary).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_WIDENNARROWTYPESPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// The narrow element type of a tensor type, or null.
Type narrowElement(Type t) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(t);
  return tensor && narrowDtype(tensor.getElementType()) ? tensor.getElementType() : Type();
}

Type widened(Type t) {
  Type e = narrowElement(t);
  return e ? llvm::cast<RankedTensorType>(t).clone(narrowCarrier(e)) : t;
}

/// A constant of a narrow type, in its carrier.
FailureOr<Attribute> widenConstant(ElementsAttr value) {
  auto dense = llvm::dyn_cast<DenseElementsAttr>(value);
  if (!dense)
    return failure();
  auto type = llvm::cast<RankedTensorType>(widened(dense.getType()));
  Type elem = dense.getElementType();
  if (llvm::isa<FloatType>(elem)) {
    SmallVector<APFloat> out;
    for (APFloat v : dense.getValues<APFloat>())
      out.push_back(APFloat(static_cast<float>(v.convertToDouble())));
    return Attribute(DenseElementsAttr::get(type, out));
  }
  SmallVector<APInt> out;
  for (APInt v : dense.getValues<APInt>())
    out.push_back(elem.isUnsignedInteger() ? v.zext(8) : v.sext(8));
  return Attribute(DenseElementsAttr::get(type, out));
}

struct WidenNarrowTypesPass : kiln::impl::WidenNarrowTypesPassBase<WidenNarrowTypesPass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    MLIRContext *ctx = &getContext();
    // The signature: narrow arguments and results keep their type as an
    // attribute.
    SmallVector<Type> ins, outs;
    for (auto [i, arg] : llvm::enumerate(fn.getArguments())) {
      if (Type e = narrowElement(arg.getType())) {
        fn.setArgAttr(i, kiln::attr::kWireType, TypeAttr::get(e));
        arg.setType(widened(arg.getType()));
      }
      ins.push_back(arg.getType());
    }
    for (auto [i, t] : llvm::enumerate(fn.getResultTypes())) {
      if (Type e = narrowElement(t))
        fn.setResultAttr(i, kiln::attr::kWireType, TypeAttr::get(e));
      outs.push_back(widened(t));
    }
    fn.setFunctionType(FunctionType::get(ctx, ins, outs));

    WalkResult walk = fn.walk([&](Operation *op) -> WalkResult {
      if (auto c = dyn_cast<ConstantOp>(op)) {
        if (!narrowElement(c.getType()))
          return WalkResult::advance();
        auto wide = widenConstant(c.getValue());
        if (failed(wide))
          return op->emitError("a constant of narrow type ")
                 << narrowElement(c.getType()) << " must be a dense attribute";
        c.setValueAttr(llvm::cast<ElementsAttr>(*wide));
        c->getResult(0).setType(widened(c.getType()));
        return WalkResult::advance();
      }
      if (auto cast = dyn_cast<CastOp>(op)) {
        Type to = narrowElement(cast.getType());
        if (!to) {
          // From a narrow type: the carrier is converted instead.
          return WalkResult::advance();
        }
        OpBuilder b(op);
        Value in = cast.getInput();
        Type carrier = widened(cast.getType());
        // Floats into 4-/2-bit integers truncate in i32 first, then wrap
        // (-3.0 -> uint2 is 1): a float-to-i8 conversion of a value past
        // its range would be undefined.
        auto inType = llvm::cast<RankedTensorType>(in.getType());
        if (llvm::isa<FloatType>(inType.getElementType()) && to.isInteger())
          in = CastOp::create(b, op->getLoc(), inType.clone(b.getI32Type()), in).getResult();
        if (in.getType() != carrier)
          in = CastOp::create(b, op->getLoc(), carrier, in).getResult();
        auto narrow = NarrowOp::create(b, op->getLoc(), in, TypeAttr::get(to),
                                       cast.getSaturateAttr(), cast.getRoundModeAttr());
        cast.getResult().replaceAllUsesWith(narrow.getResult());
        op->erase();
        return WalkResult::advance();
      }
      for (OpResult r : op->getResults())
        r.setType(widened(r.getType()));
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
  }
};

} // namespace
