//===- Packing.h - weights packed for the ukernels --------------*- C++ -*-===//
//
// Constant weights rearranged at compile time into the panels the CPU
// ukernels read (runtime/cpu/ukernels): f32 column panels and bf16 pairs.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_KERNELS_PACKING_H
#define KILN_CODEGEN_KERNELS_PACKING_H

#include "codegen/kernels/Precision.h"

#include <vector>

namespace kiln::codegen::kernels {

/// Weights w(g, k, j) (K x cols per group) packed for kiln_uk_sgemm_pb:
/// per group, ceil(cols / 32) panels of K x 32 floats, k-major, zero past
/// the last column.
template <typename At>
static std::vector<float> packPanels(int64_t groups, int64_t K, int64_t cols, At w) {
  int64_t panels = (cols + 31) / 32;
  std::vector<float> pk(groups * panels * K * 32, 0.0f);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < cols; ++j)
        pk[((g * panels + j / 32) * K + k) * 32 + j % 32] = w(g, k, j);
  return pk;
}

/// Weights w(r, k) (rows x K per group) packed for kiln_uk_sbgemm_pa: bf16
/// rows of Kp (K rounded up to even, a zero after an odd K), group after
/// group: pairs of k are then adjacent, as every bf16 path reads them (AMX
/// loads 16 rows x 16 pairs straight from here).
template <typename At>
static std::vector<char> packBf16A(int64_t groups, int64_t rows, int64_t K, At w) {
  int64_t Kp = (K + 1) / 2 * 2;
  std::vector<uint16_t> pk(groups * rows * Kp, 0);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < K; ++k)
        pk[(g * rows + r) * Kp + k] = bf16Bits(w(g, r, k));
  const char *raw = reinterpret_cast<const char *>(pk.data());
  return std::vector<char>(raw, raw + pk.size() * 2);
}

/// Weights w(k, j) (K x cols) packed for kiln_uk_sbgemm_pb: 32-column panels
/// of 32 * Kp bf16, pairs of k, columns interleaved; zero past the ends.
/// Per group, ceil(cols / 32) panels.
template <typename At>
static std::vector<char> packBf16B(int64_t groups, int64_t K, int64_t cols, At w) {
  int64_t Kp = (K + 1) / 2 * 2, panels = (cols + 31) / 32;
  std::vector<uint16_t> pk(groups * panels * 32 * Kp, 0);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < cols; ++j)
        pk[((g * panels + j / 32) * Kp + k / 2 * 2) * 32 + (j % 32) * 2 + k % 2] =
            bf16Bits(w(g, k, j));
  const char *raw = reinterpret_cast<const char *>(pk.data());
  return std::vector<char>(raw, raw + pk.size() * 2);
}

} // namespace kiln::codegen::kernels

#endif // KILN_CODEGEN_KERNELS_PACKING_H
