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
// The receiving rank adds received bytes at `reduce_rate` (γ = 1 / rate);
//   a message of fewer than `small_reduce_bytes` is added at
//   `small_reduce_rate` instead (an adder with a start-up cost that falls back
//   to a plainer path for small blocks: swCaffe's CPE adder sums fewer than
//   32K floats on the MPE, sw26010.md §7.1).
//
// Token-bucket links (contention = fifo; tree and dragonfly node links:
//   node_burst, node_peak_bandwidth): a shaper such as Linux tc tbf or a
//   cloud NIC's burst credit. The link's bucket holds up to `burst` bytes and
//   fills at the link's bandwidth; while it holds tokens the link carries at
//   `peak` (the wire beneath the shaper), so a message of b bytes that finds
//   T tokens takes b / peak if b <= T·peak / (peak - rate), else drains the
//   bucket in T / (peak - rate) and sends the rest at the rate. A link idle
//   for burst / rate is full again. The bucket is full when a run starts,
//   or holds idle_before · rate (set_idle_before: training, where the links
//   rest during compute after the previous iteration's collective drained
//   them). A route through a bucket link is capped by its flow bandwidth
//   only (flow_bandwidth defaults to node_peak_bandwidth there).
//
// Host CPUs (contention = fifo; keys host_cores, host_nodes,
//   send_cpu_rate, receive_cpu_rate, tls, tls_cpu_rate): the protocol work of
//   a message (copies through the TCP stack, TLS records) and the reduction
//   run on the cores of the node's host, shared by `host_nodes` consecutive
//   nodes (several nodes on one machine, as namespaces or containers; 1 = a
//   machine per node). Each host has `host_cores` cores; a job takes the
//   core that frees first (one thread per job: a lone job runs at one core's
//   speed, concurrent jobs share the host's cores). A message of b bytes
//   sent at t puts a job of b / send_cpu_rate (+ b / tls_cpu_rate with
//   tls = on) on the sender's host and one of b / receive_cpu_rate (+ b /
//   tls_cpu_rate) on the receiver's, both from t: the stack works while the
//   bytes are on the wire, so the message arrives at α + the latest of its
//   links' and its jobs' ends. A reduction of b bytes is a job of
//   b / reduce_rate on the receiver's host, after the receive. Rates are
//   bytes per second of one core; 0 = free. `host_core_share` (default 1):
//   the share of each core the nodes get where the machine runs other work
//   too (a scheduler sharing the cores fairly): every job takes 1 / share
//   times as long. Without host_cores the CPUs are not modelled (reductions
//   cost γ·b on the rank's own clock, as before).
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
// Common keys: reduce_rate (bytes/s, 0 = free), small_reduce_bytes,
//   small_reduce_rate, contention = none | fifo, rendezvous_bytes,
//   rendezvous_latency, placement = block | round_robin | random, placement_seed,
//   host_cores, host_nodes, host_core_share, send_cpu_rate, receive_cpu_rate,
//   tls = off | on, tls_cpu_rate (host CPUs, above)
//   (round_robin deals ranks over the level-1 groups actually used, like
//   sync::Topology's round_robin; block fills group after group; random
//   draws the ranks' nodes from the whole machine, as a batch scheduler does
//   on a busy machine: tree needs `nodes`, the machine's node count (with any
//   placement, a bound on the ranks), dragonfly draws from its `groups`;
//   `placement_seed` (default 1) picks the draw, the same on every platform).
// The collectives see the network as a sync::Topology: groups = level-1
// groups (tree), routers' groups (dragonfly); intra/inter links are the
// lone-message costs inside a group and across groups; γ is reduce_rate's
// (the cost model that picks algorithms does not see small_reduce_rate).

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
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
  double reduce_time(double bytes) const {
    if (bytes < small_reduce_bytes_) return bytes / small_reduce_rate_;
    return reduce_rate_ > 0 ? bytes / reduce_rate_ : 0.0;
  }
  // When rank `rank` has reduced `bytes` received bytes, starting at t: t + γ·bytes,
  // or later where the reduction waits for a core of its host (host CPUs).
  double reduce(int rank, double bytes, double t);
  // When rank `rank` has done `seconds` of one core's work (e.g. compressing
  // its gradient) starting at t: t + seconds, or later where the work waits
  // for a core of its host or gets a share of one (host CPUs).
  double work(int rank, double seconds, double t);
  // Whether host CPUs are modelled (host_cores > 0).
  bool models_cpu() const { return host_cores_ > 0; }
  // Seconds the links rested before the run: buckets (node_burst) start with
  // min(burst, idle · rate) tokens; infinity (the default) = full. Takes
  // effect at the next reset().
  void set_idle_before(double seconds) { idle_before_ = seconds; }

  // Sends `bytes` from rank `from` to rank `to` at time t; returns the arrival
  // time. Records the traffic on every link of the route and, with fifo
  // contention, reserves them.
  double transmit(int from, int to, double bytes, double t);
  // The route between two ranks (for tests and reports).
  Route route_between(int from, int to) const;

  std::size_t link_count() const { return links_.size(); }
  const std::string& link_name(std::size_t link) const { return links_[link].name; }
  double link_bandwidth(std::size_t link) const { return links_[link].bandwidth; }
  double link_burst(std::size_t link) const { return links_[link].burst; }
  const LinkUsage& usage(std::size_t link) const { return links_[link].usage; }
  // Index of the link called `name` (throws if none).
  std::size_t find_link(const std::string& name) const;
  // Forgets traffic and reservations (a new run on the same network).
  void reset();

 protected:
  Network() = default;
  virtual void route(int node_from, int node_to, Route& out) const = 0;
  // burst > 0: a token-bucket link (see the top) carrying `peak` while it has tokens.
  std::uint32_t add_link(std::string name, double bandwidth, double burst = 0, double peak = 0);
  // Reads the host-CPU keys (see the top); every model calls it after contention is known.
  void read_hosts(const config::Section& section);
  // Reads placement and placement_seed (see the top).
  collectives::Placement read_placement(const config::Section& section);
  // Reads reduce_rate, small_reduce_bytes and small_reduce_rate.
  void read_reduction(const config::Section& section);
  // Rank -> node by placement over groups of `group_nodes` nodes (random: drawn
  // from `machine_nodes`); sets the collectives' Topology from two
  // lone-message routes (inside, across).
  void place(int ranks, int group_nodes, collectives::Placement placement, int machine_nodes = 0,
             bool derive_topology = true);
  void set_topology(const collectives::Topology& topology) { topology_ = std::make_unique<collectives::Topology>(topology); }

  std::string model_;
  Contention contention_ = Contention::fifo;
  double reduce_rate_ = 0;
  double small_reduce_bytes_ = 0;  // 0: one rate for every size
  double small_reduce_rate_ = 0;
  std::uint64_t placement_seed_ = 1;
  double rendezvous_bytes_ = 0;    // 0: no rendezvous surcharge
  double rendezvous_latency_ = 0;

 private:
  struct LinkState {
    std::string name;
    double bandwidth = 0;
    double free_at = 0;
    LinkUsage usage;
    double burst = 0;      // bucket size, bytes (0: a plain link)
    double peak = 0;       // bytes/s while the bucket has tokens
    double tokens = 0;     // at tokens_at
    double tokens_at = 0;
    // Seconds to carry `bytes` starting at s (>= free_at); updates the bucket.
    double hold(double bytes, double s);
  };
  // A job of `seconds` on a core of `host`, at the earliest time >= t a core
  // is free for that long; returns its end.
  double cpu_job(int host, double seconds, double t);
  void forget_cpu_before(double t);
  double transmit_general(const Route& r, int from_node, int to_node, double bytes, double t);

  std::vector<LinkState> links_;
  int host_cores_ = 0;  // 0: CPUs not modelled
  int host_nodes_ = 1;
  // Seconds of a job per byte (TLS included, host_core_share applied).
  double send_cost_ = 0, receive_cost_ = 0;
  double core_share_ = 1;
  // Per host, per core: busy intervals [start, end), sorted, none ending
  // before the last send's time (reductions are booked ahead, at their
  // receive's arrival, so later jobs may fit in the gaps before them).
  std::vector<std::vector<std::vector<std::pair<double, double>>>> core_busy_;
  double idle_before_ = std::numeric_limits<double>::infinity();
  std::vector<int> node_of_;
  std::unique_ptr<collectives::Topology> topology_;
};

}  // namespace taihu::simulator
