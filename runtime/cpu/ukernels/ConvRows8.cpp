//===- ConvRows8.cpp - the rows of an 8-bit convolution's implicit product -===//
//
// kiln_uk_conv_rows8 gathers output pixels' input windows into rows of bytes
// for kiln_uk_q8gemm_pq: row r (image r / (OH * OW)) holds, for each group g
// and tap t = ky * KW + kx, the group's Cg channels at k = (g * KK + t) * Cg
// + c. Reads outside the input are the input's zero point. NHWC copies each
// tap's channels as one run (with one group and no dilation, a kernel row's
// taps inside the input as one); NCHW reads one byte per channel plane.
//
//===----------------------------------------------------------------------===//
#include "kiln/runtime.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace {

/// Copies n bytes: runs of a few to a few hundred bytes (a tap's or a
/// kernel row's channels), in 16-byte pieces inline -- the last one
/// overlapping -- where a call to memcpy per run cost more than the copy
/// (a 3-channel stem's 21-byte kernel rows).
inline void copyRun(uint8_t *dst, const uint8_t *src, int64_t n) {
  if (n >= 16) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
      std::memcpy(dst + i, src + i, 16);
    if (i < n)
      std::memcpy(dst + n - 16, src + n - 16, 16);
    return;
  }
  if (n >= 8) {
    std::memcpy(dst, src, 8);
    std::memcpy(dst + n - 8, src + n - 8, 8);
    return;
  }
  if (n >= 4) {
    std::memcpy(dst, src, 4);
    std::memcpy(dst + n - 4, src + n - 4, 4);
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    dst[i] = src[i];
}

inline void fillRun(uint8_t *dst, uint8_t value, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dst[i] = value;
}

} // namespace

extern "C" void kiln_uk_conv_rows8(int64_t in, int64_t col, int64_t row0, int64_t row1, int64_t H,
                                int64_t W, int64_t C, int64_t OH, int64_t OW, int64_t KH,
                                int64_t KW, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                                int64_t padTop, int64_t padLeft, int64_t G, int64_t nhwc,
                                int64_t zero) {
  const auto *src = reinterpret_cast<const uint8_t *>(in);
  auto *dst = reinterpret_cast<uint8_t *>(col);
  const int64_t Cg = C / G, KK = KH * KW, rowLen = G * KK * Cg, P = OH * OW;
  const auto fill = static_cast<uint8_t>(zero);
  // (The pixel's coordinates advance with r: three divisions a row cost
  // more than a small-channel row's copy.)
  int64_t n = row0 / P, oh = (row0 % P) / OW, ow = row0 % OW;
  for (int64_t r = row0; r < row1; ++r, ++ow) {
    if (ow == OW) {
      ow = 0;
      if (++oh == OH)
        oh = 0, ++n;
    }
    uint8_t *row = dst + r * rowLen;
    const uint8_t *image = src + n * H * W * C;
    for (int64_t ky = 0; ky < KH; ++ky) {
      const int64_t ih = oh * sh + ky * dh - padTop;
      const int64_t iw0 = ow * sw - padLeft;
      const bool rowInside = ih >= 0 && ih < H;
      // One group, no dilation: the kernel row's taps inside the input are
      // one run, those in the padding the zero point.
      if (nhwc && G == 1 && dw == 1) {
        uint8_t *out = row + ky * KW * C;
        if (!rowInside) {
          fillRun(out, fill, KW * C);
          continue;
        }
        const int64_t lo = std::min<int64_t>(std::max<int64_t>(-iw0, 0), KW);
        const int64_t hi = std::max<int64_t>(std::min<int64_t>(W - iw0, KW), lo);
        fillRun(out, fill, lo * C);
        copyRun(out + lo * C, image + (ih * W + iw0 + lo) * C, (hi - lo) * C);
        fillRun(out + hi * C, fill, (KW - hi) * C);
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
