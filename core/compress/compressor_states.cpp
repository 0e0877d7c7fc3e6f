#include "core/compress/compressor_states.hpp"

#include "core/common/cereal_bytes.hpp"
#include "core/common/check.hpp"

namespace taihu {

std::string encode_states(const std::vector<compress::CompressorState>& states) { return encode_bytes(states); }

std::vector<compress::CompressorState> merge_states(const std::vector<std::vector<compress::CompressorState>>& sources,
                                                    float weight) {
  require(!sources.empty(), "merge_states: no sources");
  std::vector<compress::CompressorState> merged = sources.front();
  for (std::size_t s = 0; s < sources.size(); ++s) {
    require(sources[s].size() == merged.size(), "merge_states: source {} has {} segments, source 0 has {}", s,
            sources[s].size(), merged.size());
    for (std::size_t i = 0; i < merged.size(); ++i)
      require(sources[s][i].residual.size() == merged[i].residual.size() &&
                  sources[s][i].velocity.size() == merged[i].velocity.size(),
              "merge_states: segment {} of source {} holds {} + {} floats, of source 0 {} + {}", i, s,
              sources[s][i].residual.size(), sources[s][i].velocity.size(), merged[i].residual.size(),
              merged[i].velocity.size());
  }
  for (std::size_t i = 0; i < merged.size(); ++i) {
    auto combine = [&](std::vector<float> compress::CompressorState::*field) {
      std::vector<float>& out = merged[i].*field;
      for (std::size_t s = 1; s < sources.size(); ++s) {
        const std::vector<float>& in = sources[s][i].*field;
        for (std::size_t k = 0; k < out.size(); ++k) out[k] += in[k];
      }
      for (float& v : out) v *= weight;
    };
    combine(&compress::CompressorState::residual);
    combine(&compress::CompressorState::velocity);
  }
  return merged;
}

std::vector<compress::CompressorState> decode_states(const std::string& bytes) {
  return decode_bytes<std::vector<compress::CompressorState>>(bytes, "compressor state");
}

}  // namespace taihu
