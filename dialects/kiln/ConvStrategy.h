//===- ConvStrategy.h - how a kiln.conv computes: direct, product, Winograd -*- C++ -*-===//
//
// The rules that decide how a convolution is computed, in one place: the
// graph passes that weigh or rewrite convolutions (kiln-select-layout's cost
// model, kiln-rematerialize's prologues) and the kernel lowering
// (codegen/kernels/ConvNchw.cpp, ConvNhwc.cpp) all ask these, so a rule
// cannot drift between the stage that plans for a kernel and the stage that
// builds it.
//
// - Direct: few channels per group (depthwise and similar) have too little
//   reduction and too few output channels for a matrix product; they run as
//   a direct loop nest (no im2col gather, no prologue).
// - Product: an implicit GEMM over the gathered input (1x1 stride-1
//   convolutions read the input as it is).
// - Winograd F(2x2, 3x3) (NHWC, f32, constant weights): 3x3 stride-1
//   convolutions with enough channels and output pixels.
//
// The figures below come from python/kiln_models' conv3x3_stack at a size and
// channel count, compiled with --layout=nhwc with and without
// --disable-pass=kiln-winograd (or --layout=nchw), timed by bench/ab.py in
// both orders.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECTS_KILN_CONVSTRATEGY_H
#define KILN_DIALECTS_KILN_CONVSTRATEGY_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>

namespace kiln::conv_strategy {

/// A matrix product needs at least this deep a reduction (channels per
/// group times the kernel window) and this many output channels per group.
constexpr int64_t kProductMinDepth = 16;
constexpr int64_t kProductMinOutputsPerGroup = 4;

/// Whether a convolution whose reduction is `depth` (Cg * KH * KW) deep and
/// which has `outputsPerGroup` output channels per group runs as a direct
/// loop nest rather than a matrix product.
inline bool isDirect(int64_t depth, int64_t outputsPerGroup) {
  return depth < kProductMinDepth || outputsPerGroup < kProductMinOutputsPerGroup;
}

/// Winograd F(2x2, 3x3) needs this many input and output channels: below,
/// its transforms and the narrow products over the channels cost more than
/// they save (four 3x3 convs in NHWC, Winograd against the direct products:
/// 16 channels 1.05-1.55x slower at 8x8-28x28, 24 channels 1.11-1.87x
/// slower, 32 channels 0.70x at 28x28 and 0.96x at 8x8; 1 thread).
constexpr int64_t kWinogradMinChannels = 32;
/// Output pixels per image from which a plain build (no --autotune) takes
/// Winograd, and kiln-select-layout's cost model counts on it: from a 7 x 7
/// image on, the transformed weights (16/9 the bytes) stream behind the
/// products once each panel's next block is prefetched. (Four 3x3 convs of
/// 64-512 channels at 8 x 8 or 9 x 9: 1.6-2.1x faster in NHWC with
/// Winograd than in NCHW with the direct products.)
constexpr int64_t kWinogradMinPixels = 49;
/// The fewest output pixels per image --autotune tries Winograd on.
constexpr int64_t kWinogradTunePixels = 16;
/// With --winograd-f43, the F(4x4, 3x3) form from this many output pixels
/// per image (ResNet-50's 56x56 and 28x28 convs; its 14x14 ones would pad
/// to 16x16 and stream 2.25x the transformed weights of F(2x2, 3x3)).
constexpr int64_t kWinograd43MinPixels = 400;

/// The shape conditions of Winograd's form: one group, a 3x3 window of
/// stride 1 and dilation 1, and at least kWinogradMinChannels input and
/// output channels. (Element types, constant weights and the pixel
/// threshold are the caller's to check.)
inline bool winogradShape(int64_t groups, int64_t KH, int64_t KW,
                          llvm::ArrayRef<int64_t> strides, llvm::ArrayRef<int64_t> dilations,
                          int64_t inChannels, int64_t outChannels) {
  return groups == 1 && KH == 3 && KW == 3 && strides[0] == 1 && strides[1] == 1 &&
         dilations[0] == 1 && dilations[1] == 1 && inChannels >= kWinogradMinChannels &&
         outChannels >= kWinogradMinChannels;
}

/// Whether a depthwise NHWC convolution (one input and one output channel
/// per group, constant weights) runs in the direct kernel's register form:
/// at most 64 taps, and its KH input rows, zero-padded to `paddedWidth`
/// columns, fit the workgroup's 64K-float stack buffer. Only that form reads
/// an 8-bit input through its dequantization and writes an 8-bit result
/// (kiln-fuse's byte convolutions, codegen/kernels/ConvNhwcDirect.cpp).
inline bool depthwiseInRegisters(int64_t KH, int64_t KW, int64_t paddedWidth,
                                 int64_t channels) {
  return KH * KW <= 64 && KH * paddedWidth * channels <= 65536;
}

/// Whether such a conv reading an 8-bit input through a prologue fits its
/// ring of converted rows -- the (KH - 1) * dilation + 1 rows a window
/// spans, 16 floats a padded pixel -- in the same 64K floats of stack.
inline bool byteRingFits(int64_t KH, int64_t dilationH, int64_t paddedWidth) {
  return ((KH - 1) * dilationH + 1) * paddedWidth * 16 <= 65536;
}

} // namespace kiln::conv_strategy

#endif // KILN_DIALECTS_KILN_CONVSTRATEGY_H
