//===- TensorFile.h - .npy and ONNX TensorProto (.pb) files -----*- C++ -*-===//
#ifndef KILN_TOOLS_KILN_RUN_TENSORFILE_H
#define KILN_TOOLS_KILN_RUN_TENSORFILE_H

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::tools {

struct HostArray {
  int32_t dtype = 0;            // kiln_dtype
  std::vector<int64_t> shape;
  std::vector<char> data;       // C order
  size_t elementSize() const;
  int64_t numElements() const;
  double at(int64_t i) const;   // element i widened to double
};

/// Reads a .npy (format 1-3, C order) or ONNX TensorProto .pb file.
/// numpy has no bfloat16: bf16 arrays come from .pb files, or from float32
/// .npy files through toBf16.
bool readTensorFile(const std::string &path, HostArray &out, std::string &error);
/// Writes a .npy; bf16 arrays are written as float32 (exactly).
bool writeNpy(const std::string &path, const HostArray &a, std::string &error);
/// Rounds a float32 array to bfloat16 (nearest even) in place.
void toBf16(HostArray &a);
const char *dtypeName(int32_t dtype);

} // namespace kiln::tools

#endif
