//===- NarrowTypes.cpp - float8, float4, 4- and 2-bit integer types --------===//
//
// The narrow storage types ONNX has and Kiln carries in wider types: their
// runtime dtype codes, carriers, and the host-side rounding (kiln/narrow.h,
// the runtime's codec) that folds kiln.narrow on constants and evaluates
// casts while importing.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/KilnDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringSwitch.h"

#include "kiln/narrow.h"

#include <cmath>

using namespace mlir;

int32_t kiln::narrowDtype(Type t) {
  if (isa<Float8E4M3FNType>(t)) return KILN_F8E4M3FN;
  if (isa<Float8E4M3FNUZType>(t)) return KILN_F8E4M3FNUZ;
  if (isa<Float8E5M2Type>(t)) return KILN_F8E5M2;
  if (isa<Float8E5M2FNUZType>(t)) return KILN_F8E5M2FNUZ;
  if (isa<Float8E8M0FNUType>(t)) return KILN_F8E8M0;
  if (isa<Float4E2M1FNType>(t)) return KILN_F4E2M1;
  if (auto i = dyn_cast<IntegerType>(t)) {
    if (i.getWidth() == 4) return i.isUnsigned() ? KILN_U4 : KILN_I4;
    if (i.getWidth() == 2) return i.isUnsigned() ? KILN_U2 : KILN_I2;
  }
  return 0;
}

Type kiln::narrowCarrier(Type t) {
  switch (kiln_dtype_carrier(narrowDtype(t))) {
  case KILN_F32: return Float32Type::get(t.getContext());
  case KILN_I8: return IntegerType::get(t.getContext(), 8);
  case KILN_U8: return IntegerType::get(t.getContext(), 8, IntegerType::Unsigned);
  default: return {};
  }
}

int kiln::roundModeCode(llvm::StringRef mode) {
  return llvm::StringSwitch<int>(mode).Case("up", 0).Case("down", 1).Case("nearest", 2).Default(-1);
}

double kiln::roundToNarrow(double v, Type format, bool saturate, llvm::StringRef roundMode) {
  int32_t dtype = narrowDtype(format);
  if (auto i = dyn_cast<IntegerType>(format)) {
    // Wrap to the width (v is an integer of the carrier).
    unsigned w = i.getWidth();
    int64_t x = std::isfinite(v) ? static_cast<int64_t>(v) : 0;
    uint64_t low = static_cast<uint64_t>(x) & ((uint64_t(1) << w) - 1);
    if (i.isUnsigned())
      return static_cast<double>(low);
    return static_cast<double>(static_cast<int64_t>(low << (64 - w)) >> (64 - w));
  }
  float f = static_cast<float>(v);
  uint32_t code = dtype == KILN_F8E8M0
                      ? kiln_narrow_encode_e8m0(f, saturate, roundModeCode(roundMode))
                      : kiln_narrow_encode_float(kiln_narrow_float_of(dtype), f, saturate);
  return kiln_narrow_decode(dtype, code);
}
