/*===- kiln/generate.h - token generation over a compiled decoder ---------===
 *
 * A decoder is a model that takes token ids and a KV cache and returns the
 * next token's logits and the grown cache, compiled once with the token
 * count T and the cache length P symbolic (optimum-style ONNX with
 * past/present tensors, torch.export with dynamic dims). kiln_decoder finds
 * those roles in the model's description and keeps the cache between
 * calls, so an application feeds tokens and reads logits:
 *
 *   kiln_decoder *dec;
 *   kiln_decoder_create(inst, &dec);
 *   const float *logits;
 *   kiln_decoder_step(dec, prompt, n, &logits);        // prefill
 *   for (...) { int64_t t = pick(logits); kiln_decoder_step(dec, &t, 1, &logits); }
 *   kiln_decoder_destroy(dec);
 *
 * or calls kiln_generate for the whole loop (greedy, or sampling with
 * temperature, top-k and top-p from a seed).
 *
 * Roles, from the model's inputs and outputs:
 *  - the tokens: the integer input of shape [1, T] (axis 1 symbolic; not
 *    named attention_mask or position_ids);
 *  - the caches: pairs of an input with a symbolic axis of size P and an
 *    output of the same dtype and other dimensions whose size on that axis
 *    is P + T (the past and the present of one layer's keys or values, or
 *    all layers' stacked); every pair shares one P;
 *  - optional inputs named attention_mask ([1, P + T], all ones) and
 *    position_ids ([1, T], P ... P + T - 1);
 *  - the logits: the output named logits, else the first float output of
 *    shape [1, T, V] or [1, V] that is not a cache (f32).
 * Any other symbolic size of an input (a batch) runs at 1.
 *===----------------------------------------------------------------------===*/
#ifndef KILN_GENERATE_H
#define KILN_GENERATE_H

#include "kiln/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_decoder kiln_decoder;

/** Finds the decoder roles of the instance's model and allocates its cache
 *  (the caches' bounds: P up to its symbol's bound). A model without those
 *  roles fails with KILN_ERROR_INVALID_ARGUMENT and kiln_last_error() says
 *  what is missing. The instance must outlive the decoder, and runs no
 *  other calls while a decoder call runs on it. */
kiln_status kiln_decoder_create(kiln_instance *instance, kiln_decoder **out);
void kiln_decoder_destroy(kiln_decoder *decoder);

/** Feeds n >= 1 tokens after the cached ones (in chunks of at most the
 *  token axis's bound) and points *logits at the last token's vocab_size
 *  logits, valid until the decoder's next call. Fails, with the cache as it
 *  was, when a chunk's past length would pass the cache's bound. */
kiln_status kiln_decoder_step(kiln_decoder *decoder, const int64_t *tokens, size_t n,
                              const float **logits);
/** Empties the cache (the next step starts a new sequence). */
void kiln_decoder_reset(kiln_decoder *decoder);
/** Tokens in the cache. */
int64_t kiln_decoder_length(const kiln_decoder *decoder);
/** The most tokens a step's past may hold (the bound of P): a sequence
 *  reaches capacity + 1 tokens, its last step's past capacity long. */
int64_t kiln_decoder_capacity(const kiln_decoder *decoder);
/** The logits' length. */
int64_t kiln_decoder_vocab_size(const kiln_decoder *decoder);
/** What the decoder found: "tokens 'input_ids' [1, T<=32]; 2 caches on axis
 *  3 (past_k -> k, past_v -> v), P<=64; logits 'logits' (256)". */
const char *kiln_decoder_describe(const kiln_decoder *decoder);
/** The message of the decoder's last failed call ("" if none). */
const char *kiln_decoder_error(const kiln_decoder *decoder);

typedef struct kiln_generate_options {
  int32_t max_new_tokens;
  int32_t top_k;     /* sample among the k likeliest tokens; 0: all */
  float top_p;       /* then among the fewest whose probabilities reach
                        top_p (nucleus); 0 or >= 1: all */
  float temperature; /* 0: greedy (the first largest logit); else the
                        logits are divided by it before the softmax */
  uint64_t seed;     /* the sampler's random stream (splitmix64) */
  int64_t eos_token; /* stop after generating it; -1: never */
} kiln_generate_options;

typedef struct kiln_generate_stats {
  int64_t prompt_tokens;
  double prefill_ms; /* the prompt's steps and the first token's choice */
  int64_t decode_tokens; /* tokens fed back one at a time */
  double decode_ms;
} kiln_generate_stats;

/** Resets the decoder, runs the prompt (n >= 1 tokens) and generates up to
 *  options->max_new_tokens tokens into `tokens` (that many entries), their
 *  count in *num_tokens; `stats` may be null. Fails before running when the
 *  prompt and the new tokens cannot fit the cache. */
kiln_status kiln_generate(kiln_decoder *decoder, const int64_t *prompt, size_t n,
                          const kiln_generate_options *options, int64_t *tokens,
                          size_t *num_tokens, kiln_generate_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* KILN_GENERATE_H */
