//===- Packing.h - weights packed for the ukernels --------------*- C++ -*-===//
//
// Constant weights rearranged at compile time into the panels the CPU
// ukernels read (runtime/cpu/ukernels): f32 column panels, bf16 pairs and
// 8-bit quads.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_KERNELS_PACKING_H
#define KILN_CODEGEN_KERNELS_PACKING_H

#include "codegen/kernels/Precision.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
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

/// 8-bit weights packed for kiln_uk_q8gemm_pq, group after group.
struct PackedQ8 {
  std::vector<char> bytes;
  int64_t ldb = 0;        // bytes from one 16-column panel to the next
  int64_t groupBytes = 0; // bytes from one group's panels to the next
  int64_t shift = 0;      // the ukernel's b_shift
};

/// Weights v(g, k, j) -- 8-bit weights less their zero point, K x cols per
/// group -- packed for kiln_uk_q8gemm_pq: per group, ceil(cols / 16) panels
/// of quads of k (each quad's 16 columns 4 bytes apart), then each panel's
/// 16 column sums as int32; zero past K and past the last column. Values
/// stored less one shift, 0 where they all fit 8 signed bits (they span at
/// most 255: one zero point per tensor).
template <typename At>
static PackedQ8 packQ8Quads(int64_t groups, int64_t K, int64_t cols, At v) {
  int32_t lo = 0, hi = 0;
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < cols; ++j)
        lo = std::min<int32_t>(lo, v(g, k, j)), hi = std::max<int32_t>(hi, v(g, k, j));
  PackedQ8 pk;
  pk.shift = lo >= -128 && hi <= 127 ? 0 : lo + 128;
  int64_t quads = (K + 3) / 4, panels = (cols + 15) / 16;
  pk.ldb = 64 * quads + 64;
  pk.groupBytes = panels * pk.ldb;
  pk.bytes.assign(groups * pk.groupBytes, 0);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t j = 0; j < cols; ++j) {
      char *panel = pk.bytes.data() + g * pk.groupBytes + (j / 16) * pk.ldb;
      uint32_t sum = 0;
      for (int64_t k = 0; k < K; ++k) {
        auto b = static_cast<int8_t>(v(g, k, j) - pk.shift);
        panel[(k / 4) * 64 + (j % 16) * 4 + k % 4] = static_cast<char>(b);
        sum += static_cast<uint32_t>(static_cast<int32_t>(b));
      }
      std::memcpy(panel + 64 * quads + (j % 16) * 4, &sum, 4);
    }
  return pk;
}

} // namespace kiln::codegen::kernels

#endif // KILN_CODEGEN_KERNELS_PACKING_H
