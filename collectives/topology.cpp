#include "collectives/topology.hpp"

#include <map>

#include "core/common/check.hpp"

namespace taihu::collectives {

Topology::Topology(int ranks, int group_size, Placement placement, Link intra, Link inter,
                   double reduce_rate)
    : group_size_(group_size <= 0 || group_size > ranks ? ranks : group_size),
      placement_(placement),
      intra_(intra),
      inter_(inter),
      reduce_rate_(reduce_rate) {
  require(ranks >= 1, "a topology needs at least one rank, got {}", ranks);
  require(intra.bandwidth > 0 && inter.bandwidth > 0, "link bandwidths must be positive");
  require(intra.latency >= 0 && inter.latency >= 0 && reduce_rate >= 0,
          "latencies and the reduce rate must not be negative");
  const int groups = (ranks + group_size_ - 1) / group_size_;
  group_of_.resize(static_cast<std::size_t>(ranks));
  members_.resize(static_cast<std::size_t>(groups));
  for (int r = 0; r < ranks; ++r) {
    // Round-robin deals ranks out like cards (swCaffe's supernode mapping).
    const int g = placement == Placement::block ? r / group_size_ : r % groups;
    group_of_[static_cast<std::size_t>(r)] = g;
    members_[static_cast<std::size_t>(g)].push_back(r);
  }
}

Topology::Topology(std::vector<int> group_of, int group_size, Placement placement, Link intra, Link inter,
                   double reduce_rate)
    : Topology(static_cast<int>(group_of.size()), group_size, Placement::block, intra, inter, reduce_rate) {
  placement_ = placement;
  std::map<int, int> dense;  // given id -> 0, 1, … in order of first appearance
  members_.clear();
  for (std::size_t r = 0; r < group_of.size(); ++r) {
    const auto [it, added] = dense.emplace(group_of[r], static_cast<int>(dense.size()));
    if (added) members_.emplace_back();
    group_of_[r] = it->second;
    members_[static_cast<std::size_t>(it->second)].push_back(static_cast<int>(r));
  }
  for (const auto& members : members_) {
    require(static_cast<int>(members.size()) <= group_size_, "a group of {} ranks, more than the group size {}",
            members.size(), group_size_);
  }
}

Topology Topology::uniform(int ranks, Link link, double reduce_rate) {
  return Topology(ranks, ranks, Placement::block, link, link, reduce_rate);
}

Topology Topology::from_config(const config::Section& s) {
  const int ranks = s.get<int>("ranks");
  if (ranks < 1) throw s.error("ranks", "must be at least 1");
  const int group_size = s.get_or<int>("group_size", ranks);
  if (group_size < 1) throw s.error("group_size", "must be at least 1");
  const auto placement = s.get_choice("placement", {"block", "round_robin"}, "block") == "block"
                             ? Placement::block
                             : Placement::round_robin;
  auto positive = [&](const char* key, double fallback) {
    const double v = s.get_or<double>(key, fallback);
    if (!(v > 0)) throw s.error(key, "must be positive");
    return v;
  };
  auto non_negative = [&](const char* key, double fallback) {
    const double v = s.get_or<double>(key, fallback);
    if (!(v >= 0)) throw s.error(key, "must not be negative");
    return v;
  };
  Link intra{non_negative("intra_latency", 1e-6), positive("intra_bandwidth", 12e9)};
  Link inter{non_negative("inter_latency", intra.latency), positive("inter_bandwidth", intra.bandwidth)};
  return Topology(ranks, group_size, placement, intra, inter, non_negative("reduce_rate", 0.0));
}

}  // namespace taihu::collectives
