//===- Precision.h - bf16/fp16 lowering decisions and conversions ----*- C++ -*-===//
//
// Which contractions compute in bf16 or fp16 (kiln-lower-precision's
// marks), weights converted to half types at compile time, and values
// rounded to or widened from bf16 as kernels load and store them.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_KERNELS_PRECISION_H
#define KILN_CODEGEN_KERNELS_PRECISION_H

#include "codegen/kernels/KernelEmitter.h"

#include <vector>

namespace kiln::codegen::kernels {

/// --precision=bf16 on the CPU: kiln-lower-precision marked this contraction
/// bf16, so its constant weights are packed as bf16 for the runtime's bf16
/// ukernels (their other operand is rounded as the ukernel packs it).
bool lowersToBf16(Operation *op);

/// --precision=fp16 on the CPU: the contraction's constant weights are
/// stored as IEEE half (half the bytes) for the fp16 ukernels
/// (kiln_uk_hgemm/_hgemm_pa), which widen them to f32 as they read them.
bool lowersToF16(Operation *op);

/// Packed f32 weights as constant bytes: f32, or (fp16) IEEE half.
std::vector<char> weightBytes(ArrayRef<float> v, bool half);

/// f32 `v` rounded to the precision kiln-lower-precision gave `op` (bf16 or
/// f16 values, still f32), or `v` where it gave none: attention rounds its
/// result in its kernel.
Value roundedToPrecision(KernelEmitter &e, Operation *op, Value v);

/// f32 -> bf16 bits, nearest even (as arith.truncf and the ukernels round).
uint16_t bf16Bits(float x);

/// Whether buffer `out` and buffers [first, first + n) hold f32 (an
/// epilogue can then run on 16-lane vectors).
bool f32Buffers(KernelEmitter &e, int out, int first, int64_t n);

/// `v` (a scalar or vector) as f32 where it is a float (bf16 storage read
/// back); integers as they are.
Value asF32(KernelEmitter &e, Value v);

/// Stores f32 `v` (a scalar or a vector of e.lanes values, of which only
/// the lanes of `mask` when given) into buffer `buf` at `at`, converted to
/// the buffer's element type (bf16 rows).
void storeRounded(KernelEmitter &e, Value v, int buf, Value at, Value mask = {});

/// f32 `v` holds bf16 values: a rounding pair (f32 -> bf16 -> f32), or a
/// relu, negation or absolute value of one.
bool holdsBf16(Value v);

/// Whether every reader of the top-level value `v` reads it as bf16
/// storage: NHWC bf16 convolutions of the matrix-product kind (as their
/// input -- an even channel count when pointwise, read in place -- or as an
/// elementwise epilogue operand) and NHWC max pools.
bool bf16Readers(Value v);

} // namespace kiln::codegen::kernels

#endif // KILN_CODEGEN_KERNELS_PRECISION_H
