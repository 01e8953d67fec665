//===- ThreadPool.h - the workgroup thread pool of one instance -*- C++ -*-===//
#ifndef KILN_RUNTIME_CPU_THREADPOOL_H
#define KILN_RUNTIME_CPU_THREADPOOL_H

#include "kiln/runtime.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::rt {

/// Runs the workgroups of one kernel at a time on `threads` threads (the
/// calling thread is one of them). Each thread starts on its own contiguous
/// share of the workgroups (thread t: the t-th of `threads` equal ranges),
/// claimed one at a time from that range's atomic counter, then helps the
/// others with what is left of theirs: uneven workgroups balance
/// themselves, and a thread keeps the same part of every kernel's rows, so
/// the rows one kernel writes are mostly in the cache of the core that the
/// next kernel reads them on.
class ThreadPool {
public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  void parallelFor(kiln_kernel_fn fn, void *const *args, int64_t n);
  /// Profiling: when enabled, each parallelFor's wall time is recorded in
  /// launch order; beginRun() starts a new record.
  void enableProfile(bool on) { profiling = on; }
  void beginRun() { launchMs.clear(); }
  const std::vector<double> &profile() const { return launchMs; }
  /// Whether a ukernel of the calling thread or of a workgroup the pool ran
  /// since the last call found no scratch memory (ukernels/Scratch.h): the
  /// run's outputs are incomplete. Clears the mark.
  bool takeScratchFailure();

private:
  void work(int self);
  void drain(int self);
  void stop(); // wakes, ends and joins the workers

  std::vector<std::thread> workers;
  std::mutex mu;
  std::condition_variable wake, finished;
  // generation and stopping change under `mu` and are read without it by
  // spinning threads; active grows under `mu` (so no job is rewritten while a
  // worker is inside one) and shrinks without it.
  std::atomic<uint64_t> generation{0};
  std::atomic<bool> stopping{false};
  std::atomic<int> active{0}; // workers inside the current job
  int sleepers = 0;           // workers blocked on `wake` (under `mu`)
  // The job in flight. fn, args, total and the shares are written under
  // `mu` before `generation` moves (a release); a worker reads them after it
  // has seen the new generation and registered in `active` under `mu`.
  kiln_kernel_fn fn = nullptr;
  void *const *args = nullptr;
  std::atomic<int64_t> total{0};
  /// Thread t's share: workgroups [next, end) (next claimed by anyone).
  struct alignas(64) Share {
    std::atomic<int64_t> next{0};
    int64_t end = 0;
  };
  std::vector<Share> shares;
  std::atomic<int64_t> done{0};
  std::atomic<bool> scratchFailed{false}; // a worker's ukernel found no memory
  bool profiling = false;
  std::vector<double> launchMs;
  void runJob(kiln_kernel_fn fn, void *const *args, int64_t n);
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_CPU_THREADPOOL_H
