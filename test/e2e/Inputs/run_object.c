/* Links a model compiled to an object file (model.o + model.h) the way an
 * application would, runs it on a raw f32 input and writes the raw output.
 * With a third argument N, also runs N instances at once from N threads and
 * checks that every one gives the same bytes as the single run.
 *
 * cc -DKILN_MODEL=name -include name.h run_object.c name.o libkiln_runtime.a
 * usage: run_object INPUT.f32 OUTPUT.f32 [N]
 */
#include <kiln/runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define DESC CAT(KILN_MODEL, _desc)
#define CREATE CAT(KILN_MODEL, _create)
#define RUN CAT(KILN_MODEL, _run)
#define DESTROY CAT(KILN_MODEL, _destroy)

static float *input, *reference;
static size_t in_elems, out_elems;

static size_t elems(const kiln_tensor_desc *d) {
  size_t n = 1;
  for (int i = 0; i < d->rank; ++i) n *= (size_t)d->shape[i];
  return n;
}

static int run_once(float *out, int threads) {
  kiln_instance *inst;
  kiln_options opts = {threads};
  if (CREATE(&inst, &opts) != KILN_OK) {
    fprintf(stderr, "create failed: %s\n", kiln_last_error());
    return 1;
  }
  const kiln_tensor_desc *i = &DESC.inputs[0], *o = &DESC.outputs[0];
  kiln_tensor in = {input, i->dtype, i->rank, i->shape};
  kiln_tensor ot = {out, o->dtype, o->rank, o->shape};
  kiln_status st = RUN(inst, &in, &ot);
  if (st != KILN_OK) fprintf(stderr, "run failed: %s\n", kiln_instance_error(inst));
  DESTROY(inst);
  return st != KILN_OK;
}

static void *worker(void *arg) {
  float *out = malloc(out_elems * sizeof(float));
  long bad = 0;
  for (int r = 0; r < 3 && !bad; ++r) {
    bad = run_once(out, 2);
    if (!bad && memcmp(out, reference, out_elems * sizeof(float))) bad = 2;
  }
  free(out);
  (void)arg;
  return (void *)bad;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  if (DESC.num_inputs != 1 || DESC.num_outputs != 1) return 2;
  in_elems = elems(&DESC.inputs[0]);
  out_elems = elems(&DESC.outputs[0]);
  input = malloc(in_elems * sizeof(float));
  reference = malloc(out_elems * sizeof(float));
  FILE *f = fopen(argv[1], "rb");
  if (!f || fread(input, sizeof(float), in_elems, f) != in_elems) return 3;
  fclose(f);
  if (run_once(reference, 0)) return 4;
  f = fopen(argv[2], "wb");
  if (!f || fwrite(reference, sizeof(float), out_elems, f) != out_elems) return 5;
  fclose(f);
  int n = argc > 3 ? atoi(argv[3]) : 0;
  pthread_t t[64];
  for (int k = 0; k < n && k < 64; ++k) pthread_create(&t[k], NULL, worker, NULL);
  int failed = 0;
  for (int k = 0; k < n && k < 64; ++k) {
    void *r;
    pthread_join(t[k], &r);
    failed |= r != NULL;
  }
  if (failed) {
    fprintf(stderr, "concurrent instances disagreed with the single run\n");
    return 6;
  }
  printf("ran %s: %zu outputs; %d concurrent instances agreed\n", DESC.name, out_elems, n);
  return 0;
}
