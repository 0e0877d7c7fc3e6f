#pragma once
// The SW26010 chip: 4 core groups. swCaffe runs one persistent thread per
// core group, each on a quarter of the mini-batch, and sums the weight
// gradients afterwards (P §V-A). A layer on the chip is therefore 4 work
// items (one per core group) that each return simulated cycles and write
// their part of the numerics; the layer takes as long as the slowest plus a
// Simple_Sync. The items are independent: an actor per core group can run
// them concurrently (each CoreGroup is single-threaded state).

#include <array>
#include <functional>
#include <memory>
#include <utility>

#include "devices/sw26010/core_group.hpp"

namespace taihu::sw26010 {

class Chip {
 public:
  static constexpr int groups = 4;
  explicit Chip(const Params& params = Params::defaults());

  CoreGroup& group(int g) { return *groups_[std::size_t(g)]; }
  const Params& params() const { return params_; }

  // Each group's [begin, end) of a batch: contiguous, sizes differing by at most 1.
  static std::array<std::pair<std::int64_t, std::int64_t>, groups> split_batch(std::int64_t batch);

  struct LayerRun {
    std::array<KernelStats, groups> per_group;
    std::int64_t cycles = 0;  // slowest group + the core-group sync
    double seconds = 0;
  };
  // work(group, begin, end) for each group's share of the batch, then a sync.
  LayerRun run_split(std::int64_t batch,
                     const std::function<KernelStats(CoreGroup&, std::int64_t, std::int64_t)>& work);

 private:
  Params params_;
  std::array<std::unique_ptr<CoreGroup>, groups> groups_;
};

}  // namespace taihu::sw26010
