//===- HugePages.h - a model's weights on transparent huge pages -*- C++ -*-===//
#ifndef KILN_RUNTIME_CPU_HUGEPAGES_H
#define KILN_RUNTIME_CPU_HUGEPAGES_H

#include <cstddef>
#include <cstdint>

namespace kiln::rt {

/// The huge page size the weights are aligned to (kiln-compile aligns
/// weights of at least this many bytes to it).
constexpr uintptr_t kHugePage = uintptr_t(2) << 20;

/// Moves the whole 2 MiB pages inside [p, p + bytes) -- a model's weights in
/// the read-only, file-backed mapping of its .so or program -- onto
/// anonymous transparent huge pages holding the same bytes at the same
/// addresses. The kernels stream weights larger than the caches on every
/// run; on 4 KiB pages each page is a TLB miss (a two-level walk in a VM)
/// and a stop for the hardware prefetchers. Copies 2 MiB at a time and drops
/// each copied piece of the file mapping, so the process's peak RSS grows
/// by one piece, not by the weights. Leaves the memory as it is (returns 0)
/// when THP is off, the range is not a private file mapping, or a step
/// fails. Returns the bytes moved.
size_t moveToHugePages(const void *p, size_t bytes);

/// moveToHugePages once per weights address in this process, unless
/// KILN_HUGE_PAGES=0. Thread-safe.
void weightsOnHugePages(const void *weights, size_t bytes);

} // namespace kiln::rt

#endif
