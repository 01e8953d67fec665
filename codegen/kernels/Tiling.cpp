//===- Tiling.cpp - tile sizes of the matrix products ---------------------===//
//
// Row and column tiles of the f32 and bf16 matrix-product kernels.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Lowering.h"
#include "codegen/kernels/Tiling.h"

#include <algorithm>

using namespace mlir;

namespace kiln::codegen::kernels {

/// Tile sizes for an [rows x cols] matrix product repeated `batches` times:
/// as large as kTileRows x kTileCols, shrunk (columns first, in multiples of
/// 32; then rows, in multiples of 6) until there are kMinTiles tiles.
std::pair<int64_t, int64_t> productTiles(int64_t rows, int64_t cols, int64_t batches) {
  // Row tiles of balanced height (in 6-row ukernel groups): 197 rows (a
  // ViT's tokens) are 102 + 95, not 144 + 53.
  int64_t rb = rows <= kTileRows ? rows : ceilDiv(ceilDiv(rows, ceilDiv(rows, kTileRows)), 6) * 6;
  int64_t cb = std::min(cols, kTileCols);
  auto tiles = [&] { return batches * ceilDiv(rows, rb) * ceilDiv(cols, cb); };
  while (tiles() < kMinTiles && cb > 64)
    cb = std::max<int64_t>(64, (cb / 2 + 31) / 32 * 32);
  while (tiles() < kMinTiles && rb > 24)
    rb = std::max<int64_t>(24, (rb / 2 + 5) / 6 * 6);
  // A count that 2, 4 and 8 threads share evenly: nine tiles on two
  // threads run as five (BERT's QKV projection, 2304 columns: 9 tiles of
  // 256 -> 8 of 288). Column tiles of whole panels, at most kTileCols.
  int64_t t = tiles();
  if (t % kMinTiles != 0 && t < 8 * kMinTiles) {
    int64_t other = t / ceilDiv(cols, cb);
    for (int64_t want : {t / kMinTiles * kMinTiles, ceilDiv(t, kMinTiles) * kMinTiles}) {
      if (want < kMinTiles || want % other != 0)
        continue;
      int64_t colTiles = want / other;
      int64_t c2 = ceilDiv(ceilDiv(cols, colTiles), 32) * 32;
      if (c2 >= 64 && c2 <= kTileCols && ceilDiv(cols, c2) == colTiles) {
        cb = c2;
        break;
      }
    }
  }
  return {rb, cb};
}

/// Workgroup tiles of a bf16 matrix product with constant weights B
/// (kiln_uk_sbgemm_pb): up to 128 rows x 512 columns, shrunk rows first (in
/// 32-row blocks, the AMX ukernel's), then columns (whole panels, down to
/// 64), until there are kMinTiles. The ukernel rounds its f32 A once per
/// call for all of the call's columns, so fewer column tiles round each row
/// fewer times (a BERT layer: 2.45 -> 2.06 ms on 2 threads).
std::pair<int64_t, int64_t> bf16Tiles(int64_t rows, int64_t cols, int64_t batches) {
  int64_t rb = std::min<int64_t>(rows, 128), cb = std::min<int64_t>(cols, 512);
  auto tiles = [&] { return batches * ceilDiv(rows, rb) * ceilDiv(cols, cb); };
  while (tiles() < kMinTiles && rb > 32)
    rb = std::max<int64_t>(32, (rb / 2 + 31) / 32 * 32);
  while (tiles() < kMinTiles && cb > 64)
    cb = std::max<int64_t>(64, (cb / 2 + 31) / 32 * 32);
  return {rb, cb};
}

} // namespace kiln::codegen::kernels
