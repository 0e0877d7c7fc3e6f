#pragma once
// Where the ranks of a collective live and what their links cost.
//
// Two link classes: inside a group (a supernode, a host, a switch) and
// between groups. A message of b bytes on a link costs latency + b / bandwidth
// (α + β·b); adding b received bytes into a buffer costs b / reduce_rate (γ·b).
//
// Config section (all times in seconds, bandwidths and rates in bytes/s):
//   [topology]
//   ranks = 8                  # required: number of ranks (workers, nodes)
//   group_size = 4             # ranks per group (supernode); default: ranks (one group).
//                              # The last group is smaller when it does not divide ranks.
//   placement = block          # block: group g holds ranks g·group_size …  (contiguous)
//                              # round_robin: rank r is in group r mod groups (swCaffe §7)
//   intra_bandwidth = 12e9     # default 12e9
//   intra_latency = 1e-6       # default 1e-6
//   inter_bandwidth = 3e9      # default: intra_bandwidth
//   inter_latency = 1e-6       # default: intra_latency
//   reduce_rate = 10e9         # default 0 = reductions are free (γ = 0)

#include <vector>

#include "core/config/config.hpp"

namespace taihu::collectives {

// block and round_robin place ranks by formula; random is drawn by the
// simulator's networks (nodes drawn from a whole machine, simulator/network.hpp),
// which then give each rank's group explicitly.
enum class Placement { block, round_robin, random };
enum class LinkClass { intra, inter };

struct Link {
  double latency = 1e-6;    // α, seconds per message
  double bandwidth = 12e9;  // bytes/s; β = 1 / bandwidth
  double time(double bytes) const { return latency + bytes / bandwidth; }
};

class Topology {
 public:
  // `group_size` <= 0 means one group of all ranks.
  Topology(int ranks, int group_size, Placement placement, Link intra, Link inter,
           double reduce_rate = 0.0);
  // Rank r in group `group_of[r]` (any ids; renumbered 0, 1, … in order of
  // first appearance), groups of at most `group_size` ranks.
  Topology(std::vector<int> group_of, int group_size, Placement placement, Link intra, Link inter,
           double reduce_rate = 0.0);
  // All ranks in one group, every link `link`.
  static Topology uniform(int ranks, Link link = {}, double reduce_rate = 0.0);
  // Reads the keys documented above; errors name the file, line and key.
  static Topology from_config(const config::Section& section);

  int ranks() const { return static_cast<int>(group_of_.size()); }
  int groups() const { return static_cast<int>(members_.size()); }
  int group_size() const { return group_size_; }
  Placement placement() const { return placement_; }
  int group_of(int rank) const { return group_of_[static_cast<std::size_t>(rank)]; }
  // Ranks of group g, ascending.
  const std::vector<int>& members(int group) const { return members_[static_cast<std::size_t>(group)]; }
  bool same_group(int a, int b) const { return group_of(a) == group_of(b); }

  LinkClass link_class(int a, int b) const { return same_group(a, b) ? LinkClass::intra : LinkClass::inter; }
  const Link& link(int a, int b) const { return same_group(a, b) ? intra_ : inter_; }
  const Link& intra() const { return intra_; }
  const Link& inter() const { return inter_; }
  // Seconds to add `bytes` received bytes into the buffer (γ·bytes).
  double reduce_time(double bytes) const { return reduce_rate_ > 0 ? bytes / reduce_rate_ : 0.0; }
  double reduce_rate() const { return reduce_rate_; }

 private:
  int group_size_;
  Placement placement_;
  Link intra_, inter_;
  double reduce_rate_;
  std::vector<int> group_of_;
  std::vector<std::vector<int>> members_;
};

}  // namespace taihu::collectives
