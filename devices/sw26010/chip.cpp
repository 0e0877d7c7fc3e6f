#include "devices/sw26010/chip.hpp"

#include <algorithm>
#include <cmath>

namespace taihu::sw26010 {

Chip::Chip(const Params& params) : params_(params) {
  for (int g = 0; g < groups; ++g) groups_[std::size_t(g)] = std::make_unique<CoreGroup>(g, params_);
}

std::array<std::pair<std::int64_t, std::int64_t>, Chip::groups> Chip::split_batch(std::int64_t batch) {
  std::array<std::pair<std::int64_t, std::int64_t>, groups> out;
  std::int64_t begin = 0;
  for (int g = 0; g < groups; ++g) {
    const std::int64_t size = batch / groups + (g < batch % groups ? 1 : 0);
    out[std::size_t(g)] = {begin, begin + size};
    begin += size;
  }
  return out;
}

Chip::LayerRun Chip::run_split(std::int64_t batch,
                               const std::function<KernelStats(CoreGroup&, std::int64_t, std::int64_t)>& work) {
  LayerRun run;
  const auto parts = split_batch(batch);
  std::int64_t slowest = 0;
  for (int g = 0; g < groups; ++g) {
    const auto [begin, end] = parts[std::size_t(g)];
    if (end > begin) run.per_group[std::size_t(g)] = work(group(g), begin, end);
    slowest = std::max(slowest, run.per_group[std::size_t(g)].cycles);
  }
  run.cycles = slowest + std::int64_t(std::ceil(params_.cg_sync_cycles));
  // the groups leave the sync together
  std::int64_t now = 0;
  for (int g = 0; g < groups; ++g) now = std::max(now, group(g).clock());
  for (int g = 0; g < groups; ++g) group(g).set_clock(now + std::int64_t(std::ceil(params_.cg_sync_cycles)));
  run.seconds = params_.seconds(double(run.cycles));
  return run;
}

}  // namespace taihu::sw26010
