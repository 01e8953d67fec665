/* Stress test of the runtime's thread pool through the public ABI: a
 * hand-written model whose run() issues many back-to-back kernel launches of
 * varying size (so workers often wake late for a finished job), each
 * workgroup marking its own slot; every slot of every launch must be marked
 * exactly once, with the launch's own arguments. Several instances run
 * concurrently. Prints 'N passed, N failed'. */
#include <kiln/runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

enum { LAUNCHES = 2000, MAXN = 67 };

typedef struct { int *slots; int tag; } job_args;

static void mark(void *const *args, int64_t wg) {
  const job_args *a = (const job_args *)args[0];
  __atomic_fetch_add(&a->slots[wg], a->tag, __ATOMIC_RELAXED);
}

static int failures;

static void run(void *arena, void *const *inputs, void *const *outputs, void *pool) {
  (void)arena; (void)inputs; (void)outputs;
  static __thread int slots[MAXN];
  for (int l = 0; l < LAUNCHES; ++l) {
    int n = 1 + (l * 7919) % MAXN;
    memset(slots, 0, sizeof slots);
    job_args a = {slots, l + 1};
    void *args[1] = {&a};
    kiln_rt_parallel_for(pool, mark, args, n);
    for (int i = 0; i < MAXN; ++i)
      if (slots[i] != (i < n ? l + 1 : 0))
        __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
  }
}

static const int64_t shape[1] = {1};
static const kiln_tensor_desc io = {"x", KILN_F32, 1, shape};
static const kiln_model_desc model = {KILN_ABI_VERSION, 1, 1, 0, "pool_stress", &io, &io,
                                      0, 0, run, NULL, NULL};

static void *worker(void *arg) {
  kiln_instance *inst;
  kiln_options opts = {(int)(long)arg, 0};
  if (kiln_instance_create(&model, &opts, &inst) != KILN_OK) {
    __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
    return NULL;
  }
  float x = 1, y = 0;
  int64_t s = 1;
  kiln_tensor in = {&x, KILN_F32, 1, &s}, out = {&y, KILN_F32, 1, &s};
  for (int r = 0; r < 3; ++r)
    if (kiln_instance_run(inst, &in, 1, &out, 1) != KILN_OK)
      __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
  kiln_instance_destroy(inst);
  return NULL;
}

int main(void) {
  pthread_t t[4];
  for (long k = 0; k < 4; ++k)
    pthread_create(&t[k], NULL, worker, (void *)(k % 2 ? 3L : 2L));
  for (int k = 0; k < 4; ++k)
    pthread_join(t[k], NULL);
  printf("%d passed, %d failed\n", failures ? 0 : 1, failures ? 1 : 0);
  return failures != 0;
}
