// Every C entry point of the runtime under failing resources: allocations
// (operator new, aligned_alloc) that fail at the N-th call for every N a
// create + run makes, and thread creation that fails after K threads. Each
// call must return KILN_OK or an error code with a message -- never throw,
// crash or leave the instance half-made -- and a run that succeeds must give
// the same outputs as a run with nothing failing. The matrix-product
// ukernels' per-thread scratch fails the same way, inside a run. Linked with
// two models (compiled with --name=m, and --name=mm: a product of two
// inputs, whose B panels the ukernel packs into scratch) and libkiln_runtime.a; replaces operator new,
// wraps aligned_alloc at link time (-Wl,--wrap=aligned_alloc) and
// interposes pthread_create (std::thread calls it from libstdc++.so: link
// with -rdynamic).
#include "m.h"
#include "mm.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <new>
#include <pthread.h>
#include <thread>
#include <vector>

// Countdowns: -1 never fails; 0 fails this call (and every later one).
static long newCountdown = -1, alignedCountdown = -1, threadCountdown = -1;

static bool take(long &countdown) {
  if (countdown < 0)
    return true;
  if (countdown == 0)
    return false;
  --countdown;
  return true;
}

void *operator new(size_t n) {
  if (!take(newCountdown))
    throw std::bad_alloc();
  if (void *p = std::malloc(n ? n : 1))
    return p;
  throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }

extern "C" {
void *__real_aligned_alloc(size_t, size_t);
void *__wrap_aligned_alloc(size_t a, size_t n) {
  return take(alignedCountdown) ? __real_aligned_alloc(a, n) : nullptr;
}
int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg) {
  using Create = int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
  static Create real = reinterpret_cast<Create>(dlsym(RTLD_NEXT, "pthread_create"));
  return take(threadCountdown) ? real(t, a, f, arg) : EAGAIN;
}
}

static std::vector<std::vector<float>> inputs(M_NUM_INPUTS), outputs(M_NUM_OUTPUTS);
static std::vector<kiln_tensor> inT(M_NUM_INPUTS), outT(M_NUM_OUTPUTS);

static void setUp() {
  unsigned seed = 7;
  for (uint32_t i = 0; i < m_desc.num_inputs; ++i) {
    const kiln_tensor_desc &d = m_desc.inputs[i];
    int64_t n = 1;
    for (int32_t k = 0; k < d.rank; ++k)
      n *= d.shape[k];
    for (int64_t e = 0; e < n; ++e)
      inputs[i].push_back(static_cast<float>(rand_r(&seed)) / RAND_MAX - 0.5f);
    inT[i] = {inputs[i].data(), d.dtype, d.rank, d.shape};
  }
  for (uint32_t i = 0; i < m_desc.num_outputs; ++i) {
    const kiln_tensor_desc &d = m_desc.outputs[i];
    int64_t n = 1;
    for (int32_t k = 0; k < d.rank; ++k)
      n *= d.shape[k];
    outputs[i].assign(n, 0.0f);
    outT[i] = {outputs[i].data(), d.dtype, d.rank, d.shape};
  }
}

/// Creates (4 threads) and runs once; KILN_OK or the first failure's code.
/// A failure must come with a message.
static kiln_status createAndRun(int threads, bool &messageMissing) {
  kiln_options o{threads, 0, 0, 0};
  kiln_instance *inst = nullptr;
  kiln_status st = kiln_instance_create(&m_desc, &o, &inst);
  if (st != KILN_OK) {
    messageMissing |= inst != nullptr || !*kiln_last_error();
    return st;
  }
  st = kiln_instance_run(inst, inT.data(), inT.size(), outT.data(), outT.size());
  if (st != KILN_OK)
    messageMissing |= !*kiln_instance_error(inst);
  kiln_instance_destroy(inst);
  return st;
}

int main() {
  setUp();
  bool missing = false;
  if (createAndRun(4, missing) != KILN_OK) {
    std::printf("FAIL: the run with nothing failing: %s\n", kiln_last_error());
    return 1;
  }
  std::vector<std::vector<float>> want = outputs;

  // Allocations failing at the N-th call, for every N until nothing fails.
  int oom = 0, ok = 0, other = 0, wrongOutputs = 0;
  for (long n = 0; n < 100000; ++n) {
    for (auto &o : outputs)
      std::fill(o.begin(), o.end(), 0.0f);
    newCountdown = n;
    kiln_status st = createAndRun(4, missing);
    bool reached = newCountdown > 0; // the countdown never hit zero
    newCountdown = -1;
    if (st == KILN_OK) {
      ++ok;
      wrongOutputs += outputs != want;
    } else if (st == KILN_ERROR_OUT_OF_MEMORY) {
      ++oom;
    } else {
      ++other;
      std::printf("unexpected status %d at allocation %ld\n", st, n);
    }
    if (reached && st == KILN_OK)
      break;
  }
  std::printf("operator new: %d out-of-memory, %d ok, %d other, %d wrong outputs\n", oom, ok,
              other, wrongOutputs);

  alignedCountdown = 0;
  kiln_status arena = createAndRun(4, missing);
  alignedCountdown = -1;
  std::printf("aligned_alloc: status %d (%s)\n", arena,
              m_desc.arena_bytes ? "has an arena" : "no arena");

  // Threads failing after K of the pool's 3 workers started.
  for (long k = 0; k <= 3; ++k) {
    threadCountdown = k;
    kiln_status st = createAndRun(4, missing);
    threadCountdown = -1;
    std::printf("threads after %ld: status %d %s\n", k, st, st ? kiln_last_error() : "");
  }

  // The ukernel's scratch failing at the N-th aligned_alloc of a run, for
  // every N until a run allocates nothing that fails: on a fresh thread
  // each time (a thread keeps its scratch), one pool thread.
  std::vector<float> a(64 * 320), b(320 * 96), y(64 * 96), yWant;
  unsigned seed = 11;
  for (float &v : a)
    v = static_cast<float>(rand_r(&seed)) / RAND_MAX - 0.5f;
  for (float &v : b)
    v = static_cast<float>(rand_r(&seed)) / RAND_MAX - 0.5f;
  kiln_tensor mmIn[2] = {{a.data(), KILN_F32, 2, mm_desc.inputs[0].shape},
                         {b.data(), KILN_F32, 2, mm_desc.inputs[1].shape}};
  kiln_tensor mmOut = {y.data(), KILN_F32, 2, mm_desc.outputs[0].shape};
  int sOom = 0, sOk = 0, sOther = 0, sWrong = 0;
  for (long n = -1; n < 1000; ++n) {
    std::fill(y.begin(), y.end(), 0.0f);
    kiln_status st = KILN_OK;
    bool reached = false;
    std::thread([&] {
      kiln_options one{1, 0, 0, 0};
      kiln_instance *inst = nullptr;
      if ((st = kiln_instance_create(&mm_desc, &one, &inst)) != KILN_OK)
        return;
      alignedCountdown = n;
      st = kiln_instance_run(inst, mmIn, 2, &mmOut, 1);
      reached = alignedCountdown > 0;
      alignedCountdown = -1;
      if (st != KILN_OK)
        missing |= !*kiln_instance_error(inst);
      kiln_instance_destroy(inst);
    }).join();
    if (n < 0) { // (nothing failing: the outputs to expect)
      yWant = y;
      continue;
    }
    if (st == KILN_OK) {
      ++sOk;
      sWrong += y != yWant;
    } else if (st == KILN_ERROR_OUT_OF_MEMORY) {
      ++sOom;
    } else {
      ++sOther;
    }
    if (reached && st == KILN_OK)
      break;
  }
  std::printf("ukernel scratch: %d out-of-memory, %d ok, %d other, %d wrong outputs\n", sOom,
              sOk, sOther, sWrong);

  kiln_options huge{2147483647, 0, 0, 0};
  kiln_instance *inst = nullptr;
  kiln_status st = kiln_instance_create(&m_desc, &huge, &inst);
  std::printf("num_threads INT32_MAX: status %d %s\n", st, kiln_last_error());
  std::printf("messages %s\n", missing ? "MISSING" : "present");
  return 0;
}
