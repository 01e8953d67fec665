//===- ThreadPool.cpp - the workgroup thread pool --------------------------===//
#include "runtime/cpu/ThreadPool.h"

#include <chrono>

namespace kiln::rt {

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i)
    workers.emplace_back([this] { work(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping = true;
  }
  wake.notify_all();
  for (auto &t : workers)
    t.join();
}

void ThreadPool::drain() {
  int64_t claimed = 0;
  for (int64_t wg; (wg = next.fetch_add(1, std::memory_order_acquire)) <
                   total.load(std::memory_order_relaxed);) {
    fn(args, wg);
    ++claimed;
  }
  if (claimed)
    done.fetch_add(claimed, std::memory_order_acq_rel);
}

void ThreadPool::work() {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu);
  for (;;) {
    wake.wait(lock, [&] { return stopping || generation != seen; });
    if (stopping)
      return;
    seen = generation;
    ++active;
    lock.unlock();
    drain();
    lock.lock();
    if (--active == 0)
      finished.notify_all();
  }
}

void ThreadPool::parallelFor(kiln_kernel_fn f, void *const *a, int64_t n) {
  if (!profiling)
    return runJob(f, a, n);
  auto t0 = std::chrono::steady_clock::now();
  runJob(f, a, n);
  launchMs.push_back(std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - t0)
                         .count());
}

void ThreadPool::runJob(kiln_kernel_fn f, void *const *a, int64_t n) {
  if (n <= 0)
    return;
  if (workers.empty() || n == 1) {
    for (int64_t wg = 0; wg < n; ++wg)
      f(a, wg);
    return;
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    // A worker that woke late for the previous job may still be draining it
    // (finding no work): let it leave before the job's state is rewritten.
    finished.wait(lock, [&] { return active == 0; });
    fn = f;
    args = a;
    total.store(n, std::memory_order_relaxed);
    done.store(0);
    next.store(0, std::memory_order_release);
    ++generation;
  }
  wake.notify_all();
  drain();
  std::unique_lock<std::mutex> lock(mu);
  // All workgroups done and no worker still reading this job's state.
  finished.wait(lock, [&] { return done.load() == total.load() && active == 0; });
}

} // namespace kiln::rt
