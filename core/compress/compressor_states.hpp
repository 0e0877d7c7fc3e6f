#pragma once
// A shard's compressor states (residuals, momentum, threshold and sampling
// state of each segment) as the bytes that travel between actors, and merged
// when an elastic regroup changes the number of ranks. Where they are stored
// is the checkpoint code's (core/train/compressor_checkpoint.hpp).

#include <string>
#include <vector>

#include "core/compress/compressor.hpp"

namespace taihu {

std::string encode_states(const std::vector<compress::CompressorState>& states);
// Throws taihu::Error for bytes that are not a list of states.
std::vector<compress::CompressorState> decode_states(const std::string& bytes);

// A rank's states after an elastic regroup onto another number of ranks:
// weight x the sum of the residuals and velocities of `sources` (each a
// shard's states from one old rank, all of one layout); the threshold,
// sampling and sign state of the first source. With weight = (new ranks /
// old ranks) / (new ranks sharing these sources), the pending update
// (sum of residuals / ranks) of the old ranks that survive carries over
// exactly. Throws taihu::Error when the sources' layouts differ.
std::vector<compress::CompressorState> merge_states(const std::vector<std::vector<compress::CompressorState>>& sources,
                                                    float weight);

}  // namespace taihu
