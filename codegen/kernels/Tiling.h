//===- Tiling.h - tile sizes of the matrix products -------------*- C++ -*-===//
//
// How the CPU matrix-product kernels (GEMM convolutions, Gemm, MatMul) tile
// their output among workgroups.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_KERNELS_TILING_H
#define KILN_CODEGEN_KERNELS_TILING_H

#include <cstdint>
#include <utility>

namespace kiln::codegen::kernels {

/// Output tile of a matrix-product workgroup (rows x columns).
constexpr int64_t kTileRows = 144, kTileCols = 512;

/// Enough workgroups to balance over the runtime's threads (workgroups are
/// claimed dynamically, so several per thread smooth out uneven tiles).
constexpr int64_t kMinTiles = 8;

/// Tile sizes for an [rows x cols] matrix product repeated `batches` times:
/// as large as kTileRows x kTileCols, shrunk (columns first, in multiples of
/// 32; then rows, in multiples of 6) until there are kMinTiles tiles.
std::pair<int64_t, int64_t> productTiles(int64_t rows, int64_t cols, int64_t batches);

/// Workgroup tiles of a bf16 matrix product with constant weights B
/// (kiln_uk_sbgemm_pb): up to 128 rows x 512 columns, shrunk rows first (in
/// 32-row blocks, the AMX ukernel's), then columns (whole panels, down to
/// 64), until there are kMinTiles. The ukernel rounds its f32 A once per
/// call for all of the call's columns, so fewer column tiles round each row
/// fewer times (a BERT layer: 2.45 -> 2.06 ms on 2 threads).
std::pair<int64_t, int64_t> bf16Tiles(int64_t rows, int64_t cols, int64_t batches);

} // namespace kiln::codegen::kernels

#endif // KILN_CODEGEN_KERNELS_TILING_H
