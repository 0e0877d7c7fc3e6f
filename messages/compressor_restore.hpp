#pragma once
// Which compressor states a worker loads into its shards, from the files next
// to the model checkpoint `path` (core/train/compressor_checkpoint.hpp): those
// of the ranks `sources` of a run with `ranks` ranks, written after
// `iteration` solver steps, merged with `weight` (merge_states). A resumed
// run names the rank's own file with weight 1; an elastic regroup names the
// old ranks that ran on the worker's node, so that their pending updates
// carry over to the new ranks.

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace taihu::msg {

struct CompressorRestore {
  std::string path;
  std::int64_t iteration = 0;
  std::int32_t ranks = 0;
  std::vector<std::int32_t> sources;
  float weight = 1.0f;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, CompressorRestore& x) {
  return f(caf::meta::type_name("taihu::msg::CompressorRestore"), x.path, x.iteration, x.ranks, x.sources, x.weight);
}

}  // namespace taihu::msg
