#pragma once
// A simulated interconnect for the shard actors (see simulation.hpp): where
// each rank sits, the links between nodes, and when a message sent at time t
// arrives.
//
// Timing of one message of b bytes from rank a to rank b, sent at t:
//   route(a, b) = the links it crosses, a latency α and a per-message
//   bandwidth cap (what one flow can reach; at most the slowest link).
//   contention = none:  arrives at t + (α + b / cap)                (α-β model)
//   contention = fifo:  links are capacity reservations, claimed in the order
//     messages are sent (the simulator sends in time order). On link l the
//     message starts at s_l = max(s_{l-1}, free_l), no earlier than on the
//     link before it, and holds the link for b / bandwidth_l: free_l = s_l +
//     b / bandwidth_l. It arrives at α + max(max_l free_l, s_last + b / cap).
//     So a lone message costs the same as with contention = none; messages
//     that share a link queue behind each other, and a wide oversubscribed
//     uplink carries as many flows at once as its capacity allows (its
//     aggregate rate is right). This is store-and-forward of whole messages
//     with cut-through pipelining between hops; it ignores packet interleaving
//     (no fair share among concurrent flows: the first one claimed goes first)
//     and reserves on send, not when the head reaches the hop.
//   Messages larger than `rendezvous_bytes` pay `rendezvous_latency` more
//   (MPI's eager -> rendezvous switch; sw26010.md §4.2: µs below 2 KB, ms above).
// The receiving rank adds received bytes at `reduce_rate` (γ = 1 / rate).
//
// Models (config section [network], key `model`; errors name file, line, key):
//   classes   — sync::Topology's two link classes (topology.hpp keys: group_size,
//               placement, intra_/inter_ latency and bandwidth, reduce_rate):
//               each node has one out and one in link; the class sets α and cap.
//   tree      — switches in levels (a supernode machine, a fat tree, a server):
//               group_sizes = 256          nodes per group at levels 1, 2, … (each a
//                                          multiple of the one before); the top
//                                          switch joins all groups
//               node_bandwidth = 6e9       node <-> level-1 switch, each way
//               taper = 4                  per level: a group's uplink carries
//                                          group nodes · node_bandwidth / taper
//               uplink_bandwidth = …       per level, instead of taper
//               flow_bandwidth = …         per level of the route's top: cap of one
//                                          flow (default node_bandwidth)
//               latency = 1e-6 2e-6        per level of the route's top switch
//                                          (level 1 … top), one value = all
//   dragonfly — Cray-style: nodes_per_router, routers_per_group (all-to-all local
//               links), groups (one global link between each pair of groups,
//               minimal routing: local hop to the gateway router, global hop,
//               local hop); node_bandwidth, local_bandwidth, global_bandwidth,
//               hop_latency (per router traversed), latency (base).
// Common keys: reduce_rate (bytes/s, 0 = free), contention = none | fifo,
//   rendezvous_bytes, rendezvous_latency, placement = block | round_robin
//   (round_robin deals ranks over the level-1 groups actually used, like
//   sync::Topology's round_robin; block fills group after group).
// The collectives see the network as a sync::Topology: groups = level-1
// groups (tree), routers' groups (dragonfly); intra/inter links are the
// lone-message costs inside a group and across groups.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/topology.hpp"
#include "core/config/config.hpp"

namespace taihu::simulator {

enum class Contention : std::uint8_t { none, fifo };

struct Route {
  static constexpr int max_hops = 12;
  std::array<std::uint32_t, max_hops> links{};
  int hops = 0;
  double latency = 0;    // α, seconds
  double bandwidth = 0;  // cap of one flow, bytes/s
  void add(std::uint32_t link) { links[static_cast<std::size_t>(hops++)] = link; }
};

struct LinkUsage {
  double bytes = 0;
  std::uint64_t messages = 0;
};

class Network {
 public:
  virtual ~Network() = default;
  // Reads [network]-style keys (see above) for `ranks` ranks.
  static std::unique_ptr<Network> from_config(const config::Section& section, int ranks);
  // The classes model of an existing topology (rank r on node r).
  static std::unique_ptr<Network> from_topology(const collectives::Topology& topology, Contention contention);

  int ranks() const { return static_cast<int>(node_of_.size()); }
  int node_of(int rank) const { return node_of_[static_cast<std::size_t>(rank)]; }
  const std::string& model() const { return model_; }
  Contention contention() const { return contention_; }
  void set_contention(Contention c) { contention_ = c; }
  // The collectives' view: groups, placement, lone-message link classes, γ.
  const collectives::Topology& topology() const { return *topology_; }
  double reduce_time(double bytes) const { return reduce_rate_ > 0 ? bytes / reduce_rate_ : 0.0; }

  // Sends `bytes` from rank `from` to rank `to` at time t; returns the arrival
  // time. Records the traffic on every link of the route and, with fifo
  // contention, reserves them.
  double transmit(int from, int to, double bytes, double t);
  // The route between two ranks (for tests and reports).
  Route route_between(int from, int to) const;

  std::size_t link_count() const { return links_.size(); }
  const std::string& link_name(std::size_t link) const { return links_[link].name; }
  double link_bandwidth(std::size_t link) const { return links_[link].bandwidth; }
  const LinkUsage& usage(std::size_t link) const { return links_[link].usage; }
  // Index of the link called `name` (throws if none).
  std::size_t find_link(const std::string& name) const;
  // Forgets traffic and reservations (a new run on the same network).
  void reset();

 protected:
  Network() = default;
  virtual void route(int node_from, int node_to, Route& out) const = 0;
  std::uint32_t add_link(std::string name, double bandwidth);
  // Rank -> node by placement over groups of `group_nodes` nodes; sets the
  // collectives' Topology from two lone-message routes (inside, across).
  void place(int ranks, int group_nodes, collectives::Placement placement, bool derive_topology = true);
  void set_topology(const collectives::Topology& topology) { topology_ = std::make_unique<collectives::Topology>(topology); }

  std::string model_;
  Contention contention_ = Contention::fifo;
  double reduce_rate_ = 0;
  double rendezvous_bytes_ = 0;    // 0: no rendezvous surcharge
  double rendezvous_latency_ = 0;

 private:
  struct LinkState {
    std::string name;
    double bandwidth = 0;
    double free_at = 0;
    LinkUsage usage;
  };
  std::vector<LinkState> links_;
  std::vector<int> node_of_;
  std::unique_ptr<collectives::Topology> topology_;
};

}  // namespace taihu::simulator
