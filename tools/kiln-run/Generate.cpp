//===- Generate.cpp - kiln-run --generate: a decoder's tokens and tokens/s -===//
//
// Runs kiln_generate (kiln/generate.h) of the loaded artifact on a prompt
// (given, or drawn from the seed) and prints the tokens and the prefill and
// decode speeds; with --bench R, the medians of R more generations.
//
//===----------------------------------------------------------------------===//
#include "Generate.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace kiln::run {
namespace {

template <typename F> bool bind(void *lib, const char *name, F &fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::string join(const int64_t *t, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i)
    s += (i ? " " : "") + std::to_string(t[i]);
  return s;
}

} // namespace

int generate(void *lib, kiln_instance *inst, const GenerateArgs &a) {
  decltype(&kiln_decoder_create) create;
  decltype(&kiln_decoder_destroy) destroy;
  decltype(&kiln_decoder_error) error;
  decltype(&kiln_decoder_describe) describe;
  decltype(&kiln_decoder_vocab_size) vocab;
  decltype(&kiln_generate) run;
  if (!bind(lib, "kiln_decoder_create", create) || !bind(lib, "kiln_decoder_destroy", destroy) ||
      !bind(lib, "kiln_decoder_error", error) || !bind(lib, "kiln_decoder_describe", describe) ||
      !bind(lib, "kiln_decoder_vocab_size", vocab) || !bind(lib, "kiln_generate", run)) {
    std::fprintf(stderr, "kiln-run: error: the artifact's runtime has no kiln_generate "
                         "(recompile it)\n");
    return 1;
  }
  kiln_decoder *dec = nullptr;
  if (create(inst, &dec) != KILN_OK) {
    std::fprintf(stderr, "kiln-run: error: --generate: %s\n", error(nullptr));
    return 1;
  }
  std::vector<int64_t> prompt = a.prompt;
  if (prompt.empty()) {
    // A prompt drawn from the seed (the same on every machine: the
    // standard's mt19937_64 sequence).
    std::mt19937_64 draw(a.options.seed);
    for (int64_t i = 0; i < a.promptLength; ++i)
      prompt.push_back(static_cast<int64_t>(draw() % static_cast<uint64_t>(vocab(dec))));
  }
  for (int64_t t : prompt)
    if (t < 0 || t >= vocab(dec)) {
      std::fprintf(stderr,
                   "kiln-run: error: --prompt token %lld is outside the vocabulary "
                   "[0, %lld)\n",
                   static_cast<long long>(t), static_cast<long long>(vocab(dec)));
      destroy(dec);
      return 1;
    }
  std::vector<int64_t> tokens(std::max(a.options.max_new_tokens, 1));
  std::vector<double> prefill, decode;
  kiln_generate_stats st{};
  size_t n = 0;
  for (int r = 0; r <= a.bench; ++r) {
    if (run(dec, prompt.data(), prompt.size(), &a.options, tokens.data(), &n, &st) != KILN_OK) {
      std::fprintf(stderr, "kiln-run: error: --generate: %s\n", error(dec));
      destroy(dec);
      return 1;
    }
    if (r > 0 || a.bench == 0) {
      prefill.push_back(st.prefill_ms);
      decode.push_back(st.decode_ms);
    }
  }
  std::printf("decoder: %s\n", describe(dec));
  std::printf("prompt (%zu tokens): %s\n", prompt.size(),
              join(prompt.data(), prompt.size()).c_str());
  std::printf("generated (%zu tokens): %s\n", n, join(tokens.data(), n).c_str());
  double p = median(prefill), d = median(decode);
  const char *of = a.bench > 0 ? " (median of the timed generations)" : "";
  std::printf("prefill: %lld tokens in %.3f ms, %.1f tokens/s%s\n",
              static_cast<long long>(st.prompt_tokens), p,
              p > 0 ? 1e3 * static_cast<double>(st.prompt_tokens) / p : 0.0, of);
  std::printf("decode: %lld tokens in %.3f ms, %.1f tokens/s, %.4f ms/token%s\n",
              static_cast<long long>(st.decode_tokens), d,
              d > 0 ? 1e3 * static_cast<double>(st.decode_tokens) / d : 0.0,
              st.decode_tokens > 0 ? d / static_cast<double>(st.decode_tokens) : 0.0, of);
  destroy(dec);
  return 0;
}

} // namespace kiln::run
