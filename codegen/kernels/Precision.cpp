//===- Precision.cpp - bf16/fp16 lowering decisions and conversions -------===//
//
// Which contractions compute in bf16 or fp16, weights converted to half
// types at compile time, and values rounded to or widened from bf16 as
// kernels load and store them.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"
#include "codegen/kernels/Precision.h"
#include "dialects/kiln/ConvStrategy.h"

#include <cstring>

using namespace mlir;

namespace kiln::codegen::kernels {

/// --precision=bf16 on the CPU: kiln-lower-precision marked this contraction
/// bf16, so its constant weights are packed as bf16 for the runtime's bf16
/// ukernels (their other operand is rounded as the ukernel packs it).
bool lowersToBf16(Operation *op) {
  return kiln::attr::precisionOf(op) == kiln::Precision::BF16;
}

/// --precision=fp16 on the CPU: the contraction's constant weights are
/// stored as IEEE half (half the bytes) for the fp16 ukernels
/// (kiln_uk_hgemm/_hgemm_pa), which widen them to f32 as they read them.
bool lowersToF16(Operation *op) {
  return kiln::attr::precisionOf(op) == kiln::Precision::F16;
}

/// f32 -> IEEE half bits, nearest even (subnormals, overflow to infinity,
/// NaN kept quiet). kiln-lower-precision rounded the weights to half values
/// already, so this is exact for them.
static uint16_t halfBits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  uint32_t sign = (b >> 16) & 0x8000u, mag = b & 0x7fffffffu;
  if (mag > 0x7f800000u)
    return static_cast<uint16_t>(sign | 0x7e00u | ((mag >> 13) & 0x3ffu));
  if (mag >= 0x477ff000u) // 65520 and up round to infinity
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (mag >= 0x38800000u) { // a normal half (>= 2^-14): rebias, round
    uint32_t r = mag - (112u << 23);
    r += 0xfffu + ((r >> 13) & 1u);
    return static_cast<uint16_t>(sign | (r >> 13));
  }
  float f; // subnormal: a multiple of 2^-24 (scaling by 2^24 is exact)
  std::memcpy(&f, &mag, 4);
  return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(f * 16777216.0f)));
}

/// Packed f32 weights as constant bytes: f32, or (fp16) IEEE half.
std::vector<char> weightBytes(ArrayRef<float> v, bool half) {
  if (!half) {
    const char *raw = reinterpret_cast<const char *>(v.data());
    return std::vector<char>(raw, raw + v.size() * 4);
  }
  std::vector<char> out(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h = halfBits(v[i]);
    std::memcpy(&out[i * 2], &h, 2);
  }
  return out;
}

/// f32 `v` rounded to the precision kiln-lower-precision gave `op` (bf16 or
/// f16 values, still f32), or `v` where it gave none: attention rounds its
/// result in its kernel.
Value roundedToPrecision(KernelEmitter &e, Operation *op, Value v) {
  kiln::Precision precision = kiln::attr::precisionOf(op);
  if (precision == kiln::Precision::F32)
    return v;
  Type low = precision == kiln::Precision::BF16 ? Type(e.b.getBF16Type())
                                                       : Type(e.b.getF16Type());
  if (auto vt = llvm::dyn_cast<VectorType>(v.getType()))
    low = vt.clone(low);
  Value t = arith::TruncFOp::create(e.b, low, v);
  return arith::ExtFOp::create(e.b, v.getType(), t);
}

/// f32 -> bf16 bits, nearest even (as arith.truncf and the ukernels round).
uint16_t bf16Bits(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  if ((b & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((b >> 16) | 0x40u);
  return static_cast<uint16_t>((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

/// Whether buffer `out` and buffers [first, first + n) hold f32 (an
/// epilogue can then run on 16-lane vectors).
bool f32Buffers(KernelEmitter &e, int out, int first, int64_t n) {
  auto isF32 = [&](int b) {
    return llvm::cast<MemRefType>(e.bufs[b].getType()).getElementType().isF32();
  };
  for (int64_t k = 0; k < n; ++k)
    if (!isF32(first + k))
      return false;
  return isF32(out);
}

/// `v` (a scalar or vector of floats) as f32: bf16 storage read back.
Value asF32(KernelEmitter &e, Value v) {
  auto vt = llvm::dyn_cast<VectorType>(v.getType());
  Type elem = vt ? vt.getElementType() : v.getType();
  if (elem.isF32() || !llvm::isa<FloatType>(elem))
    return v; // (integers stay: a typed epilogue computes in their type)
  Type f32 = e.b.getF32Type();
  return arith::ExtFOp::create(e.b, vt ? Type(vt.clone(f32)) : f32, v);
}

/// Stores f32 `v` (a scalar or a vector of e.lanes values, of which only
/// the lanes of `mask` when given) into buffer `buf` at `at`, converted to
/// the buffer's element type (bf16 rows).
void storeRounded(KernelEmitter &e, Value v, int buf, Value at, Value mask) {
  auto vt = llvm::dyn_cast<VectorType>(v.getType());
  if (!vt)
    return e.store(v, buf, at);
  Type elem = llvm::cast<MemRefType>(e.bufs[buf].getType()).getElementType();
  if (elem != vt.getElementType())
    v = arith::TruncFOp::create(e.b, vt.clone(elem), asF32(e, v));
  if (mask)
    vector::MaskedStoreOp::create(e.b, e.bufs[buf], ValueRange{at}, mask, v);
  else
    vector::StoreOp::create(e.b, v, e.bufs[buf], ValueRange{at});
}

/// f32 `v` holds bf16 values: a rounding pair (f32 -> bf16 -> f32), or a
/// relu, negation or absolute value of one.
bool holdsBf16(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isa<kiln::ReluOp, kiln::NegOp, kiln::AbsOp>(def)) {
      v = def->getOperand(0);
      continue;
    }
    auto up = dyn_cast<kiln::CastOp>(def);
    auto down = up ? up.getInput().getDefiningOp<kiln::CastOp>() : nullptr;
    auto elem = [](Value x) { return llvm::cast<RankedTensorType>(x.getType()).getElementType(); };
    return down && elem(v).isF32() && elem(up.getInput()).isBF16() &&
           elem(down.getInput()).isF32();
  }
  return false;
}

/// Whether every reader of the top-level value `v` reads it as bf16
/// storage: NHWC bf16 convolutions of the matrix-product kind (as their
/// input -- an even channel count when pointwise, read in place -- or as an
/// elementwise epilogue operand) and NHWC max pools.
bool bf16Readers(Value v) {
  if (v.use_empty())
    return false;
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (auto pool = dyn_cast<kiln::MaxPoolOp>(user)) {
      if (!kiln::attr::isChannelsLast(pool))
        return false;
      continue;
    }
    auto f = dyn_cast<kiln::FusionOp>(user);
    if (!f)
      return false;
    Block &body = f.getBody().front();
    auto conv = dyn_cast<kiln::ConvOp>(&body.front());
    if (!conv || !lowersToBf16(conv) || !kiln::attr::isChannelsLast(conv) || conv.getGroup() != 1)
      return false;
    auto w = llvm::cast<RankedTensorType>(conv.getWeight().getType()).getShape();
    auto in = llvm::cast<RankedTensorType>(conv.getInput().getType()).getShape();
    auto wArg = llvm::dyn_cast<BlockArgument>(conv.getWeight());
    if (conv_strategy::isDirect(w[1] * w[2] * w[3], w[0]) || !wArg ||
        !f.getInputs()[wArg.getArgNumber()].getDefiningOp<kiln::ConstantOp>())
      return false;
    bool pointwise = w[2] * w[3] == 1;
    for (OpOperand &u : body.getArgument(use.getOperandNumber()).getUses()) {
      if (u.getOwner() == conv.getOperation() && u.getOperandNumber() == 0) {
        if (pointwise && in[3] % 2 != 0)
          return false;
        continue;
      }
      if (u.getOwner() == conv.getOperation() || !kiln::isElementwise(u.getOwner()))
        return false;
    }
  }
  return true;
}

} // namespace kiln::codegen::kernels
