//===- ScalarOps.cpp - one element of an elementwise op -------------------===//
//
// scalarOp: an elementwise kiln op on scalar (or vector) operands as arith
// and math ops, in the op's element type: float ops, integer ops that wrap,
// comparisons, casts and the narrow float/int roundings (kiln.narrow).
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"
#include "kiln/narrow.h"
#include "kiln/runtime.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/TypeSwitch.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

#include <cmath>
#include <cstring>

using namespace mlir;

namespace kiln::codegen::kernels {

/// Strides, in the coordinates of `out`, at which numpy broadcasting reads an
/// operand of shape `in` (0 along broadcast dimensions).
std::vector<int64_t> numpyStrides(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  int64_t rank = out.size();
  auto cs = stridesOf(in);
  std::vector<int64_t> st(rank, 0);
  for (int64_t i = 0; i < rank; ++i) {
    int64_t j = i - (rank - static_cast<int64_t>(in.size()));
    if (j >= 0 && in[j] != 1)
      st[i] = cs[j];
  }
  return st;
}

/// Strides at which elementwise `user` reads `operand`, in the coordinates
/// of its result: per-channel (dimension 1) for batch-norm parameters,
/// numpy broadcasting otherwise.
std::vector<int64_t> operandStrides(Operation *user, unsigned operandNo) {
  auto out = llvm::cast<RankedTensorType>(user->getResult(0).getType()).getShape();
  if (isa<kiln::BatchNormOp>(user) && operandNo > 0) {
    std::vector<int64_t> st(out.size(), 0);
    st[1] = 1;
    return st;
  }
  return numpyStrides(
      llvm::cast<RankedTensorType>(user->getOperand(operandNo).getType()).getShape(),
      out);
}

/// x / y. By a constant f32 y (a quantization's scale, say) without the
/// division instruction (a 16-lane one issues once per 10 cycles or so):
/// q = x * r with r = 1 / y rounded, then Markstein's correction q + (x -
/// q * y) * r with fused multiply-adds -- the correctly rounded quotient
/// while r and the quotient are normal numbers; where the correction is
/// not a number (x infinite, or the quotient overflowing) q itself. (Equal
/// to the division on 127M random pairs of normal numbers.)
static Value divide(KernelEmitter &e, Value x, Value y) {
  auto &b = e.b;
  Attribute attr;
  std::optional<APFloat> c;
  if (matchPattern(y, m_Constant(&attr))) {
    if (auto f = llvm::dyn_cast<FloatAttr>(attr))
      c = f.getValue();
    else if (auto d = llvm::dyn_cast<DenseFPElementsAttr>(attr); d && d.isSplat())
      c = d.getSplatValue<APFloat>();
  }
  if (!c || !getElementTypeOrSelf(y.getType()).isF32())
    return arith::DivFOp::create(b, x, y);
  float cv = c->convertToFloat(), rv = 1.0f / cv;
  if (!std::isnormal(cv) || !std::isnormal(rv))
    return arith::DivFOp::create(b, x, y);
  Value r = e.f32(rv);
  Value q = e.fmul(x, r);
  Value err = e.fma(arith::NegFOp::create(b, q), y, x);
  // q where it is exact (err 0: also keeps the sign of a zero quotient)
  // or the error is not a number.
  Value exact = arith::CmpFOp::create(b, arith::CmpFPredicate::UEQ, err, e.f32(0.0));
  return arith::SelectOp::create(b, exact, q, e.fma(err, r, q));
}

/// Whether `op`'s value reaches nothing but conversions to integers,
/// through further kiln.max / kiln.min (a quantization's clamp).
static bool clampsForInteger(Operation *op) {
  Value r = op->getResult(0);
  return !r.use_empty() && llvm::all_of(r.getUsers(), [](Operation *u) {
    if (isa<kiln::MaxOp, kiln::MinOp>(u))
      return clampsForInteger(u);
    auto c = dyn_cast<kiln::CastOp>(u);
    if (!c)
      return false;
    Type t = llvm::cast<RankedTensorType>(c.getResult().getType()).getElementType();
    return llvm::isa<IntegerType>(t) && !t.isInteger(1);
  });
}

/// A kiln.max / kiln.min's fast-math flags: none, or, for a clamp before a
/// conversion to integers, no NaNs and no signed zeros -- the conversion of
/// NaN is undefined and both zeros convert to 0, so neither can change a
/// result, and the clamp is then one max and one min instruction (with
/// them, a max with 0 is three).
static arith::FastMathFlags clampFlags(Operation *op) {
  return clampsForInteger(op) ? arith::FastMathFlags::nnan | arith::FastMathFlags::nsz
                              : arith::FastMathFlags::none;
}

/// The element type of a tensor value.
static Type tensorElem(Value v) { return llvm::cast<RankedTensorType>(v.getType()).getElementType(); }

/// An integer constant of `v`'s (scalar or vector) type.
static Value intLike(ImplicitLocOpBuilder &b, Value v, int64_t c) {
  Type t = v.getType();
  auto et = llvm::cast<IntegerType>(getElementTypeOrSelf(t));
  APInt value(et.getWidth(), static_cast<uint64_t>(c), /*isSigned=*/true);
  if (auto vt = llvm::dyn_cast<VectorType>(t))
    return arith::ConstantOp::create(b, DenseElementsAttr::get(vt, value));
  return arith::ConstantOp::create(b, IntegerAttr::get(et, value));
}

/// The scalar computation of an elementwise op whose operands are integers
/// or bools (`t`: their tensor element type, signedness included). Null when
/// the op is not an integer op. Division and remainder by zero give 0 (and
/// INT_MIN / -1 wraps) rather than trapping; shifts past the width give 0.
static Value intScalarOp(KernelEmitter &e, Operation *op, ArrayRef<Value> v, Type t) {
  ImplicitLocOpBuilder &b = e.b;
  bool uns = t.isUnsignedInteger() || t.isInteger(1);
  using P = arith::CmpIPredicate;
  auto cmp = [&](P p, Value x, Value y) { return arith::CmpIOp::create(b, p, x, y).getResult(); };
  auto sel = [&](Value c, Value x, Value y) { return arith::SelectOp::create(b, c, x, y).getResult(); };
  // x / y and x % y with y == 0 (and, signed, y == -1) taken apart.
  auto safeDiv = [&](Value x, Value y, bool rem) -> Value {
    Value zero = intLike(b, y, 0), one = intLike(b, y, 1);
    Value isZero = cmp(P::eq, y, zero);
    if (uns) {
      Value d = sel(isZero, one, y);
      Value r = rem ? arith::RemUIOp::create(b, x, d).getResult()
                    : arith::DivUIOp::create(b, x, d).getResult();
      return sel(isZero, zero, r);
    }
    Value isMinus = cmp(P::eq, y, intLike(b, y, -1));
    Value d = sel(arith::OrIOp::create(b, isZero, isMinus), one, y);
    Value r = rem ? arith::RemSIOp::create(b, x, d).getResult()
                  : arith::DivSIOp::create(b, x, d).getResult();
    Value special = rem ? zero : arith::SubIOp::create(b, zero, x).getResult();
    return sel(isZero, zero, sel(isMinus, special, r));
  };
  unsigned width = llvm::cast<IntegerType>(t).getWidth();
  auto shift = [&](Value x, Value n, bool left) -> Value {
    Value big = cmp(P::uge, n, intLike(b, n, width));
    Value r = left ? arith::ShLIOp::create(b, x, n).getResult()
                   : uns ? arith::ShRUIOp::create(b, x, n).getResult()
                         : arith::ShRSIOp::create(b, x, n).getResult();
    Value past = uns || left ? intLike(b, x, 0)
                             : arith::ShRSIOp::create(b, x, intLike(b, n, width - 1)).getResult();
    return sel(big, past, r);
  };
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case<kiln::AddOp>([&](auto) { return e.add(v[0], v[1]); })
      .Case<kiln::SubOp>([&](auto) { return arith::SubIOp::create(b, v[0], v[1]); })
      .Case<kiln::MulOp>([&](auto) { return e.mul(v[0], v[1]); })
      .Case<kiln::DivOp>([&](auto) { return safeDiv(v[0], v[1], false); })
      .Case<kiln::ModOp>([&](kiln::ModOp m) -> Value {
        Value r = safeDiv(v[0], v[1], true);
        if (m.getFmod() || uns)
          return r;
        // Floored: the sign of the divisor.
        Value zero = intLike(b, r, 0);
        Value fix = arith::AndIOp::create(
            b, cmp(P::ne, r, zero), arith::XOrIOp::create(b, cmp(P::slt, r, zero),
                                                          cmp(P::slt, v[1], zero)));
        return sel(fix, e.add(r, v[1]), r);
      })
      .Case<kiln::MaxOp>([&](auto) {
        return uns ? arith::MaxUIOp::create(b, v[0], v[1]).getResult()
                   : arith::MaxSIOp::create(b, v[0], v[1]).getResult();
      })
      .Case<kiln::MinOp>([&](auto) {
        return uns ? arith::MinUIOp::create(b, v[0], v[1]).getResult()
                   : arith::MinSIOp::create(b, v[0], v[1]).getResult();
      })
      .Case<kiln::PowOp>([&](auto) {
        // In f64 (exact for the integer results that fit), then truncated.
        Type f64 = b.getF64Type();
        Value r = math::PowFOp::create(b, convertElements(b, v[0], t, f64),
                                       convertElements(b, v[1], t, f64));
        return convertElements(b, r, f64, t);
      })
      .Case<kiln::AndOp>([&](auto) { return arith::AndIOp::create(b, v[0], v[1]); })
      .Case<kiln::OrOp>([&](auto) { return arith::OrIOp::create(b, v[0], v[1]); })
      .Case<kiln::XorOp>([&](auto) { return arith::XOrIOp::create(b, v[0], v[1]); })
      .Case<kiln::ShlOp>([&](auto) { return shift(v[0], v[1], true); })
      .Case<kiln::ShrOp>([&](auto) { return shift(v[0], v[1], false); })
      .Case<kiln::NotOp>([&](auto) { return arith::XOrIOp::create(b, v[0], intLike(b, v[0], -1)); })
      .Case<kiln::NegOp>([&](auto) { return arith::SubIOp::create(b, intLike(b, v[0], 0), v[0]); })
      .Case<kiln::AbsOp>([&](auto) -> Value {
        if (uns)
          return v[0];
        return math::AbsIOp::create(b, v[0]);
      })
      .Case<kiln::SignOp>([&](auto) -> Value {
        Value zero = intLike(b, v[0], 0), one = intLike(b, v[0], 1);
        if (uns)
          return sel(cmp(P::ne, v[0], zero), one, zero);
        return sel(cmp(P::sgt, v[0], zero), one,
                   sel(cmp(P::slt, v[0], zero), intLike(b, v[0], -1), zero));
      })
      .Case<kiln::CompareOp>([&](kiln::CompareOp c) {
        StringRef p = c.getPredicate();
        P pred = p == "eq" ? P::eq
                 : p == "lt" ? (uns ? P::ult : P::slt)
                 : p == "le" ? (uns ? P::ule : P::sle)
                 : p == "gt" ? (uns ? P::ugt : P::sgt)
                             : (uns ? P::uge : P::sge);
        return cmp(pred, v[0], v[1]);
      })
      .Default([](Operation *) { return Value(); });
}

/// kiln.narrow on one carrier value (scalar or vector): the rounding of
/// kiln/narrow.h's codec, on the f32 bit pattern in i32 (4-/2-bit integers:
/// a wrap of the i8/ui8 carrier).
static Value narrowScalar(ImplicitLocOpBuilder &b, kiln::NarrowOp op, Value x) {
  Type format = op.getFormat();
  using P = arith::CmpIPredicate;
  if (auto it = llvm::dyn_cast<IntegerType>(format)) {
    int64_t shift = 8 - it.getWidth();
    if (it.isUnsigned())
      return arith::AndIOp::create(b, x, intLike(b, x, (1 << it.getWidth()) - 1));
    Value up = arith::ShLIOp::create(b, x, intLike(b, x, shift));
    return arith::ShRSIOp::create(b, up, intLike(b, x, shift));
  }
  Type xt = x.getType();
  Type i32 = b.getI32Type();
  if (auto vt = llvm::dyn_cast<VectorType>(xt))
    i32 = vt.clone(i32);
  Value u = arith::BitcastOp::create(b, i32, x);
  auto c = [&](int64_t v) { return intLike(b, u, v); };
  auto cmp = [&](P p, Value l, Value r) { return arith::CmpIOp::create(b, p, l, r).getResult(); };
  auto sel = [&](Value cond, Value t, Value f) {
    return arith::SelectOp::create(b, cond, t, f).getResult();
  };
  auto fromBits = [&](Value bits) { return arith::BitcastOp::create(b, xt, bits).getResult(); };
  auto andi = [&](Value l, Value r) { return arith::AndIOp::create(b, l, r).getResult(); };
  auto ori = [&](Value l, Value r) { return arith::OrIOp::create(b, l, r).getResult(); };
  auto addi = [&](Value l, Value r) { return arith::AddIOp::create(b, l, r).getResult(); };
  auto shr = [&](Value l, Value r) { return arith::ShRUIOp::create(b, l, r).getResult(); };
  auto shl = [&](Value l, Value r) { return arith::ShLIOp::create(b, l, r).getResult(); };
  auto zext = [&](Value cond) { return arith::ExtUIOp::create(b, i32, cond).getResult(); };
  Value nan = c(0x7FC00000);
  int32_t dtype = kiln::narrowDtype(format);
  if (dtype == KILN_F8E8M0) {
    // A power of two 2^(e - 127): the f32 exponent e, rounded by the mode.
    Value expo = andi(shr(u, c(23)), c(0xFF));
    Value up = c(0);
    int mode = kiln::roundModeCode(op.getRoundMode());
    if (mode == 0)
      up = zext(cmp(P::ne, andi(u, c(0x7FFFFF)), c(0)));
    else if (mode == 2)
      up = zext(arith::AndIOp::create(
          b, cmp(P::ne, andi(u, c(0x400000)), c(0)),
          arith::OrIOp::create(b, cmp(P::ne, andi(u, c(0x3FFFFF)), c(0)),
                               cmp(P::ne, expo, c(0)))));
    if (op.getSaturate())
      up = sel(cmp(P::eq, expo, c(0xFE)), c(0), up);
    Value e2 = addi(expo, up);
    Value bits = sel(cmp(P::eq, e2, c(0)), c(0x400000), shl(e2, c(23)));
    bits = sel(cmp(P::uge, e2, c(0xFF)), nan, bits);
    bits = sel(cmp(P::eq, expo, c(0xFF)), nan, bits);
    return fromBits(bits);
  }
  const kiln_narrow_float *f = kiln_narrow_float_of(dtype);
  int64_t m = f->mantissa, emin = 1 - f->bias;
  bool saturate = op.getSaturate() || !f->has_nan;
  Value sign = andi(u, c(static_cast<int64_t>(0x80000000u)));
  Value a = andi(u, c(0x7FFFFFFF));
  // |x| = mant * 2^(e - 23), the implicit bit in mant (f32 subnormals: e
  // is -126 and no implicit bit; they round to 0 in every narrow type).
  Value expo = shr(a, c(23));
  Value isSub = cmp(P::eq, expo, c(0));
  Value e = sel(isSub, c(-126), addi(expo, c(-127)));
  Value mant = ori(andi(a, c(0x7FFFFF)), sel(isSub, c(0), c(0x800000)));
  // Round mant to a multiple of 2^s (ties to even): the quantum of the
  // narrow type at this exponent, 2^(max(e, emin) - m).
  Value below = arith::MaxSIOp::create(b, arith::SubIOp::create(b, c(emin), e), c(0));
  Value sh = arith::MinSIOp::create(b, addi(below, c(23 - m)), c(31));
  Value r = shr(mant, sh);
  Value rem = arith::SubIOp::create(b, mant, shl(r, sh));
  Value half = shl(c(1), arith::SubIOp::create(b, sh, c(1)));
  Value up = arith::OrIOp::create(
      b, cmp(P::ugt, rem, half),
      arith::AndIOp::create(b, cmp(P::eq, rem, half), cmp(P::ne, andi(r, c(1)), c(0))));
  r = addi(r, zext(up));
  Value qe = arith::SubIOp::create(b, arith::MaxSIOp::create(b, e, c(emin)), c(m));
  Value scale = fromBits(shl(addi(qe, c(127)), c(23)));
  Value mag = arith::MulFOp::create(b, arith::UIToFPOp::create(b, xt, r), scale);
  Value magBits = arith::BitcastOp::create(b, i32, mag);
  // Past the largest finite value (infinities included): saturated, or inf
  // (E5M2), or NaN; NaN stays NaN (float4 has none: a zero).
  float maxF = f->max;
  uint32_t maxBits;
  std::memcpy(&maxBits, &maxF, 4);
  Value over = saturate ? c(maxBits) : f->has_inf ? c(0x7F800000) : nan;
  Value bits = sel(cmp(P::ugt, magBits, c(maxBits)), over, magBits);
  bits = sel(cmp(P::eq, a, c(0x7F800000)), over, bits);
  bits = sel(cmp(P::ugt, a, c(0x7F800000)), f->has_nan ? nan : c(0), bits);
  // The sign (not on NaN; FNUZ types have no negative zero).
  Value signed_ = ori(bits, sign);
  Value keepSign = cmp(P::ule, bits, c(0x7F800000));
  if (f->nan_uz)
    keepSign = arith::AndIOp::create(b, keepSign, cmp(P::ne, bits, c(0)));
  return fromBits(sel(keepSign, signed_, bits));
}

/// The scalar computation of one elementwise op on scalar operands.
Value scalarOp(KernelEmitter &e, Operation *op, ArrayRef<Value> v) {
  ImplicitLocOpBuilder &b = e.b;
  if (isa<kiln::ExpandOp>(op))
    return v[0];
  if (auto n = dyn_cast<kiln::NarrowOp>(op))
    return narrowScalar(b, n, v[0]);
  if (auto w = dyn_cast<kiln::WhereOp>(op)) {
    Value c = v[0];
    if (!getElementTypeOrSelf(c.getType()).isInteger(1))
      c = convertElements(b, c, tensorElem(w.getCondition()), b.getI1Type());
    return arith::SelectOp::create(b, c, v[1], v[2]);
  }
  if (!isa<kiln::CastOp>(op) && op->getNumOperands() > 0)
    if (Type t = tensorElem(op->getOperand(0)); llvm::isa<IntegerType>(t))
      return intScalarOp(e, op, v, t);
  // f64 ops compute in f64 (kiln-legalize-types leaves them); the rest in f32.
  Type saved = e.computeType;
  Type rt = llvm::cast<RankedTensorType>(op->getResult(0).getType()).getElementType();
  if (!llvm::isa<FloatType>(rt)) // comparisons and tests: their operands' type
    rt = tensorElem(op->getOperand(0));
  e.computeType = rt.isF64() ? rt : Type();
  llvm::scope_exit restore([&] { e.computeType = saved; });
  return llvm::TypeSwitch<Operation *, Value>(op)
      .Case<kiln::AddOp>([&](auto) { return e.fadd(v[0], v[1]); })
      .Case<kiln::SubOp>([&](auto) { return arith::SubFOp::create(b, v[0], v[1]); })
      .Case<kiln::MulOp>([&](auto) { return e.fmul(v[0], v[1]); })
      .Case<kiln::DivOp>([&](auto) { return divide(e, v[0], v[1]); })
      .Case<kiln::ReluOp>([&](auto) {
        return arith::MaximumFOp::create(b, v[0], e.f32(0.0f));
      })
      .Case<kiln::SigmoidOp>([&](auto) {
        Value ex = math::ExpOp::create(b, arith::NegFOp::create(b, v[0]));
        return arith::DivFOp::create(b, e.f32(1.0f), e.fadd(e.f32(1.0f), ex));
      })
      .Case<kiln::TanhOp>([&](auto) { return math::TanhOp::create(b, v[0]); })
      .Case<kiln::PowOp>([&](auto) { return math::PowFOp::create(b, v[0], v[1]); })
      .Case<kiln::MaxOp>([&](auto) {
        return arith::MaximumFOp::create(b, v[0], v[1], clampFlags(op)).getResult();
      })
      .Case<kiln::MinOp>([&](auto) {
        return arith::MinimumFOp::create(b, v[0], v[1], clampFlags(op)).getResult();
      })
      .Case<kiln::ExpOp>([&](auto) { return math::ExpOp::create(b, v[0]); })
      .Case<kiln::LogOp>([&](auto) { return math::LogOp::create(b, v[0]); })
      .Case<kiln::SqrtOp>([&](auto) { return math::SqrtOp::create(b, v[0]); })
      .Case<kiln::ErfOp>([&](auto) { return math::ErfOp::create(b, v[0]); })
      .Case<kiln::NegOp>([&](auto) { return arith::NegFOp::create(b, v[0]); })
      .Case<kiln::AbsOp>([&](auto) { return math::AbsFOp::create(b, v[0]); })
      .Case<kiln::ReciprocalOp>([&](auto) {
        return arith::DivFOp::create(b, e.f32(1.0f), v[0]);
      })
      .Case<kiln::SiluOp>([&](auto) {
        Value ex = math::ExpOp::create(b, arith::NegFOp::create(b, v[0]));
        return arith::DivFOp::create(b, v[0], e.fadd(e.f32(1.0f), ex));
      })
      .Case<kiln::HardSigmoidOp>([&](auto h) {
        Value y = e.fadd(e.fmul(v[0], e.f32(h.getAlpha().convertToFloat())),
                         e.f32(h.getBeta().convertToFloat()));
        y = arith::MaximumFOp::create(b, y, e.f32(0.0f));
        return arith::MinimumFOp::create(b, y, e.f32(1.0f));
      })
      .Case<kiln::HardSwishOp>([&](auto) {
        Value y = e.fadd(e.fmul(v[0], e.f32(1.0f / 6.0f)), e.f32(0.5f));
        y = arith::MaximumFOp::create(b, y, e.f32(0.0f));
        return e.fmul(v[0], arith::MinimumFOp::create(b, y, e.f32(1.0f)));
      })
      .Case<kiln::LeakyReluOp>([&](auto l) {
        Value neg = e.fmul(v[0], e.f32(l.getAlpha().convertToFloat()));
        Value pos = arith::CmpFOp::create(b, arith::CmpFPredicate::OGE, v[0], e.f32(0.0f));
        return arith::SelectOp::create(b, pos, v[0], neg);
      })
      .Case<kiln::GeluOp>([&](auto g) -> Value {
        if (g.getApproximate()) {
          // 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3), is
          // x * sigmoid(2u) = x / (1 + exp(-2u)), which does not cancel
          // where x is negative (at x = -4, 1 + tanh(u) = 3.5e-5 kept about
          // 9 of f32's bits). Below about x = -10 exp overflows to inf:
          // x / inf = -0, GELU's limit.
          Value x2 = e.fmul(v[0], v[0]);
          Value m2u = e.fmul(v[0], e.fadd(e.fmul(x2, e.f32(-0.0713548162726f)),
                                          e.f32(-1.5957691216057308f)));
          return arith::DivFOp::create(b, v[0],
                                       e.fadd(e.f32(1.0f), math::ExpOp::create(b, m2u)));
        }
        Value t = math::ErfOp::create(b, e.fmul(v[0], e.f32(0.7071067811865476f)));
        return e.fmul(e.fmul(v[0], e.f32(0.5f)), e.fadd(e.f32(1.0f), t));
      })
      .Case<kiln::SinOp>([&](auto) { return math::SinOp::create(b, v[0]); })
      .Case<kiln::CosOp>([&](auto) { return math::CosOp::create(b, v[0]); })
      .Case<kiln::TanOp>([&](auto) { return math::TanOp::create(b, v[0]); })
      .Case<kiln::AsinOp>([&](auto) { return math::AsinOp::create(b, v[0]); })
      .Case<kiln::AcosOp>([&](auto) { return math::AcosOp::create(b, v[0]); })
      .Case<kiln::AtanOp>([&](auto) { return math::AtanOp::create(b, v[0]); })
      .Case<kiln::SinhOp>([&](auto) { return math::SinhOp::create(b, v[0]); })
      .Case<kiln::CoshOp>([&](auto) { return math::CoshOp::create(b, v[0]); })
      .Case<kiln::AsinhOp>([&](auto) { return math::AsinhOp::create(b, v[0]); })
      .Case<kiln::AcoshOp>([&](auto) { return math::AcoshOp::create(b, v[0]); })
      .Case<kiln::AtanhOp>([&](auto) { return math::AtanhOp::create(b, v[0]); })
      .Case<kiln::FloorOp>([&](auto) { return math::FloorOp::create(b, v[0]); })
      .Case<kiln::CeilOp>([&](auto) { return math::CeilOp::create(b, v[0]); })
      .Case<kiln::RoundOp>([&](auto) { return math::RoundEvenOp::create(b, v[0]); })
      .Case<kiln::Log1pOp>([&](auto) { return math::Log1pOp::create(b, v[0]); })
      .Case<kiln::SignOp>([&](auto) {
        // 1, -1, or x itself (+-0 and NaN).
        using P = arith::CmpFPredicate;
        Value pos = arith::CmpFOp::create(b, P::OGT, v[0], e.f32(0.0));
        Value neg = arith::CmpFOp::create(b, P::OLT, v[0], e.f32(0.0));
        return arith::SelectOp::create(
            b, pos, e.f32(1.0), arith::SelectOp::create(b, neg, e.f32(-1.0), v[0]));
      })
      .Case<kiln::IsNanOp>([&](auto) {
        return arith::CmpFOp::create(b, arith::CmpFPredicate::UNO, v[0], v[0]);
      })
      .Case<kiln::IsInfOp>([&](kiln::IsInfOp o) -> Value {
        using P = arith::CmpFPredicate;
        auto eq = [&](Value x, double c) {
          return arith::CmpFOp::create(b, P::OEQ, x, e.f32(c)).getResult();
        };
        if (o.getPositive() && o.getNegative())
          return eq(math::AbsFOp::create(b, v[0]), INFINITY);
        if (o.getPositive())
          return eq(v[0], INFINITY);
        if (o.getNegative())
          return eq(v[0], -INFINITY);
        return arith::AndIOp::create(b, eq(v[0], INFINITY), eq(v[0], -INFINITY));
      })
      .Case<kiln::ModOp>([&](auto) { return arith::RemFOp::create(b, v[0], v[1]); })
      .Case<kiln::CompareOp>([&](kiln::CompareOp c) {
        using P = arith::CmpFPredicate;
        StringRef p = c.getPredicate();
        P pred = p == "eq" ? P::OEQ : p == "lt" ? P::OLT : p == "le" ? P::OLE
                 : p == "gt" ? P::OGT : P::OGE;
        return arith::CmpFOp::create(b, pred, v[0], v[1]);
      })
      .Case<kiln::ClipOp>([&](auto c) {
        Value x = arith::MaximumFOp::create(b, v[0], e.f32(c.getMin().convertToFloat()));
        return arith::MinimumFOp::create(b, x, e.f32(c.getMax().convertToFloat()));
      })
      .Case<kiln::CastOp>([&](auto c) {
        auto et = [](Value x) { return llvm::cast<RankedTensorType>(x.getType()).getElementType(); };
        // A bf16/f16 operand a kernel already read as f32 (a site loaded
        // widened) converts from what it holds: exactly the same value.
        Type from = et(c.getInput());
        Type held = getElementTypeOrSelf(v[0].getType());
        if (llvm::isa<FloatType>(from) && llvm::isa<FloatType>(held) && held != from)
          from = held;
        return convertElements(b, v[0], from, et(c.getResult()));
      })
      .Case<kiln::BatchNormOp>([&](auto bn) {
        // (x - mean) * scale / sqrt(var + eps) + bias
        Value den = math::SqrtOp::create(
            b, e.fadd(v[4], e.f32(bn.getEpsilon().convertToFloat())));
        Value a = arith::DivFOp::create(b, v[1], den);
        return e.fadd(e.fmul(arith::SubFOp::create(b, v[0], v[3]), a), v[2]);
      })
      .Default([](Operation *) { return Value(); });
}

} // namespace kiln::codegen::kernels
