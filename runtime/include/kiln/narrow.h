/*===- kiln/narrow.h - float8, float4, 4- and 2-bit integer elements -------===*
 *
 * The narrow element types ONNX stores (FLOAT8E4M3FN, FLOAT8E4M3FNUZ,
 * FLOAT8E5M2, FLOAT8E5M2FNUZ, FLOAT8E8M0, FLOAT4E2M1, INT4, UINT4, INT2,
 * UINT2) and the conversions Kiln uses for them, as C99 inline functions:
 * the runtime converts a model's narrow inputs and outputs between this
 * format (what the caller passes) and the carrier its kernels compute in
 * (kiln_dtype_carrier: f32 for the float types, int8/uint8 for the
 * integers), and an application can use them to fill or read such tensors.
 *
 * Layout, as ONNX's: one byte per float8 element; 4-bit elements two to a
 * byte and 2-bit elements four to a byte, element 0 in the lowest bits; a
 * tensor of n elements takes kiln_tensor_bytes(dtype, n) bytes.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_NARROW_H
#define KILN_NARROW_H

#include <stdint.h>
#include <string.h>

#include "kiln/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How a narrow float type encodes: mantissa bits, exponent bias, the
 *  largest finite magnitude's code, and its special values. */
typedef struct kiln_narrow_float {
  int32_t bits;      /* 8 or 4 */
  int32_t mantissa;  /* stored mantissa bits */
  int32_t bias;      /* exponent bias */
  uint32_t max_code; /* code of the largest finite magnitude (no sign) */
  float max;         /* its value */
  int32_t has_inf;   /* E5M2: exponent all ones, mantissa 0 */
  int32_t nan_uz;    /* FNUZ: the only NaN is the negative zero code (0x80) */
  int32_t has_nan;   /* 0 for FLOAT4E2M1 (no NaN, no inf: always saturates) */
} kiln_narrow_float;

/** The encoding of a narrow float dtype (KILN_F8E8M0 excluded: it has its
 *  own), or 0 for others. */
static inline const kiln_narrow_float *kiln_narrow_float_of(int32_t dtype) {
  static const kiln_narrow_float e4m3fn = {8, 3, 7, 0x7E, 448.0f, 0, 0, 1};
  static const kiln_narrow_float e4m3fnuz = {8, 3, 8, 0x7F, 240.0f, 0, 1, 1};
  static const kiln_narrow_float e5m2 = {8, 2, 15, 0x7B, 57344.0f, 1, 0, 1};
  static const kiln_narrow_float e5m2fnuz = {8, 2, 16, 0x7F, 57344.0f, 0, 1, 1};
  static const kiln_narrow_float e2m1 = {4, 1, 1, 0x7, 6.0f, 0, 0, 0};
  switch (dtype) {
  case KILN_F8E4M3FN: return &e4m3fn;
  case KILN_F8E4M3FNUZ: return &e4m3fnuz;
  case KILN_F8E5M2: return &e5m2;
  case KILN_F8E5M2FNUZ: return &e5m2fnuz;
  case KILN_F4E2M1: return &e2m1;
  default: return 0;
  }
}

static inline float kiln__bits_to_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline uint32_t kiln__float_to_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/** 2^e for -149 <= e <= 127, exactly. */
static inline float kiln__exp2i(int32_t e) {
  if (e >= -126)
    return kiln__bits_to_float((uint32_t)(e + 127) << 23);
  return kiln__bits_to_float(1u << (e + 149));
}

/** The value of a narrow element's bits (the integers sign-extended). */
static inline float kiln_narrow_decode(int32_t dtype, uint32_t code) {
  const kiln_narrow_float *f = kiln_narrow_float_of(dtype);
  if (f) {
    uint32_t sign = code >> (f->bits - 1) & 1;
    uint32_t mag = code & ((1u << (f->bits - 1)) - 1);
    uint32_t m = mag & ((1u << f->mantissa) - 1);
    int32_t e = (int32_t)(mag >> f->mantissa);
    float v;
    if (f->nan_uz && code == 0x80)
      return kiln__bits_to_float(0x7FC00000u);
    if (f->has_inf && e == (1 << (8 - 1 - f->mantissa)) - 1)
      v = m ? kiln__bits_to_float(0x7FC00000u) : kiln__bits_to_float(0x7F800000u);
    else if (!f->has_inf && !f->nan_uz && f->has_nan && mag == 0x7F)
      v = kiln__bits_to_float(0x7FC00000u); /* E4M3FN: S.1111.111 */
    else if (e == 0)
      v = (float)m * kiln__exp2i(1 - f->bias - f->mantissa);
    else
      v = (float)((1u << f->mantissa) + m) * kiln__exp2i(e - f->bias - f->mantissa);
    return sign ? -v : v;
  }
  switch (dtype) {
  case KILN_F8E8M0:
    return code == 0xFF ? kiln__bits_to_float(0x7FC00000u) : kiln__exp2i((int32_t)code - 127);
  case KILN_I4: return (float)((int32_t)(code << 28) >> 28);
  case KILN_I2: return (float)((int32_t)(code << 30) >> 30);
  case KILN_U4: return (float)(code & 0xF);
  case KILN_U2: return (float)(code & 0x3);
  default: return 0.0f;
  }
}

/** x rounded to the narrow float type (nearest, ties to even): its code.
 *  With `saturate`, magnitudes past the largest finite value (infinities
 *  included) become it; without, they become infinity (E5M2) or NaN.
 *  FLOAT4E2M1 always saturates and turns NaN into a zero. */
static inline uint32_t kiln_narrow_encode_float(const kiln_narrow_float *f, float x,
                                                int saturate) {
  uint32_t u = kiln__float_to_bits(x), a = u & 0x7FFFFFFFu;
  uint32_t sign = (u >> 31) << (f->bits - 1);
  uint32_t nan = f->nan_uz ? 0x80u : f->has_inf ? 0x7Fu : 0x7Fu | sign;
  uint32_t over;
  int32_t e, emin = 1 - f->bias, s;
  uint32_t mant, r, rem, half, code;
  if (!f->has_nan)
    saturate = 1;
  over = saturate ? f->max_code | sign
         : f->has_inf ? (0x7Cu | sign)
                      : nan;
  if (a > 0x7F800000u)
    return f->has_nan ? nan : sign;
  if (a == 0x7F800000u)
    return over;
  e = (int32_t)(a >> 23) - 127;
  mant = (a & 0x7FFFFFu) | (e > -127 ? 0x800000u : 0);
  if (e == -127)
    e = -126; /* f32 subnormal */
  s = 23 - f->mantissa + (e < emin ? emin - e : 0);
  if (s > 31)
    s = 31;
  r = mant >> s;
  rem = mant & ((1u << s) - 1);
  half = 1u << (s - 1);
  r += rem > half || (rem == half && (r & 1));
  code = ((uint32_t)((e < emin ? emin : e) + f->bias - 1) << f->mantissa) + r;
  if (r == 0)
    return f->nan_uz ? 0 : sign;
  if (code > f->max_code)
    return over;
  return code | sign;
}

/** x as a FLOAT8E8M0 code (a power of two; the sign is dropped): round_mode
 *  0 rounds up, 1 down, 2 to the nearest (ONNX's Cast round_mode "up",
 *  "down", "nearest"). NaN and infinities give NaN (0xFF); with saturate
 *  a rounding past 2^127 stays there. */
static inline uint32_t kiln_narrow_encode_e8m0(float x, int saturate, int round_mode) {
  uint32_t u = kiln__float_to_bits(x), e = (u >> 23) & 0xFF, up = 0;
  if (e == 0xFF)
    return 0xFF;
  if (round_mode == 0)
    up = (u & 0x7FFFFFu) != 0;
  else if (round_mode == 2)
    up = (u & 0x400000u) && ((u & 0x3FFFFFu) || e > 0);
  if (saturate && e == 0xFE)
    up = 0;
  return e + up;
}

/** Element i's code in a packed narrow tensor. */
static inline uint32_t kiln_narrow_get(int32_t dtype, const void *data, int64_t i) {
  const uint8_t *p = (const uint8_t *)data;
  int32_t bits = kiln_dtype_bits(dtype);
  if (bits == 8)
    return p[i];
  if (bits == 4)
    return (p[i >> 1] >> ((i & 1) * 4)) & 0xF;
  return (p[i >> 2] >> ((i & 3) * 2)) & 0x3;
}

/** Stores element i's code into a packed narrow tensor. */
static inline void kiln_narrow_set(int32_t dtype, void *data, int64_t i, uint32_t code) {
  uint8_t *p = (uint8_t *)data;
  int32_t bits = kiln_dtype_bits(dtype);
  if (bits == 8) {
    p[i] = (uint8_t)code;
  } else if (bits == 4) {
    int sh = (int)(i & 1) * 4;
    p[i >> 1] = (uint8_t)((p[i >> 1] & ~(0xF << sh)) | ((code & 0xF) << sh));
  } else {
    int sh = (int)(i & 3) * 2;
    p[i >> 2] = (uint8_t)((p[i >> 2] & ~(0x3 << sh)) | ((code & 0x3) << sh));
  }
}

/** Unpacks n narrow elements into their carrier (kiln_dtype_carrier: f32
 *  values, or int8/uint8 integers). */
static inline void kiln_narrow_to_carrier(int32_t dtype, const void *src, void *dst,
                                          int64_t n) {
  int64_t i;
  int32_t carrier = kiln_dtype_carrier(dtype);
  for (i = 0; i < n; ++i) {
    float v = kiln_narrow_decode(dtype, kiln_narrow_get(dtype, src, i));
    if (carrier == KILN_F32)
      ((float *)dst)[i] = v;
    else if (carrier == KILN_I8)
      ((int8_t *)dst)[i] = (int8_t)v;
    else
      ((uint8_t *)dst)[i] = (uint8_t)v;
  }
}

/** Packs n carrier elements (values the narrow type holds: kernels round
 *  to it) into the narrow type; integers keep their low bits. */
static inline void kiln_narrow_from_carrier(int32_t dtype, const void *src, void *dst,
                                            int64_t n) {
  int64_t i;
  const kiln_narrow_float *f = kiln_narrow_float_of(dtype);
  int32_t carrier = kiln_dtype_carrier(dtype);
  for (i = 0; i < n; ++i) {
    uint32_t code;
    if (f)
      code = kiln_narrow_encode_float(f, ((const float *)src)[i], 1);
    else if (dtype == KILN_F8E8M0)
      code = kiln_narrow_encode_e8m0(((const float *)src)[i], 1, 1);
    else if (carrier == KILN_I8)
      code = (uint32_t)(uint8_t)((const int8_t *)src)[i];
    else
      code = ((const uint8_t *)src)[i];
    kiln_narrow_set(dtype, dst, i, code);
  }
}

#ifdef __cplusplus
}
#endif

#endif /* KILN_NARROW_H */
