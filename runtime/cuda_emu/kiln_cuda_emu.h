//===- kiln_cuda_emu.h - run CUDA C++ kernels on the CPU --------*- C++ -*-===//
//
// Include this before a CUDA C++ source to compile it with the host C++
// compiler (g++/clang++, C++20): the kernels then run on the CPU with CUDA's
// semantics, so the CUDA code Kiln emits is tested on machines without a GPU.
//
//   - A grid's blocks run in parallel on host threads, one block at a time
//     per host thread; a block's threads are fibers (ucontext) on that host
//     thread, switched only at barriers, so code between barriers runs
//     without interleaving -- a legal CUDA schedule.
//   - __syncthreads() is a block barrier; warp operations (__shfl*_sync,
//     __syncwarp, __ballot_sync, __any_sync, __all_sync) exchange values
//     among the 32 threads of a warp in lockstep (every lane deposits, then
//     every lane reads).
//   - __shared__ variables live once per executing block (thread_local
//     storage of the host thread running the block); dynamic shared memory
//     (extern __shared__) is sized by the launch.
//   - atomics are host atomics (blocks run concurrently); __half and
//     __nv_bfloat16 come from the toolkit's cuda_fp16.h/cuda_bf16.h, which
//     work in host code.
//
// Launch: kiln_emu::launch(kernel, grid, block, sharedBytes, args...).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CUDA_EMU_H
#define KILN_CUDA_EMU_H

// (Only light headers: every model's emulation build includes this one,
// and <atomic>, <memory>, <thread> and <functional> cost each build about
// 0.07 s apiece of template instantiation even precompiled.)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include <pthread.h>
#include <unistd.h>

#include <ucontext.h>

// CUDA keywords in host code (before the toolkit's headers, which keep
// definitions they find).
#define __global__
#define __device__
#define __host__
#define __shared__ static thread_local
#define __constant__ static
#define __launch_bounds__(...)

// dim3, uint3, float4, ...; __half and __nv_bfloat16 with their host
// implementations. (Included before the built-in variable macros below,
// whose names these headers use.)
#include <vector_types.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace kiln_emu {

constexpr unsigned kWarpSize = 32;

/// One emulated thread: a fiber with its own stack.
struct Fiber {
  ucontext_t ctx;
  char *stack = nullptr; // from the host thread's stack pool
  dim3 threadIdx;
  bool done = false;
  int waiting = 0; // 0 running, 1 at a block barrier, 2 at a warp barrier
};

/// The block running on this host thread.
struct Block {
  dim3 blockIdx, blockDim, gridDim;
  std::vector<Fiber> fibers;
  ucontext_t scheduler;
  unsigned current = 0;
  std::vector<char> dynamicShared;
  // Warp exchange slots: one 8-byte value per thread.
  std::vector<uint64_t> lanes;
  // The kernel call with its arguments: fn(ctx) (a plain pointer: this
  // header does without <functional>).
  void (*fn)(void *) = nullptr;
  void *ctx = nullptr;
  bool direct = false; // threads run one after another on the host stack
};

/// Fiber stacks, kept per host thread across blocks and launches.
struct StackPool {
  std::vector<char *> stacks;
  ~StackPool() {
    for (char *s : stacks)
      delete[] s;
  }
};
inline thread_local StackPool tlsStacks;

inline thread_local Block *tlsBlock = nullptr;

inline Block &block() { return *tlsBlock; }
inline Fiber &fiber() { return block().fibers[block().current]; }

[[noreturn]] inline void fail(const char *what) {
  std::fprintf(stderr, "kiln cuda-emu: %s\n", what);
  std::abort();
}

/// Back to the scheduler, in state `why` (1 block barrier, 2 warp barrier).
inline void yieldAt(int why) {
  if (block().direct) {
    if (block().fibers.size() > 1)
      fail("a barrier or warp operation in a kernel launched as independent threads");
    return; // a lone thread passes every barrier
  }
  Fiber &f = fiber();
  f.waiting = why;
  swapcontext(&f.ctx, &block().scheduler);
}

inline void fiberEntry() {
  block().fn(block().ctx);
  fiber().done = true;
  setcontext(&block().scheduler);
}

/// Runs every fiber of the block until all finish. A fiber runs until it
/// finishes or waits at a barrier; a barrier opens when every thread it
/// concerns (the block, or the warp) waits there or has finished.
inline void schedule(Block &b) {
  unsigned n = b.fibers.size();
  for (;;) {
    bool progressed = false, allDone = true;
    for (unsigned i = 0; i < n; ++i) {
      Fiber &f = b.fibers[i];
      if (f.done)
        continue;
      allDone = false;
      if (f.waiting)
        continue;
      b.current = i;
      swapcontext(&b.scheduler, &f.ctx);
      progressed = true;
    }
    if (allDone)
      return;
    // Open warp barriers whose live lanes all wait there.
    bool opened = false;
    for (unsigned w = 0; w * kWarpSize < n; ++w) {
      unsigned lo = w * kWarpSize, hi = lo + kWarpSize < n ? lo + kWarpSize : n;
      bool ready = true, any = false;
      for (unsigned i = lo; i < hi; ++i) {
        Fiber &f = b.fibers[i];
        if (f.done)
          continue;
        if (f.waiting != 2) {
          ready = false;
          break;
        }
        any = true;
      }
      if (ready && any) {
        for (unsigned i = lo; i < hi; ++i)
          b.fibers[i].waiting = 0;
        opened = true;
      }
    }
    if (opened)
      continue;
    // The block barrier: every live thread waits at it.
    bool ready = true, any = false;
    for (Fiber &f : b.fibers) {
      if (f.done)
        continue;
      if (f.waiting != 1)
        ready = false;
      any = true;
    }
    if (ready && any) {
      for (Fiber &f : b.fibers)
        f.waiting = 0;
      continue;
    }
    if (!progressed)
      fail("deadlock: threads wait at different barriers (a __syncthreads in divergent code?)");
  }
}

/// A block's indices, dynamic shared memory and threads (their threadIdx).
inline void initBlock(Block &b, dim3 blockIdx, dim3 grid, dim3 blockDim, size_t sharedBytes) {
  b.blockIdx = blockIdx;
  b.gridDim = grid;
  b.blockDim = blockDim;
  b.dynamicShared.assign(sharedBytes, 0);
  unsigned n = blockDim.x * blockDim.y * blockDim.z;
  b.fibers.resize(n);
  b.lanes.assign(n, 0);
  for (unsigned i = 0; i < n; ++i)
    b.fibers[i].threadIdx = dim3(i % blockDim.x, (i / blockDim.x) % blockDim.y,
                                 i / (blockDim.x * blockDim.y));
}

/// Runs one block of fn(ctx) (the kernel call with its arguments).
inline void runBlock(dim3 blockIdx, dim3 grid, dim3 blockDim, size_t sharedBytes,
                     void (*fn)(void *), void *ctx) {
  constexpr size_t kStack = 64 * 1024;
  Block b;
  initBlock(b, blockIdx, grid, blockDim, sharedBytes);
  b.fn = fn;
  b.ctx = ctx;
  unsigned n = b.fibers.size();
  Block *saved = tlsBlock;
  tlsBlock = &b;
  while (tlsStacks.stacks.size() < n)
    tlsStacks.stacks.push_back(new char[kStack]);
  for (unsigned i = 0; i < n; ++i) {
    Fiber &f = b.fibers[i];
    f.stack = tlsStacks.stacks[i];
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = kStack;
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, fiberEntry, 0);
  }
  schedule(b);
  tlsBlock = saved;
}

/// Runs block `blockIdx` of a launch of `body` (the kernel call). Threads
/// that never synchronize (`independent`: no barriers, no warp operations)
/// run one after another on the host thread's own stack; the others are
/// fibers switched at barriers. Kiln's runtime calls this once per block
/// from its thread pool (the generated `<kernel>_block` entry points).
inline void runBlockCall(dim3 blockIdx, dim3 grid, dim3 blockDim, size_t sharedBytes,
                         bool independent, void (*fn)(void *), void *ctx) {
  if (!independent) {
    runBlock(blockIdx, grid, blockDim, sharedBytes, fn, ctx);
    return;
  }
  Block b;
  initBlock(b, blockIdx, grid, blockDim, sharedBytes);
  b.direct = true;
  Block *saved = tlsBlock;
  tlsBlock = &b;
  for (unsigned i = 0; i < b.fibers.size(); ++i) {
    b.current = i;
    fn(ctx);
  }
  tlsBlock = saved;
}
/// (Per kernel only this thunk is instantiated.)
template <typename F>
void runBlockOf(dim3 blockIdx, dim3 grid, dim3 blockDim, size_t sharedBytes, bool independent,
                F &&body) {
  using Body = std::remove_reference_t<F>;
  runBlockCall(blockIdx, grid, blockDim, sharedBytes, independent,
               [](void *p) { (*static_cast<Body *>(p))(); },
               const_cast<void *>(static_cast<const void *>(&body)));
}

/// Launches kernel<<<grid, block, sharedBytes>>>(args...) and waits: blocks
/// are claimed by up to one host thread per online CPU.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 blockDim, size_t sharedBytes,
            Args... args) {
  if (blockDim.x * blockDim.y * blockDim.z == 0 || blockDim.x * blockDim.y * blockDim.z > 1024)
    fail("block size must be 1..1024 threads");
  auto call = [=] { kernel(args...); };
  struct State {
    dim3 grid, blockDim;
    size_t sharedBytes, blocks, next;
    decltype(call) *body;
  } st{grid, blockDim, sharedBytes, size_t(grid.x) * grid.y * grid.z, 0, &call};
  auto worker = [](void *p) -> void * {
    State &s = *static_cast<State *>(p);
    for (size_t i; (i = __atomic_fetch_add(&s.next, 1, __ATOMIC_SEQ_CST)) < s.blocks;) {
      dim3 idx(i % s.grid.x, (i / s.grid.x) % s.grid.y, i / (size_t(s.grid.x) * s.grid.y));
      runBlock(idx, s.grid, s.blockDim, s.sharedBytes,
               [](void *c) { (*static_cast<decltype(call) *>(c))(); }, s.body);
    }
    return nullptr;
  };
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  size_t nThreads = cpus < 1 ? 1 : static_cast<size_t>(cpus);
  nThreads = nThreads < st.blocks ? nThreads : st.blocks;
  std::vector<pthread_t> pool;
  for (size_t t = 1; t < nThreads; ++t) {
    pthread_t th;
    if (pthread_create(&th, nullptr, worker, &st) == 0)
      pool.push_back(th);
  }
  worker(&st);
  for (pthread_t th : pool)
    pthread_join(th, nullptr);
}

/// The lane's slot, for warp exchanges.
inline unsigned linearTid() {
  const dim3 &t = fiber().threadIdx;
  const dim3 &d = block().blockDim;
  return t.x + d.x * (t.y + d.y * t.z);
}

/// Every lane of the warp deposits `bits`, then reads lane `src`'s.
inline uint64_t exchange(uint64_t bits, unsigned src) {
  unsigned me = linearTid(), base = me / kWarpSize * kWarpSize;
  block().lanes[me] = bits;
  yieldAt(2);
  unsigned from = base + src;
  uint64_t out = from < block().fibers.size() ? block().lanes[from] : bits;
  yieldAt(2); // nobody overwrites its slot before every lane has read
  return out;
}

template <typename T> uint64_t toBits(T v) {
  static_assert(sizeof(T) <= 8, "warp shuffles move up to 8 bytes");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <typename T> T fromBits(uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}

} // namespace kiln_emu

// Built-in variables.
#define threadIdx (::kiln_emu::fiber().threadIdx)
#define blockIdx (::kiln_emu::block().blockIdx)
#define blockDim (::kiln_emu::block().blockDim)
#define gridDim (::kiln_emu::block().gridDim)
#define warpSize 32

inline void __syncthreads() { kiln_emu::yieldAt(1); }
inline void __syncwarp(unsigned = 0xffffffffu) { kiln_emu::yieldAt(2); }

template <typename T> T __shfl_sync(unsigned, T v, int src, int width = 32) {
  unsigned lane = kiln_emu::linearTid() % 32;
  unsigned seg = lane / width * width;
  return kiln_emu::fromBits<T>(kiln_emu::exchange(kiln_emu::toBits(v), seg + (src % width)));
}
template <typename T> T __shfl_down_sync(unsigned, T v, unsigned d, int width = 32) {
  unsigned lane = kiln_emu::linearTid() % 32, seg = lane / width * width;
  unsigned src = lane + d < seg + width ? lane + d : lane;
  return kiln_emu::fromBits<T>(kiln_emu::exchange(kiln_emu::toBits(v), src));
}
template <typename T> T __shfl_up_sync(unsigned, T v, unsigned d, int width = 32) {
  unsigned lane = kiln_emu::linearTid() % 32, seg = lane / width * width;
  unsigned src = lane >= seg + d ? lane - d : lane;
  return kiln_emu::fromBits<T>(kiln_emu::exchange(kiln_emu::toBits(v), src));
}
template <typename T> T __shfl_xor_sync(unsigned, T v, int m, int width = 32) {
  unsigned lane = kiln_emu::linearTid() % 32, seg = lane / width * width;
  unsigned src = (lane ^ m) < seg + width ? (lane ^ m) : lane;
  return kiln_emu::fromBits<T>(kiln_emu::exchange(kiln_emu::toBits(v), src));
}
/// Bit i set when lane i's predicate is true (live lanes of the warp).
inline unsigned __ballot_sync(unsigned, int pred) {
  unsigned me = kiln_emu::linearTid(), base = me / 32 * 32;
  auto &b = kiln_emu::block();
  b.lanes[me] = pred ? 1 : 0;
  kiln_emu::yieldAt(2);
  unsigned bits = 0;
  for (unsigned i = base; i < base + 32 && i < b.fibers.size(); ++i)
    if (!b.fibers[i].done && b.lanes[i])
      bits |= 1u << (i - base);
  kiln_emu::yieldAt(2);
  return bits;
}
inline int __any_sync(unsigned m, int pred) { return __ballot_sync(m, pred) != 0; }
inline int __all_sync(unsigned m, int pred) {
  unsigned me = kiln_emu::linearTid(), base = me / 32 * 32;
  unsigned live = 0;
  auto &b = kiln_emu::block();
  for (unsigned i = base; i < base + 32 && i < b.fibers.size(); ++i)
    if (!b.fibers[i].done)
      live |= 1u << (i - base);
  return __ballot_sync(m, pred) == live;
}

// Atomics: blocks run on several host threads. (GCC's and Clang's generic
// __atomic builtins, which take any trivially copyable T: floats too.)
template <typename T> T atomicAdd(T *p, T v) {
  if constexpr (std::is_integral_v<T>)
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
  T old, want;
  __atomic_load(p, &old, __ATOMIC_SEQ_CST);
  do
    want = old + v;
  while (!__atomic_compare_exchange(p, &old, &want, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
  return old;
}
template <typename T> T atomicMax(T *p, T v) {
  T old;
  __atomic_load(p, &old, __ATOMIC_SEQ_CST);
  while (old < v &&
         !__atomic_compare_exchange(p, &old, &v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return old;
}
template <typename T> T atomicMin(T *p, T v) {
  T old;
  __atomic_load(p, &old, __ATOMIC_SEQ_CST);
  while (v < old &&
         !__atomic_compare_exchange(p, &old, &v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return old;
}
template <typename T> T atomicExch(T *p, T v) {
  T old;
  __atomic_exchange(p, &v, &old, __ATOMIC_SEQ_CST);
  return old;
}
template <typename T> T atomicCAS(T *p, T cmp, T v) {
  __atomic_compare_exchange(p, &cmp, &v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return cmp;
}
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

/// Dynamic shared memory: `extern __shared__ T name[];` becomes
/// `KILN_EMU_DYNAMIC_SHARED(T, name);` in emulated sources -- host C++ has no
/// unsized thread-local arrays. Kiln's emitted CUDA uses the macro on both
/// targets (defined for NVRTC in the generated prelude).
#define KILN_EMU_DYNAMIC_SHARED(T, name)                                       \
  T *name = reinterpret_cast<T *>(::kiln_emu::block().dynamicShared.data())

// Device math that host libm spells differently.
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline float __saturatef(float x) { return std::fmin(std::fmax(x, 0.0f), 1.0f); }
inline float __int_as_float(int x) { return kiln_emu::fromBits<float>(static_cast<uint32_t>(x)); }
inline int __float_as_int(float x) { return static_cast<int>(static_cast<uint32_t>(kiln_emu::toBits(x))); }
inline double __longlong_as_double(long long x) {
  return kiln_emu::fromBits<double>(static_cast<uint64_t>(x));
}
template <typename T> T __ldg(const T *p) { return *p; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __clz(int x) { return x ? __builtin_clz(static_cast<unsigned>(x)) : 32; }
inline int __ffs(int x) { return __builtin_ffs(x); }

// Half intrinsics that cuda_fp16.h declares for device code only: exact
// product and sum in double, one rounding to half.
inline __half __hfma(__half a, __half b, __half c) {
  return __double2half(static_cast<double>(__half2float(a)) * __half2float(b) +
                       __half2float(c));
}

// Tensor cores: nvcuda::wmma (mma.h declares it for device code only).
// Fragments are spread over the warp like on the hardware: each lane holds
// num_elements = tile / 32 elements (lane l: elements [l * num_elements,
// (l + 1) * num_elements) of the row-major tile; the real layout is
// unspecified, so code that loops over x[0, num_elements) works the same).
// Every operation is warp-synchronous; mma_sync reads the other lanes'
// fragments and multiplies exactly (products of half/bf16 inputs are exact
// in float) with float accumulation.
namespace nvcuda::wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K> struct fragment_shape;
template <int M, int N, int K> struct fragment_shape<matrix_a, M, N, K> { static constexpr int rows = M, cols = K; };
template <int M, int N, int K> struct fragment_shape<matrix_b, M, N, K> { static constexpr int rows = K, cols = N; };
template <int M, int N, int K> struct fragment_shape<accumulator, M, N, K> { static constexpr int rows = M, cols = N; };

template <typename Use, int M, int N, int K, typename T, typename Layout = void> class fragment {
public:
  static constexpr int rows = fragment_shape<Use, M, N, K>::rows;
  static constexpr int cols = fragment_shape<Use, M, N, K>::cols;
  static_assert(rows * cols % kiln_emu::kWarpSize == 0, "a tile spreads evenly over the warp");
  static constexpr int num_elements = rows * cols / kiln_emu::kWarpSize;
  T x[num_elements];
};

inline unsigned laneId() {
  if (kiln_emu::block().direct)
    kiln_emu::fail("a wmma operation in a kernel launched as independent threads");
  return kiln_emu::linearTid() % kiln_emu::kWarpSize;
}

template <typename Use, int M, int N, int K, typename T, typename L>
inline void fill_fragment(fragment<Use, M, N, K, T, L> &f, const T &v) {
  for (int i = 0; i < f.num_elements; ++i)
    f.x[i] = v;
}

/// Element e of this lane's share <-> tile (row, col) = divmod(lane * E + e, cols).
template <typename F, typename Fn> inline void forMine(const F &, Fn &&fn) {
  unsigned base = laneId() * F::num_elements;
  for (int e = 0; e < F::num_elements; ++e)
    fn(e, (base + e) / F::cols, (base + e) % F::cols);
}

template <typename F, typename T> inline void loadTile(F &f, const T *p, unsigned ldm, bool colMajor) {
  kiln_emu::yieldAt(2); // warp-synchronous: every lane's earlier writes are visible
  forMine(f, [&](int e, unsigned r, unsigned c) { f.x[e] = colMajor ? p[c * ldm + r] : p[r * ldm + c]; });
  kiln_emu::yieldAt(2);
}

template <typename Use, int M, int N, int K, typename T, typename L>
inline void load_matrix_sync(fragment<Use, M, N, K, T, L> &f, const T *p, unsigned ldm) {
  loadTile(f, p, ldm, std::is_same_v<L, col_major>);
}
template <int M, int N, int K, typename T>
inline void load_matrix_sync(fragment<accumulator, M, N, K, T> &f, const T *p, unsigned ldm,
                             layout_t layout) {
  loadTile(f, p, ldm, layout == mem_col_major);
}

template <int M, int N, int K, typename T>
inline void store_matrix_sync(T *p, const fragment<accumulator, M, N, K, T> &f, unsigned ldm,
                              layout_t layout) {
  kiln_emu::yieldAt(2);
  forMine(f, [&](int e, unsigned r, unsigned c) {
    (layout == mem_col_major ? p[c * ldm + r] : p[r * ldm + c]) = f.x[e];
  });
  kiln_emu::yieldAt(2);
}

template <typename T> inline float toFloat(const T &v) { return static_cast<float>(v); }
inline float toFloat(const __half &v) { return __half2float(v); }
inline float toFloat(const __nv_bfloat16 &v) { return __bfloat162float(v); }

template <int M, int N, int K, typename TA, typename LA, typename TB, typename LB, typename TC>
inline void mma_sync(fragment<accumulator, M, N, K, TC> &d, const fragment<matrix_a, M, N, K, TA, LA> &a,
                     const fragment<matrix_b, M, N, K, TB, LB> &b,
                     const fragment<accumulator, M, N, K, TC> &c) {
  using FA = fragment<matrix_a, M, N, K, TA, LA>;
  using FB = fragment<matrix_b, M, N, K, TB, LB>;
  // Every lane publishes its A and B shares, then computes its share of D.
  unsigned lane = laneId(), base = kiln_emu::linearTid() - lane;
  const void *mine[2] = {&a, &b};
  auto &slots = kiln_emu::block().lanes;
  slots[base + lane] = reinterpret_cast<uint64_t>(mine);
  kiln_emu::yieldAt(2);
  auto share = [&](unsigned l, int which) {
    return reinterpret_cast<const void *const *>(slots[base + l])[which];
  };
  auto elemA = [&](int i, int k) {
    unsigned idx = i * K + k;
    return toFloat(static_cast<const FA *>(share(idx / FA::num_elements, 0))->x[idx % FA::num_elements]);
  };
  auto elemB = [&](int k, int j) {
    unsigned idx = k * N + j;
    return toFloat(static_cast<const FB *>(share(idx / FB::num_elements, 1))->x[idx % FB::num_elements]);
  };
  fragment<accumulator, M, N, K, TC> out;
  forMine(out, [&](int e, unsigned i, unsigned j) {
    float acc = toFloat(c.x[e]);
    for (int k = 0; k < K; ++k)
      acc += elemA(i, k) * elemB(k, j);
    out.x[e] = static_cast<TC>(acc);
  });
  kiln_emu::yieldAt(2); // nobody changes a share before every lane has read it
  d = out;
}
} // namespace nvcuda::wmma

#endif // KILN_CUDA_EMU_H
