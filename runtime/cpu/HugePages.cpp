//===- HugePages.cpp - a model's weights on transparent huge pages ---------===//
#include "runtime/cpu/HugePages.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace kiln::rt {

#if defined(__linux__)
namespace {

/// Whether the kernel gives huge pages to a madvise'd range ("always" or
/// "madvise" in /sys/kernel/mm/transparent_hugepage/enabled).
bool thpAvailable() {
  FILE *f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
  if (!f)
    return false;
  char line[128] = {};
  bool ok = std::fgets(line, sizeof line, f) &&
            (std::strstr(line, "[always]") || std::strstr(line, "[madvise]"));
  std::fclose(f);
  return ok;
}

/// Whether every mapping over [lo, hi) is a private mapping of a file: then
/// MADV_DONTNEED only drops pages that fault back in from the file (on an
/// anonymous mapping it would zero them).
bool privateFileMapping(uintptr_t lo, uintptr_t hi) {
  FILE *f = std::fopen("/proc/self/maps", "r");
  if (!f)
    return false;
  char line[4096];
  uintptr_t covered = lo;
  bool ok = true;
  while (ok && std::fgets(line, sizeof line, f)) {
    unsigned long start = 0, end = 0, inode = 0;
    char perms[8] = {};
    if (std::sscanf(line, "%lx-%lx %7s %*s %*s %lu", &start, &end, perms, &inode) != 4)
      continue;
    if (end <= lo || start >= hi)
      continue;
    if (start > covered || inode == 0 || perms[0] != 'r' || perms[3] != 'p')
      ok = false;
    covered = end;
  }
  std::fclose(f);
  return ok && covered >= hi;
}

} // namespace

size_t moveToHugePages(const void *p, size_t bytes) {
  uintptr_t at = reinterpret_cast<uintptr_t>(p);
  uintptr_t lo = (at + kHugePage - 1) & ~(kHugePage - 1), hi = (at + bytes) & ~(kHugePage - 1);
  if (!p || hi <= lo || !thpAvailable() || !privateFileMapping(lo, hi))
    return 0;
  size_t len = hi - lo;
  // A huge-page-aligned anonymous range: map one page more, trim the ends.
  char *raw = static_cast<char *>(mmap(nullptr, len + kHugePage, PROT_READ | PROT_WRITE,
                                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (raw == MAP_FAILED)
    return 0;
  char *tmp = reinterpret_cast<char *>((reinterpret_cast<uintptr_t>(raw) + kHugePage - 1) &
                                       ~(kHugePage - 1));
  if (tmp > raw)
    munmap(raw, tmp - raw);
  if (raw + kHugePage > tmp)
    munmap(tmp + len, raw + kHugePage - tmp);
  if (madvise(tmp, len, MADV_HUGEPAGE) != 0) {
    munmap(tmp, len);
    return 0;
  }
  char *src = reinterpret_cast<char *>(lo);
  for (size_t off = 0; off < len; off += kHugePage) {
    std::memcpy(tmp + off, src + off, kHugePage);
    madvise(src + off, kHugePage, MADV_DONTNEED);
  }
  // The same bytes, read-only, at the weights' addresses (replacing the
  // file mapping there; a failure leaves it, its pages faulting back in).
  if (mprotect(tmp, len, PROT_READ) != 0 ||
      mremap(tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, src) == MAP_FAILED) {
    munmap(tmp, len);
    return 0;
  }
  return len;
}
#else
size_t moveToHugePages(const void *, size_t) { return 0; }
#endif

void weightsOnHugePages(const void *weights, size_t bytes) {
  if (!weights || bytes < kHugePage)
    return;
  if (const char *env = std::getenv("KILN_HUGE_PAGES"); env && std::strcmp(env, "0") == 0)
    return;
  static std::mutex mu;
  static std::set<const void *> done;
  std::lock_guard<std::mutex> lock(mu);
  if (done.insert(weights).second)
    moveToHugePages(weights, bytes);
}

} // namespace kiln::rt
