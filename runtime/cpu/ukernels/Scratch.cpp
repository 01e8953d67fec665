//===- Scratch.cpp - the ukernels' per-thread scratch ---------------------===//
#include "runtime/cpu/ukernels/Scratch.h"

#include <cstdlib>
#include <cstring>
#include <limits>

namespace kiln::rt {

namespace {
thread_local bool scratchFailed = false;
}

void noteScratchFailure() { scratchFailed = true; }

bool takeScratchFailure() {
  bool failed = scratchFailed;
  scratchFailed = false;
  return failed;
}

ScratchBuffer::~ScratchBuffer() { std::free(data); }

void *ScratchBuffer::get(size_t bytes) {
  if (bytes <= size && data)
    return data;
  if (bytes > std::numeric_limits<size_t>::max() - 64) {
    noteScratchFailure();
    return nullptr;
  }
  size_t rounded = bytes ? (bytes + 63) / 64 * 64 : 64;
  void *p = std::aligned_alloc(64, rounded);
  if (!p) {
    noteScratchFailure();
    return nullptr;
  }
  std::memset(p, 0, rounded);
  std::free(data);
  data = p;
  size = rounded;
  return data;
}

} // namespace kiln::rt
