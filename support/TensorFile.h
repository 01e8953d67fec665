//===- TensorFile.h - .npy and ONNX TensorProto (.pb) files -----*- C++ -*-===//
#ifndef KILN_SUPPORT_TENSORFILE_H
#define KILN_SUPPORT_TENSORFILE_H

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::support {

struct HostArray {
  int32_t dtype = 0;            // kiln_dtype
  std::vector<int64_t> shape;
  std::vector<char> data;       // C order
  size_t elementSize() const;   // 0 for packed 4- and 2-bit types
  size_t bytes() const;         // of all elements (packed types included)
  int64_t numElements() const;
  double at(int64_t i) const;   // element i widened to double
};

/// Reads a .npy (format 1-3, C order) or ONNX TensorProto .pb file.
/// numpy has no bfloat16: bf16 arrays come from .pb files, or from float32
/// .npy files through toBf16.
bool readTensorFile(const std::string &path, HostArray &out, std::string &error);
/// Writes a .npy; bf16 arrays and the narrow types (float8, float4, 4- and
/// 2-bit integers, which numpy lacks) are written as float32 (exactly).
bool writeNpy(const std::string &path, const HostArray &a, std::string &error);
/// Rounds a float32 array to bfloat16 (nearest even) in place.
void toBf16(HostArray &a);
/// Converts a numeric array to a narrow dtype (kiln/narrow.h) in place:
/// floats round to nearest even and saturate (float8e8m0: to the nearest
/// power of two), integers wrap; packed.
void toNarrow(HostArray &a, int32_t dtype);
const char *dtypeName(int32_t dtype);

} // namespace kiln::support

#endif
