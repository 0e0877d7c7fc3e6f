#pragma once
// A rank's gradient-compressor state in a data-parallel checkpoint. Residuals
// and compressor momentum differ per rank, so every rank writes its own file
// next to the model checkpoint (`<checkpoint>.compress-<rank>`) at the same
// iteration; a resumed run loads them and continues exactly where it stopped.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/compress/compressor.hpp"

namespace taihu {

struct CompressorCheckpoint {
  int64_t iteration = 0;  // solver steps taken: the model checkpoint's
  int rank = 0;
  int ranks = 0;
  std::vector<std::string> buckets;  // by bucket: encode_states() of its shard; empty: not compressed

  template <class Archive>
  void serialize(Archive& archive) {
    archive(iteration, rank, ranks, buckets);
  }
};

std::filesystem::path compressor_checkpoint_path(const std::filesystem::path& checkpoint, int rank);
// Atomic like save_checkpoint; load checks the framing and names the file.
void save_compressor_checkpoint(const CompressorCheckpoint& checkpoint, const std::filesystem::path& path);
CompressorCheckpoint load_compressor_checkpoint(const std::filesystem::path& path);

// A shard's compressor states as bytes (what travels between actors).
std::string encode_states(const std::vector<compress::CompressorState>& states);
std::vector<compress::CompressorState> decode_states(const std::string& bytes);

}  // namespace taihu
