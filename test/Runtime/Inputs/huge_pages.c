/* A model's weights on transparent huge pages (runtime/cpu/HugePages.h),
 * through the .so's public ABI:
 *   huge_pages MODEL.so OUT.bin  -- after kiln_instance_create, reports how
 *     much of the weights' whole 2 MiB pages is anonymous huge pages, checks
 *     the bytes are those the .so held, runs the model on a fixed input in
 *     two instances and writes the first's output to OUT.bin;
 *   huge_pages MODEL.so --rss    -- reports whether the peak RSS passed
 *     the RSS after the move by more than a quarter of the weights (a whole
 *     copy beside the file mapping would pass it by all of them). */
#include <kiln/runtime.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HUGE_PAGE ((uintptr_t)2 << 20)

typedef kiln_status (*create_fn)(const kiln_model_desc *, const kiln_options *, kiln_instance **);
typedef kiln_status (*run_fn)(kiln_instance *, const kiln_tensor *, size_t, const kiln_tensor *,
                              size_t);
typedef void (*destroy_fn)(kiln_instance *);

/* KiB of AnonHugePages in the mappings over [lo, hi), and whether all of
 * them are anonymous (inode 0). */
static long huge_kib(uintptr_t lo, uintptr_t hi, int *anonymous) {
  FILE *f = fopen("/proc/self/smaps", "r");
  char line[4096];
  long kib = 0;
  int inside = 0;
  *anonymous = 1;
  while (f && fgets(line, sizeof line, f)) {
    unsigned long start, end, inode;
    char perms[8];
    long v;
    if (sscanf(line, "%lx-%lx %7s %*s %*s %lu", &start, &end, perms, &inode) == 4) {
      inside = end > lo && start < hi;
      if (inside && inode != 0)
        *anonymous = 0;
    } else if (inside && sscanf(line, "AnonHugePages: %ld kB", &v) == 1) {
      kib += v;
    }
  }
  if (f)
    fclose(f);
  return kib;
}

static long status_kib(const char *key) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  size_t n = strlen(key);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, key, n) == 0)
      v = atol(line + n + 1);
  if (f)
    fclose(f);
  return v;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: huge_pages MODEL.so OUT.bin|--rss\n");
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  const kiln_model_desc *m = *(const kiln_model_desc *const *)dlsym(lib, "kiln_model");
  create_fn create = (create_fn)dlsym(lib, "kiln_instance_create");
  run_fn run = (run_fn)dlsym(lib, "kiln_instance_run");
  destroy_fn destroy = (destroy_fn)dlsym(lib, "kiln_instance_destroy");
  uintptr_t w = (uintptr_t)m->weights;
  uintptr_t lo = (w + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
  uintptr_t hi = (w + m->weights_bytes) & ~(HUGE_PAGE - 1);
  printf("weights: %llu bytes, %s, %lu whole huge pages\n", (unsigned long long)m->weights_bytes,
         w % HUGE_PAGE == 0 ? "aligned" : "unaligned", (unsigned long)((hi - lo) / HUGE_PAGE));
  int rssMode = strcmp(argv[2], "--rss") == 0;
  char *before = NULL;
  if (!rssMode) {
    before = malloc(m->weights_bytes);
    memcpy(before, m->weights, m->weights_bytes);
  }
  kiln_options opts = {1, 0, 0, 0};
  kiln_instance *a, *b;
  if (create(m, &opts, &a) != KILN_OK || create(m, &opts, &b) != KILN_OK) {
    fprintf(stderr, "create failed\n");
    return 1;
  }
  int anonymous;
  long kib = huge_kib(lo, hi, &anonymous);
  printf("huge pages: %ld of %lu KiB, %s\n", kib, (unsigned long)((hi - lo) >> 10),
         anonymous ? "anonymous" : "file-backed");
  if (rssMode) {
    long over = status_kib("VmHWM") - status_kib("VmRSS");
    printf("peak RSS over the RSS after the move: %s a quarter of the weights\n",
           over * 1024 <= (long)(m->weights_bytes / 4) ? "at most" : "more than");
    return 0;
  }
  printf("weights after the move: %s\n",
         memcmp(before, m->weights, m->weights_bytes) == 0 ? "the same bytes" : "DIFFERENT");
  const kiln_tensor_desc *xd = &m->inputs[0], *yd = &m->outputs[0];
  size_t nx = 1, ny = 1;
  for (int i = 0; i < xd->rank; ++i)
    nx *= xd->shape[i];
  for (int i = 0; i < yd->rank; ++i)
    ny *= yd->shape[i];
  float *x = malloc(nx * 4), *y1 = malloc(ny * 4), *y2 = malloc(ny * 4);
  uint32_t s = 12345;
  for (size_t i = 0; i < nx; ++i) {
    s = s * 1664525u + 1013904223u;
    x[i] = (float)(s >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
  }
  kiln_tensor in = {x, KILN_F32, xd->rank, xd->shape};
  kiln_tensor o1 = {y1, KILN_F32, yd->rank, yd->shape}, o2 = {y2, KILN_F32, yd->rank, yd->shape};
  if (run(a, &in, 1, &o1, 1) != KILN_OK || run(b, &in, 1, &o2, 1) != KILN_OK) {
    fprintf(stderr, "run failed\n");
    return 1;
  }
  printf("second instance: %s\n", memcmp(y1, y2, ny * 4) == 0 ? "the same outputs" : "DIFFERENT");
  FILE *out = fopen(argv[2], "wb");
  fwrite(y1, 4, ny, out);
  fclose(out);
  destroy(a);
  destroy(b);
  return 0;
}
