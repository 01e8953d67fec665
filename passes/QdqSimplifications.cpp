//===- QdqSimplifications.cpp - quantizations that no product takes in ----===//
//
// kiln-integer-contractions puts a QDQ model's products on 8-bit integers
// and folds the requantizations after them into their scales
// (IntegerContractions.cpp). A QDQ model also quantizes the results of its
// other ops -- each reshape and transpose again, each step of a decomposed
// GELU or LayerNorm -- and these simplify too:
//
// - A quantization of a dequantized value with the same scale and zero
//   point, maybe through reshapes and transposes, gives the bytes back
//   exactly: the data movements then move the bytes.
// - Bytes that are only dequantized again with the same zero point stay in
//   f32: clamp(round(x / s), lo - z, hi - z) * s2, the same values in
//   five operations instead of nine.
// - A ReLU or clip whose bounds the quantization's clamp covers goes (a
//   ReLU6 before a quantization over [0, 6]), as onnxruntime's quantizer
//   drops it: the same values.
//
//===----------------------------------------------------------------------===//
#include "passes/ConstantData.h"
#include "passes/QdqPatterns.h"

#include "mlir/IR/Builders.h"

#include <cmath>

using namespace mlir;

namespace kiln {
namespace {

RankedTensorType typeOf(Value v) { return llvm::cast<RankedTensorType>(v.getType()); }

/// A quantization of a dequantized 8-bit q with the same scale and zero
/// point, maybe through reshapes and transposes (a QDQ model quantizes
/// each data movement's result again): q itself, moved as the values
/// were. Exact: (q - z) * s / s is within a few ulps of q - z, which
/// rounds back to it, and the clamp holds q's whole range.
void dropRequantization(CastOp cast) {
  auto qz = quantizationOf(cast);
  if (!qz)
    return;
  SmallVector<Operation *> moves; // from the quantization back
  Value x = qz->x;
  while (isa_and_nonnull<ReshapeOp, TransposeOp>(x.getDefiningOp())) {
    moves.push_back(x.getDefiningOp());
    x = x.getDefiningOp()->getOperand(0);
  }
  auto d = dequantized(x);
  Type t = cast.getType().getElementType();
  if (!d || typeOf(d->q).getElementType() != t || d->scale != qz->scale ||
      d->zero != qz->zero)
    return;
  bool isUnsigned = t.isUnsignedInteger();
  if (qz->lo > (isUnsigned ? 0.0f : -128.0f) || qz->hi < (isUnsigned ? 255.0f : 127.0f))
    return;
  OpBuilder b(cast);
  Value v = d->q;
  for (Operation *move : llvm::reverse(moves)) {
    Operation *moved = b.clone(*move);
    moved->setOperand(0, v);
    moved->getResult(0).setType(typeOf(move->getResult(0)).clone(t));
    v = moved->getResult(0);
  }
  cast.getResult().replaceAllUsesWith(v);
}

/// A quantization whose bytes are only dequantized again, with the same
/// zero point z (a QDQ model's elementwise ops, each quantized, between
/// f32 ops): the 8-bit round trip of an integer in [lo, hi] is exact, and
/// adding z then taking it away is too, so
/// (cast(clamp(round(x / s) + z, lo, hi)) - z) * s2
/// = clamp(round(x / s), lo - z, hi - z) * s2: five operations on the
/// way where there were nine.
void fakeQuantize(CastOp back) {
  auto bytes = back.getInput().getDefiningOp<CastOp>();
  if (!bytes || !back.getType().getElementType().isF32() || !back->hasOneUse() ||
      !bytes->hasOneUse())
    return;
  auto qz = quantizationOf(bytes);
  if (!qz || !(qz->scale > 0) || !std::isfinite(qz->scale))
    return;
  Value prev = back.getResult();
  Operation *user = *back->getUsers().begin();
  if (auto sub = dyn_cast<SubOp>(user)) {
    auto z = scalarOf(sub.getRhs());
    if (sub.getLhs() != prev || !z || *z != qz->zero || !sub->hasOneUse())
      return;
    prev = sub.getResult();
    user = *sub->getUsers().begin();
  } else if (qz->zero != 0.0f) {
    return;
  }
  auto mul = dyn_cast<MulOp>(user);
  if (!mul || mul.getType() != typeOf(qz->x))
    return;
  auto s2 = scalarOf(mul.getLhs() == prev ? mul.getRhs() : mul.getLhs());
  if (!s2)
    return;
  OpBuilder b(mul);
  Location loc = mul.getLoc();
  auto scalarType = RankedTensorType::get({}, b.getF32Type());
  auto constant = [&](float v, StringRef name) {
    return makeF32Constant(b, loc, scalarType, {v}, name);
  };
  Value v = MaxOp::create(b, loc, qz->rounded, constant(qz->lo - qz->zero, "int8_fake_min"));
  v = MinOp::create(b, loc, v, constant(qz->hi - qz->zero, "int8_fake_max"));
  v = MulOp::create(b, loc, v, constant(*s2, "int8_fake_scale"));
  mul.getResult().replaceAllUsesWith(v);
}

/// A ReLU or clip whose result is quantized -- rounded, shifted by the
/// zero point z and clamped to [lo, hi] -- with bounds the clamp covers
/// (round(min) + z <= lo, round(max) + z >= hi; a ReLU's min is 0): the
/// clamp alone gives the same values (round is monotonic), so the
/// activation goes, as onnxruntime's quantizer drops it (ReLU6 before a
/// quantization over [0, 6]).
void dropSaturatedActivation(Operation *op) {
  float lo = 0.0f, hi = INFINITY;
  if (auto clip = dyn_cast<ClipOp>(op))
    lo = clip.getMin().convertToFloat(), hi = clip.getMax().convertToFloat();
  auto next = [](Operation *o) -> Operation * {
    return o->hasOneUse() ? *o->getUsers().begin() : nullptr;
  };
  // The other operand of a binary op that reads `o`, if it is a scalar constant.
  auto constantOther = [](Operation *user, Operation *o) -> std::optional<float> {
    bool first = user->getOperand(0) == o->getResult(0);
    return scalarOf(user->getOperand(first ? 1 : 0));
  };
  Operation *round = next(op);
  if (!round || !isa<RoundOp>(round))
    return;
  Operation *user = next(round), *last = round;
  float z = 0.0f;
  if (user && isa<AddOp>(user)) {
    auto c = constantOther(user, last);
    if (!c)
      return;
    z = *c, last = user, user = next(user);
  }
  auto floor = user && isa<MaxOp>(user) ? constantOther(user, last) : std::nullopt;
  Operation *minOp = floor ? next(user) : nullptr;
  auto ceiling = minOp && isa<MinOp>(minOp) ? constantOther(minOp, user) : std::nullopt;
  if (!floor || !ceiling || op->getResult(0).getType() != op->getOperand(0).getType() ||
      !(std::nearbyint(lo) + z <= *floor) || !(std::nearbyint(hi) + z >= *ceiling))
    return;
  op->getResult(0).replaceAllUsesWith(op->getOperand(0));
  op->erase();
}

} // namespace

void dropRequantizations(Operation *root) {
  SmallVector<CastOp> casts;
  root->walk([&](CastOp c) { casts.push_back(c); });
  for (CastOp c : casts)
    dropRequantization(c);
}

void simplifyQuantizations(Operation *root) {
  // Activations first: a round trip kept in f32 leaves its old chain for
  // the canonicalizer, which would hide the rounding's one reader.
  SmallVector<Operation *> activations;
  root->walk([&](Operation *op) {
    if (isa<ReluOp, ClipOp>(op))
      activations.push_back(op);
  });
  for (Operation *op : activations)
    dropSaturatedActivation(op);
  SmallVector<CastOp> casts;
  root->walk([&](CastOp c) { casts.push_back(c); });
  for (CastOp c : casts)
    fakeQuantize(c);
}

} // namespace kiln
