/* classify.c - an application that links a Kiln-compiled model.
 *
 * Build (see examples/CMakeLists.txt):
 *   kiln-compile small_cnn.onnx -o small_cnn.o      # writes small_cnn.o + small_cnn.h
 *   cc -DKILN_MODEL=small_cnn -include small_cnn.h classify.c small_cnn.o \
 *      libkiln_runtime.a -lstdc++ -lm -lpthread -ldl
 *
 * Runs the model on a deterministic synthetic image (or a raw float32 file
 * given as the first argument), prints the top-5 classes and the latency.
 */
#include <kiln/runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define MODEL_DESC CAT(KILN_MODEL, _desc)
#define MODEL_CREATE CAT(KILN_MODEL, _create)
#define MODEL_RUN CAT(KILN_MODEL, _run)
#define MODEL_DESTROY CAT(KILN_MODEL, _destroy)

static size_t num_elements(const kiln_tensor_desc *d) {
  size_t n = 1;
  for (int i = 0; i < d->rank; ++i)
    n *= (size_t)d->shape[i];
  return n;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  const kiln_tensor_desc *in_desc = &MODEL_DESC.inputs[0];
  const kiln_tensor_desc *out_desc = &MODEL_DESC.outputs[0];
  size_t n_in = num_elements(in_desc), n_out = num_elements(out_desc);
  float *image = malloc(n_in * sizeof(float));
  float *scores = malloc(n_out * sizeof(float));
  if (!image || !scores)
    return 1;

  if (argc > 1) {
    FILE *f = fopen(argv[1], "rb");
    if (!f || fread(image, sizeof(float), n_in, f) != n_in) {
      fprintf(stderr, "classify: cannot read %zu floats from %s\n", n_in, argv[1]);
      return 1;
    }
    fclose(f);
  } else {
    /* A deterministic synthetic image: smooth gradients plus a pattern. */
    for (size_t i = 0; i < n_in; ++i)
      image[i] = (float)((i * 37 % 255) / 255.0 - 0.5);
  }

  kiln_instance *inst;
  if (MODEL_CREATE(&inst, NULL) != KILN_OK) {
    fprintf(stderr, "classify: %s\n", kiln_last_error());
    return 1;
  }
  kiln_tensor in = {image, in_desc->dtype, in_desc->rank, in_desc->shape};
  kiln_tensor out = {scores, out_desc->dtype, out_desc->rank, out_desc->shape};

  enum { WARMUP = 5, RUNS = 50 };
  double ms[RUNS];
  for (int r = 0; r < WARMUP + RUNS; ++r) {
    double t0 = now_ms();
    if (MODEL_RUN(inst, &in, &out) != KILN_OK) {
      fprintf(stderr, "classify: %s\n", kiln_instance_error(inst));
      return 1;
    }
    if (r >= WARMUP)
      ms[r - WARMUP] = now_ms() - t0;
  }
  qsort(ms, RUNS, sizeof(double), cmp_double);

  printf("model %s: input '%s' [", MODEL_DESC.name, in_desc->name);
  for (int i = 0; i < in_desc->rank; ++i)
    printf("%s%lld", i ? "x" : "", (long long)in_desc->shape[i]);
  printf("], %zu classes, arena %llu bytes, %u kernels\n", n_out,
         (unsigned long long)MODEL_DESC.arena_bytes, MODEL_DESC.num_kernels);
  printf("top-5 classes:\n");
  for (int k = 0; k < 5 && (size_t)k < n_out; ++k) {
    size_t best = 0;
    for (size_t i = 1; i < n_out; ++i)
      if (scores[i] > scores[best])
        best = i;
    printf("  #%d  class %3zu  score %.6f\n", k + 1, best, scores[best]);
    scores[best] = -1e30f;
  }
  printf("latency: median %.3f ms, min %.3f ms over %d runs\n", ms[RUNS / 2], ms[0], RUNS);
  MODEL_DESTROY(inst);
  free(image);
  free(scores);
  return 0;
}
