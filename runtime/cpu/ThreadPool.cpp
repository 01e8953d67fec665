//===- ThreadPool.cpp - the workgroup thread pool --------------------------===//
#include "runtime/cpu/ThreadPool.h"
#include "runtime/cpu/ukernels/Scratch.h"

#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#define KILN_PAUSE() _mm_pause()
#else
#define KILN_PAUSE() ((void)0)
#endif

namespace kiln::rt {

ThreadPool::ThreadPool(int threads) : shares(threads < 1 ? 1 : threads) {
  try {
    workers.reserve(threads < 1 ? 0 : threads - 1);
    for (int i = 1; i < threads; ++i)
      workers.emplace_back([this, i] { work(i); });
  } catch (...) {
    // (a thread that cannot be started: the ones that were are stopped
    // before the exception leaves, or their destructors would terminate)
    stop();
    throw;
  }
}

ThreadPool::~ThreadPool() { stop(); }

void ThreadPool::stop() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping.store(true);
  }
  wake.notify_all();
  for (auto &t : workers)
    t.join();
  workers.clear();
}

void ThreadPool::drain(int self) {
  int64_t claimed = 0;
  int n = static_cast<int>(shares.size());
  // Its own share first, then the others' (the next thread's first).
  for (int i = 0; i < n; ++i) {
    Share &s = shares[(self + i) % n];
    for (int64_t wg; (wg = s.next.fetch_add(1, std::memory_order_acquire)) < s.end;) {
      fn(args, wg);
      ++claimed;
    }
  }
  if (kiln::rt::takeScratchFailure())
    scratchFailed.store(true, std::memory_order_relaxed);
  if (claimed)
    done.fetch_add(claimed, std::memory_order_acq_rel);
}

bool ThreadPool::takeScratchFailure() {
  // (the workers' marks are stored before their `done` count, which the
  // caller waited for; the caller's own is its thread's)
  bool caller = kiln::rt::takeScratchFailure();
  return scratchFailed.exchange(false) || caller;
}

/// How long a thread spins (with a pause) for the next job, or for the
/// last workgroups of its own, before it blocks: 1 ms, longer than the
/// serial stretches inside a model run (single-workgroup kernels) and the
/// caller's work between runs. Measured in time, not iterations: a pause
/// takes 10 ns on some CPUs and 40 on others. A thread that blocks must be
/// woken, and on a virtual machine waking a CPU that went idle costs
/// hundreds of microseconds: with a 40 us spin, MobileNetV2 on 2 threads
/// ran 2x slower for several calls after the caller had slept 0.5 s.
constexpr auto kSpinTime = std::chrono::microseconds(1000);

/// Spins until done() or kSpinTime has passed; returns done().
template <typename Done> static bool spinFor(Done done) {
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done())
        return true;
      KILN_PAUSE();
    }
    if (std::chrono::steady_clock::now() - start > kSpinTime)
      return done();
  }
}

void ThreadPool::work(int self) {
  uint64_t seen = 0;
  for (;;) {
    // Spin for the next job, then sleep.
    spinFor([&] {
      return generation.load(std::memory_order_acquire) != seen ||
             stopping.load(std::memory_order_relaxed);
    });
    std::unique_lock<std::mutex> lock(mu);
    if (generation.load() == seen && !stopping.load()) {
      ++sleepers;
      wake.wait(lock, [&] { return stopping.load() || generation.load() != seen; });
      --sleepers;
    }
    if (stopping.load())
      return;
    // Registered under the lock: a job is never rewritten while active > 0.
    seen = generation.load();
    active.fetch_add(1);
    lock.unlock();
    drain(self);
    if (active.fetch_sub(1) == 1) {
      lock.lock();
      finished.notify_all();
    }
  }
}

void ThreadPool::parallelFor(kiln_kernel_fn f, void *const *a, int64_t n) {
  if (!profiling)
    return runJob(f, a, n);
  auto t0 = std::chrono::steady_clock::now();
  runJob(f, a, n);
  // (called from generated code, which no exception may cross: a timing
  // that finds no memory is dropped)
  try {
    launchMs.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  } catch (...) {
  }
}

void ThreadPool::runJob(kiln_kernel_fn f, void *const *a, int64_t n) {
  if (n <= 0)
    return;
  if (workers.empty() || n == 1) {
    for (int64_t wg = 0; wg < n; ++wg)
      f(a, wg);
    return;
  }
  bool wakeSleepers;
  {
    std::unique_lock<std::mutex> lock(mu);
    // A worker that woke late for the previous job may still be draining it
    // (finding no work): let it leave before the job's state is rewritten.
    finished.wait(lock, [&] { return active.load() == 0; });
    fn = f;
    args = a;
    total.store(n, std::memory_order_relaxed);
    done.store(0);
    int64_t t = static_cast<int64_t>(shares.size());
    for (int64_t i = 0; i < t; ++i) {
      shares[i].end = n * (i + 1) / t;
      shares[i].next.store(n * i / t, std::memory_order_relaxed);
    }
    generation.fetch_add(1, std::memory_order_release);
    wakeSleepers = sleepers > 0;
  }
  if (wakeSleepers)
    wake.notify_all();
  drain(0);
  // All workgroups done and no worker still reading this job's state: spin
  // briefly, then sleep.
  auto finishedJob = [&] { return done.load() == total.load() && active.load() == 0; };
  if (!spinFor(finishedJob)) {
    std::unique_lock<std::mutex> lock(mu);
    finished.wait(lock, finishedJob);
  }
}

} // namespace kiln::rt
