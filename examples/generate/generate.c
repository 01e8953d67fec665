/* generate.c - an application that generates tokens with a Kiln-compiled
 * decoder (a model with a KV cache: kiln/generate.h).
 *
 * Build (see examples/CMakeLists.txt, -DKILN_DECODER_OBJECT=decoder.o):
 *   kiln-compile decoder.onnx -o decoder.o --max-shape ...   # decoder.o + decoder.h
 *   cc -DKILN_MODEL=decoder -include decoder.h generate.c decoder.o \
 *      libkiln_runtime.a -lstdc++ -lm -lpthread -ldl
 *
 * Usage: generate [NEW_TOKENS [PROMPT_TOKEN ...]]
 * Runs the prompt (default 1 2 3 4), then a greedy loop of its own over
 * kiln_decoder_step, then kiln_generate with sampling, and prints both.
 */
#include <kiln/generate.h>

#include <stdio.h>
#include <stdlib.h>

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define MODEL_CREATE CAT(KILN_MODEL, _create)
#define MODEL_DESTROY CAT(KILN_MODEL, _destroy)

static int64_t argmax(const float *logits, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (logits[i] > logits[best])
      best = i;
  return best;
}

int main(int argc, char **argv) {
  int new_tokens = argc > 1 ? atoi(argv[1]) : 16;
  int64_t prompt[64] = {1, 2, 3, 4};
  size_t n = 4;
  if (argc > 2)
    for (n = 0; n + 2 < (size_t)argc && n < 64; ++n)
      prompt[n] = atoll(argv[n + 2]);
  if (new_tokens < 1 || new_tokens > 4096) {
    fprintf(stderr, "NEW_TOKENS must be 1 to 4096\n");
    return 2;
  }

  kiln_instance *inst;
  if (MODEL_CREATE(&inst, NULL) != KILN_OK) {
    fprintf(stderr, "cannot create the model: %s\n", kiln_last_error());
    return 1;
  }
  kiln_decoder *dec;
  if (kiln_decoder_create(inst, &dec) != KILN_OK) {
    fprintf(stderr, "%s\n", kiln_decoder_error(NULL));
    MODEL_DESTROY(inst);
    return 1;
  }
  printf("decoder: %s\n", kiln_decoder_describe(dec));

  /* A loop of one's own: feed, pick, feed back. */
  int64_t *greedy = malloc(sizeof(int64_t) * (size_t)new_tokens);
  const float *logits;
  int status = 0;
  if (kiln_decoder_step(dec, prompt, n, &logits) != KILN_OK) {
    fprintf(stderr, "step failed: %s\n", kiln_decoder_error(dec));
    status = 1;
  }
  for (int i = 0; status == 0 && i < new_tokens; ++i) {
    greedy[i] = argmax(logits, kiln_decoder_vocab_size(dec));
    if (i + 1 < new_tokens && kiln_decoder_step(dec, &greedy[i], 1, &logits) != KILN_OK) {
      fprintf(stderr, "step failed: %s\n", kiln_decoder_error(dec));
      status = 1;
    }
  }
  if (status == 0) {
    printf("greedy:");
    for (int i = 0; i < new_tokens; ++i)
      printf(" %lld", (long long)greedy[i]);
    printf(" (cache: %lld positions)\n", (long long)kiln_decoder_length(dec));
  }

  /* The runtime's loop, sampling. */
  kiln_generate_options o = {new_tokens, 40, 0.9f, 0.8f, 7, -1};
  int64_t *sampled = malloc(sizeof(int64_t) * (size_t)new_tokens);
  size_t count = 0;
  kiln_generate_stats st;
  if (status == 0 &&
      kiln_generate(dec, prompt, n, &o, sampled, &count, &st) != KILN_OK) {
    fprintf(stderr, "generate failed: %s\n", kiln_decoder_error(dec));
    status = 1;
  }
  if (status == 0) {
    printf("sampled:");
    for (size_t i = 0; i < count; ++i)
      printf(" %lld", (long long)sampled[i]);
    printf("\nprefill %.3f ms, decode %lld tokens in %.3f ms\n", st.prefill_ms,
           (long long)st.decode_tokens, st.decode_ms);
  }
  free(greedy);
  free(sampled);
  kiln_decoder_destroy(dec);
  MODEL_DESTROY(inst);
  return status;
}
