//===- Generate.h - kiln-run --generate -----------------------------------===//
#ifndef KILN_TOOLS_KILN_RUN_GENERATE_H
#define KILN_TOOLS_KILN_RUN_GENERATE_H

#include "kiln/generate.h"

#include <cstdint>
#include <vector>

namespace kiln::run {

struct GenerateArgs {
  kiln_generate_options options{0, 0, 1.0f, 0.0f, 0, -1};
  std::vector<int64_t> prompt; // empty: promptLength tokens from the seed
  int64_t promptLength = 16;
  int bench = 0; // generations timed after the first
};

/// Generates with the artifact `lib` (dlopen'ed) on `inst`; prints the
/// decoder's roles, the tokens and the speeds. Returns the exit status.
int generate(void *lib, kiln_instance *inst, const GenerateArgs &args);

} // namespace kiln::run

#endif
