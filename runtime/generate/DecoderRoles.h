//===- DecoderRoles.h - which inputs and outputs of a model are a decoder's ===//
//
// Reads a model description for the roles kiln/generate.h lists: the tokens,
// the past/present cache pairs, attention_mask, position_ids, the logits.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RUNTIME_GENERATE_DECODERROLES_H
#define KILN_RUNTIME_GENERATE_DECODERROLES_H

#include "kiln/runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::rt {

struct CachePair {
  uint32_t input, output;
  int32_t axis;
};

struct DecoderRoles {
  uint32_t tokens = 0;
  int32_t tokenSymbol = -1, pastSymbol = -1;
  std::vector<CachePair> caches;
  int32_t attentionMask = -1, positionIds = -1; // input indices, or -1
  uint32_t logits = 0;
  int64_t vocab = 0;
  int64_t chunk = 0;    // the bound of T: the most tokens one run takes
  int64_t capacity = 0; // the bound of P
};

/// Finds the roles of `m`; false with `why` naming what is missing or
/// ambiguous.
bool findDecoderRoles(const kiln_model_desc *m, DecoderRoles &roles, std::string &why);

/// One line naming what was found (kiln_decoder_describe).
std::string describeRoles(const kiln_model_desc *m, const DecoderRoles &roles);

} // namespace kiln::rt

#endif
