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
             AbsOp, SiluOp, HardSwishOp, GeluOp, HardSigmoidOp, LeakyReluOp>(op);
}
