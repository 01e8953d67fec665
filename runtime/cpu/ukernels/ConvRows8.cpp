//===- ConvRows8.cpp - the rows of an 8-bit convolution's implicit product -===//
//
// kiln_uk_conv_rows8 gathers output pixels' input windows into rows of bytes
// for kiln_uk_q8gemm_pq: row r (image r / (OH * OW)) holds, for each group g
// and tap t = ky * KW + kx, the group's Cg channels at k = (g * KK + t) * Cg
// + c. Reads outside the input are the input's zero point. NHWC copies each
// tap's channels as one run (a kernel row's taps as one when they lie
// inside the input); NCHW reads one byte per channel plane.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime.h"

#include <cstdint>
#include <cstring>

extern "C" void kiln_uk_conv_rows8(int64_t in, int64_t col, int64_t row0, int64_t row1, int64_t H,
                                int64_t W, int64_t C, int64_t OH, int64_t OW, int64_t KH,
                                int64_t KW, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                                int64_t padTop, int64_t padLeft, int64_t G, int64_t nhwc,
                                int64_t zero) {
  const auto *src = reinterpret_cast<const uint8_t *>(in);
  auto *dst = reinterpret_cast<uint8_t *>(col);
  const int64_t Cg = C / G, KK = KH * KW, rowLen = G * KK * Cg, P = OH * OW;
  const auto fill = static_cast<uint8_t>(zero);
  for (int64_t r = row0; r < row1; ++r) {
    uint8_t *row = dst + r * rowLen;
    const int64_t n = r / P, oh = (r % P) / OW, ow = r % OW;
    const uint8_t *image = src + n * H * W * C;
    for (int64_t ky = 0; ky < KH; ++ky) {
      const int64_t ih = oh * sh + ky * dh - padTop;
      const int64_t iw0 = ow * sw - padLeft;
      const bool rowInside = ih >= 0 && ih < H;
      // One group, no dilation, the whole kernel row inside: one run.
      if (nhwc && G == 1 && dw == 1 && rowInside && iw0 >= 0 && iw0 + KW <= W) {
        std::memcpy(row + ky * KW * C, image + (ih * W + iw0) * C, KW * C);
        continue;
      }
      for (int64_t kx = 0; kx < KW; ++kx) {
        const int64_t iw = iw0 + kx * dw, t = ky * KW + kx;
        const bool inside = rowInside && iw >= 0 && iw < W;
        for (int64_t g = 0; g < G; ++g) {
          uint8_t *out = row + (g * KK + t) * Cg;
          if (!inside) {
            std::memset(out, fill, Cg);
          } else if (nhwc) {
            std::memcpy(out, image + (ih * W + iw) * C + g * Cg, Cg);
          } else {
            const uint8_t *at = image + (g * Cg * H + ih) * W + iw;
            for (int64_t c = 0; c < Cg; ++c)
              out[c] = at[c * H * W];
          }
        }
      }
    }
  }
}
