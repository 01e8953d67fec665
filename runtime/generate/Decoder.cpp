//===- Decoder.cpp - a compiled decoder run token by token (kiln/generate.h) //
//
// The decoder keeps each cache at the present's bound. Where the model
// appends to its caches in place (kiln_model_desc.states, on the CPU) that
// is one buffer per cache, which every step extends where it lies
// (kiln_instance_run_states); otherwise two: a step reads the past from one
// and the model writes the present into the other, then they swap.
//
//===----------------------------------------------------------------------===//
#include "kiln/generate.h"

#include "DecoderRoles.h"
#include "Sampler.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace {

struct FreeDeleter {
  void operator()(void *p) const { std::free(p); }
};
using Buffer = std::unique_ptr<char, FreeDeleter>;

/// A zeroed buffer for `bytes` bytes, 64-byte aligned (throws bad_alloc).
Buffer allocate(size_t bytes) {
  size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  void *p = std::aligned_alloc(64, rounded);
  if (!p)
    throw std::bad_alloc();
  std::memset(p, 0, rounded);
  return Buffer(static_cast<char *>(p));
}

size_t boundBytes(const kiln_tensor_desc &d) {
  int64_t n = 1;
  for (int32_t a = 0; a < d.rank; ++a)
    n *= d.shape[a];
  return kiln_tensor_bytes(d.dtype, n);
}

/// Writes value v as element i of an integer tensor of `dtype`.
void storeInteger(void *data, int32_t dtype, int64_t i, int64_t v) {
  if (dtype == KILN_I32)
    static_cast<int32_t *>(data)[i] = static_cast<int32_t>(v);
  else
    static_cast<int64_t *>(data)[i] = v;
}

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

struct kiln_decoder {
  kiln_instance *inst = nullptr;
  const kiln_model_desc *model = nullptr;
  kiln::rt::DecoderRoles roles;
  std::string description, error;
  int64_t length = 0;
  int current = 0; // which of each cache's two buffers holds the past
  std::vector<Buffer> caches[2];
  bool inPlace = false;        // the model appends to every cache in place
  std::vector<Buffer> outputs; // per output: its buffer (caches' are caches[])
  Buffer tokens, mask, positions;
  // One run's tensors and the shapes they point at.
  std::vector<kiln_tensor> in, out;
  std::vector<std::vector<int64_t>> inShapes, outShapes;
  std::vector<int64_t> symbols;

  /// One run of t tokens after the cache; false with `error` set.
  bool run(const int64_t *ids, int64_t t);
  int64_t lastRunTokens = 0; // tokens the last run fed
  /// The logits of the last run's last token.
  const float *lastLogits() const;
  /// Feeds n tokens in chunks; false with `error` set.
  bool feed(const int64_t *ids, size_t n);
  /// The past a sequence of `total` fed tokens has at its last chunk.
  int64_t lastPast(int64_t total, int64_t fedAlready) const;
};

bool kiln_decoder::run(const int64_t *ids, int64_t t) {
  const kiln::rt::DecoderRoles &r = roles;
  const kiln_model_desc *m = model;
  std::fill(symbols.begin(), symbols.end(), 1);
  symbols[r.tokenSymbol] = t;
  symbols[r.pastSymbol] = length;
  if (r.attentionMask >= 0) {
    int32_t s = m->inputs[r.attentionMask].symbols[1];
    if (s != r.tokenSymbol && s != r.pastSymbol)
      symbols[s] = length + t;
  }
  const kiln_tensor_desc &tok = m->inputs[r.tokens];
  for (int64_t k = 0; k < t; ++k)
    storeInteger(tokens.get(), tok.dtype, k, ids[k]);
  if (r.attentionMask >= 0)
    for (int64_t k = 0; k < length + t; ++k)
      storeInteger(mask.get(), m->inputs[r.attentionMask].dtype, k, 1);
  if (r.positionIds >= 0)
    for (int64_t k = 0; k < t; ++k)
      storeInteger(positions.get(), m->inputs[r.positionIds].dtype, k, length + k);

  for (uint32_t i = 0; i < m->num_inputs; ++i) {
    const kiln_tensor_desc &d = m->inputs[i];
    for (int32_t a = 0; a < d.rank; ++a)
      inShapes[i][a] = d.symbols && d.symbols[a] >= 0 ? symbols[d.symbols[a]] : d.shape[a];
    in[i].dtype = d.dtype;
    in[i].rank = d.rank;
    in[i].shape = inShapes[i].data();
  }
  in[r.tokens].data = tokens.get();
  if (r.attentionMask >= 0)
    in[r.attentionMask].data = mask.get();
  if (r.positionIds >= 0)
    in[r.positionIds].data = positions.get();
  for (const auto &c : r.caches)
    in[c.input].data = caches[current][&c - r.caches.data()].get(); // (in place: unread)

  for (uint32_t o = 0; o < m->num_outputs; ++o) {
    const kiln_tensor_desc &d = m->outputs[o];
    kiln_status st = kiln_instance_output_shape(inst, in.data(), in.size(), o, outShapes[o].data());
    if (st != KILN_OK) {
      error = std::string("a step of ") + std::to_string(t) + " token(s) at position " +
              std::to_string(length) + ": " + kiln_instance_error(inst);
      return false;
    }
    out[o].dtype = d.dtype;
    out[o].rank = d.rank;
    out[o].shape = outShapes[o].data();
    out[o].data = outputs[o].get();
  }
  int next = inPlace ? current : 1 - current;
  for (const auto &c : r.caches)
    out[c.output].data = caches[next][&c - r.caches.data()].get();

  kiln_status st =
      inPlace ? kiln_instance_run_states(inst, in.data(), in.size(), out.data(), out.size())
              : kiln_instance_run(inst, in.data(), in.size(), out.data(), out.size());
  if (st != KILN_OK) {
    error = std::string("a step of ") + std::to_string(t) + " token(s) at position " +
            std::to_string(length) + ": " + kiln_instance_error(inst);
    return false;
  }
  current = next;
  length += t;
  lastRunTokens = t;
  return true;
}

const float *kiln_decoder::lastLogits() const {
  const float *l = reinterpret_cast<const float *>(outputs[roles.logits].get());
  return model->outputs[roles.logits].rank == 3 ? l + (lastRunTokens - 1) * roles.vocab : l;
}

int64_t kiln_decoder::lastPast(int64_t total, int64_t fedAlready) const {
  int64_t lastChunk = total % roles.chunk ? total % roles.chunk : roles.chunk;
  return fedAlready + total - lastChunk;
}

bool kiln_decoder::feed(const int64_t *ids, size_t n) {
  int64_t past = lastPast(static_cast<int64_t>(n), length);
  if (past > roles.capacity) {
    error = "the cache is full: " + std::to_string(length) + " position(s) and " +
            std::to_string(n) + " new token(s) need a past of " + std::to_string(past) + "; '" +
            model->inputs[roles.caches[0].input].name + "' holds at most " +
            std::to_string(roles.capacity) + " (its bound: compile with a larger --max-shape)";
    return false;
  }
  for (size_t off = 0; off < n;) {
    int64_t t = std::min<int64_t>(roles.chunk, static_cast<int64_t>(n - off));
    if (!run(ids + off, t)) {
      length = 0;
      error += " (the decoder was reset)";
      return false;
    }
    off += static_cast<size_t>(t);
  }
  return true;
}

namespace {
thread_local std::string createError;

/// Runs a decoder entry point; exceptions (a failed allocation) become codes
/// with the decoder's message.
template <typename Call> kiln_status guarded(kiln_decoder *d, Call call) {
  if (!d)
    return KILN_ERROR_INVALID_ARGUMENT;
  try {
    d->error.clear();
    return call();
  } catch (const std::bad_alloc &) {
    d->error = "out of memory";
    return KILN_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception &e) {
    d->error = std::string("internal error: ") + e.what();
  } catch (...) {
    d->error = "internal error";
  }
  return KILN_ERROR_INTERNAL;
}
} // namespace

extern "C" {

kiln_status kiln_decoder_create(kiln_instance *inst, kiln_decoder **out) {
  if (!inst || !out) {
    createError = "kiln_decoder_create: null instance or result pointer";
    return KILN_ERROR_INVALID_ARGUMENT;
  }
  *out = nullptr;
  try {
    auto d = std::make_unique<kiln_decoder>();
    d->inst = inst;
    d->model = kiln_instance_model(inst);
    const kiln_model_desc *m = d->model;
    std::string why;
    if (!kiln::rt::findDecoderRoles(m, d->roles, why)) {
      createError = std::string("model '") + m->name + "' is not a decoder with a KV cache: " + why;
      return KILN_ERROR_INVALID_ARGUMENT;
    }
    d->description = kiln::rt::describeRoles(m, d->roles);
    for (uint32_t o = 0; o < m->num_outputs; ++o)
      d->outputs.push_back(allocate(boundBytes(m->outputs[o])));
    // In place when the model lists every cache pair as a state.
    d->inPlace = true;
    for (const auto &c : d->roles.caches) {
      bool listed = false;
      for (uint32_t k = 0; k < m->num_states && !listed; ++k)
        listed = m->states[3 * k] == static_cast<int32_t>(c.input) &&
                 m->states[3 * k + 1] == static_cast<int32_t>(c.output) &&
                 m->states[3 * k + 2] == c.axis;
      d->inPlace &= listed;
    }
    for (const auto &c : d->roles.caches)
      for (int set = 0; set < (d->inPlace ? 1 : 2); ++set)
        d->caches[set].push_back(allocate(boundBytes(m->outputs[c.output])));
    if (d->inPlace)
      d->description += "; caches appended in place";
    // The caches' own output buffers are unused: the pairs' buffers serve.
    for (const auto &c : d->roles.caches)
      d->outputs[c.output].reset();
    size_t positions = static_cast<size_t>(d->roles.capacity + d->roles.chunk);
    d->tokens = allocate(8 * static_cast<size_t>(d->roles.chunk));
    d->mask = allocate(8 * positions);
    d->positions = allocate(8 * static_cast<size_t>(d->roles.chunk));
    d->in.resize(m->num_inputs);
    d->out.resize(m->num_outputs);
    for (uint32_t i = 0; i < m->num_inputs; ++i)
      d->inShapes.emplace_back(std::max(m->inputs[i].rank, 1));
    for (uint32_t o = 0; o < m->num_outputs; ++o)
      d->outShapes.emplace_back(std::max(m->outputs[o].rank, 1));
    d->symbols.resize(m->num_symbols);
    *out = d.release();
    return KILN_OK;
  } catch (const std::bad_alloc &) {
    createError = "kiln_decoder_create: out of memory (the caches at their bounds)";
    return KILN_ERROR_OUT_OF_MEMORY;
  } catch (...) {
    createError = "kiln_decoder_create: internal error";
    return KILN_ERROR_INTERNAL;
  }
}

void kiln_decoder_destroy(kiln_decoder *d) { delete d; }

kiln_status kiln_decoder_step(kiln_decoder *d, const int64_t *tokens, size_t n,
                              const float **logits) {
  return guarded(d, [&] {
    if (!tokens || n == 0 || !logits) {
      d->error = "kiln_decoder_step: no tokens or a null logits pointer";
      return KILN_ERROR_INVALID_ARGUMENT;
    }
    if (!d->feed(tokens, n))
      return KILN_ERROR_SHAPE_MISMATCH;
    *logits = d->lastLogits();
    return KILN_OK;
  });
}

void kiln_decoder_reset(kiln_decoder *d) {
  if (d)
    d->length = 0;
}

int64_t kiln_decoder_length(const kiln_decoder *d) { return d ? d->length : 0; }
int64_t kiln_decoder_capacity(const kiln_decoder *d) { return d ? d->roles.capacity : 0; }
int64_t kiln_decoder_vocab_size(const kiln_decoder *d) { return d ? d->roles.vocab : 0; }

const char *kiln_decoder_describe(const kiln_decoder *d) { return d ? d->description.c_str() : ""; }

const char *kiln_decoder_error(const kiln_decoder *d) {
  return d ? d->error.c_str() : createError.c_str();
}

kiln_status kiln_generate(kiln_decoder *d, const int64_t *prompt, size_t n,
                          const kiln_generate_options *o, int64_t *tokens, size_t *numTokens,
                          kiln_generate_stats *stats) {
  return guarded(d, [&] {
    if (!prompt || n == 0 || !o || !numTokens || o->max_new_tokens < 0 ||
        (o->max_new_tokens > 0 && !tokens)) {
      d->error = "kiln_generate: no prompt, null options, tokens or count, or a negative "
                 "max_new_tokens";
      return KILN_ERROR_INVALID_ARGUMENT;
    }
    *numTokens = 0;
    int64_t fed = static_cast<int64_t>(n) + std::max(o->max_new_tokens - 1, 0);
    int64_t past = o->max_new_tokens >= 2 ? fed - 1 : d->lastPast(static_cast<int64_t>(n), 0);
    if (past > d->roles.capacity) {
      d->error = "a prompt of " + std::to_string(n) + " token(s) and " +
                 std::to_string(o->max_new_tokens) + " new token(s) need a past of " +
                 std::to_string(past) + " positions; '" +
                 d->model->inputs[d->roles.caches[0].input].name + "' holds at most " +
                 std::to_string(d->roles.capacity) +
                 " (its bound: compile with a larger --max-shape)";
      return KILN_ERROR_SHAPE_MISMATCH;
    }
    kiln::rt::Sampler sampler(o->temperature, o->top_k, o->top_p, o->seed);
    d->length = 0;
    auto t0 = std::chrono::steady_clock::now();
    const float *logits = nullptr;
    kiln_status st = kiln_decoder_step(d, prompt, n, &logits);
    size_t count = 0;
    if (st == KILN_OK && o->max_new_tokens > 0) {
      tokens[count] = sampler.next(logits, d->roles.vocab);
      ++count;
    }
    double prefill = msSince(t0);
    auto t1 = std::chrono::steady_clock::now();
    while (st == KILN_OK && count > 0 && tokens[count - 1] >= 0 &&
           count < static_cast<size_t>(o->max_new_tokens) && tokens[count - 1] != o->eos_token) {
      st = kiln_decoder_step(d, &tokens[count - 1], 1, &logits);
      if (st == KILN_OK)
        tokens[count++] = sampler.next(logits, d->roles.vocab);
    }
    if (st == KILN_OK && count > 0 && tokens[count - 1] < 0) {
      d->error = "the logits of step " + std::to_string(count) + " hold no number above -inf";
      st = KILN_ERROR_INTERNAL;
      --count;
    }
    *numTokens = count;
    if (stats) {
      stats->prompt_tokens = static_cast<int64_t>(n);
      stats->prefill_ms = prefill;
      stats->decode_tokens = count > 0 ? static_cast<int64_t>(count) - 1 : 0;
      stats->decode_ms = msSince(t1);
    }
    return st;
  });
}

} // extern "C"
