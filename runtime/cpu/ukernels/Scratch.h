//===- Scratch.h - the ukernels' per-thread scratch, without exceptions -*- C++ -*-===//
//
// The matrix-product ukernels pack and widen blocks of their operands into
// scratch each thread keeps from call to call. They run inside generated
// code that no exception may cross, so the scratch grows with malloc: a
// failure returns null and marks the thread, the ukernel returns without
// writing its output, and the run that called it fails with
// KILN_ERROR_OUT_OF_MEMORY (the thread pool gathers the marks of the threads
// that ran the run's workgroups; Instance.cpp reports them).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_CPU_UKERNELS_SCRATCH_H
#define KILN_RUNTIME_CPU_UKERNELS_SCRATCH_H

#include <cstddef>

namespace kiln::rt {

/// Marks this thread: a ukernel found no scratch memory.
void noteScratchFailure();
/// Whether this thread was marked since the last call (and clears it).
bool takeScratchFailure();

/// One growing buffer of one thread.
class ScratchBuffer {
public:
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer &) = delete;
  ScratchBuffer &operator=(const ScratchBuffer &) = delete;
  ~ScratchBuffer();
  /// At least `bytes`, 64-byte aligned (contents kept only while it does not
  /// grow; new memory is zero); null, with the thread marked, when the
  /// memory is not there.
  void *get(size_t bytes);
  template <typename T> T *get(size_t n) { return static_cast<T *>(get(n * sizeof(T))); }

private:
  void *data = nullptr;
  size_t size = 0;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_UKERNELS_SCRATCH_H
