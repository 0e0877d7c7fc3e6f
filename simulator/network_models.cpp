// The network models a config names ([network] model = classes | tree |
// dragonfly, network.hpp) and their reading: each a Network (network.cpp: the
// links, hosts and event mechanics they share) with its own routes.
#include "simulator/network.hpp"

#include <algorithm>
#include <cmath>

#include "core/common/check.hpp"

namespace taihu::simulator {

namespace {

double positive(const config::Section& s, const char* key, double fallback) {
  const double v = s.get_or<double>(key, fallback);
  if (!(v > 0) || !std::isfinite(v)) throw s.error(key, "must be positive");
  return v;
}
double positive(const config::Section& s, const char* key) {
  if (!s.has(key)) throw s.error(key, "is required");
  return positive(s, key, 1.0);
}
double non_negative(const config::Section& s, const char* key, double fallback) {
  const double v = s.get_or<double>(key, fallback);
  if (!(v >= 0) || !std::isfinite(v)) throw s.error(key, "must not be negative");
  return v;
}
int positive_int(const config::Section& s, const char* key) {
  if (!s.has(key)) throw s.error(key, "is required");
  const int v = s.get<int>(key);
  if (v < 1) throw s.error(key, "must be at least 1");
  return v;
}

// placement and placement_seed (see network.hpp's top).
struct PlacementKeys {
  collectives::Placement placement = collectives::Placement::block;
  std::uint64_t seed = 1;
};
PlacementKeys read_placement_keys(const config::Section& s) {
  const auto placement = s.get_choice("placement", {"block", "round_robin", "random"}, "block");
  PlacementKeys keys;
  keys.placement = placement == "random"  ? collectives::Placement::random
                   : placement == "block" ? collectives::Placement::block
                                          : collectives::Placement::round_robin;
  if (s.has("placement_seed")) {
    if (placement != "random") throw s.error("placement_seed", "only with placement = random");
    const auto seed = s.get<long long>("placement_seed");
    if (seed < 0) throw s.error("placement_seed", "must not be negative");
    keys.seed = static_cast<std::uint64_t>(seed);
  }
  return keys;
}

// model = classes places by formula: it has no machine to draw from.
collectives::Placement read_formula_placement(const config::Section& s) {
  const auto placement = read_placement_keys(s).placement;
  if (placement == collectives::Placement::random) {
    throw s.error("placement", "random needs a machine to draw from: model = tree or dragonfly");
  }
  return placement;
}

// Per-level list: one value for all levels, or exactly `levels` values.
std::vector<double> per_level(const config::Section& s, const char* key, std::size_t levels,
                              std::vector<double> fallback, bool allow_zero) {
  auto values = s.get_list_or<double>(key, std::move(fallback));
  if (values.size() == 1 && levels > 1) values.assign(levels, values[0]);
  if (values.size() != levels) {
    throw s.error(key, "needs one value or " + std::to_string(levels) + " (one per level), got " +
                           std::to_string(values.size()));
  }
  for (double v : values) {
    if (!std::isfinite(v) || v < 0 || (!allow_zero && v == 0)) {
      throw s.error(key, allow_zero ? "values must not be negative" : "values must be positive");
    }
  }
  return values;
}

// node_burst (bytes, 0 = none) and node_peak_bandwidth (required with a burst): {burst, peak}.
std::pair<double, double> read_bucket(const config::Section& s, double rate) {
  const double burst = non_negative(s, "node_burst", 0.0);
  if (burst == 0) {
    if (s.has("node_peak_bandwidth")) throw s.error("node_peak_bandwidth", "only with node_burst > 0");
    return {0.0, 0.0};
  }
  if (!s.has("node_peak_bandwidth")) throw s.error("node_peak_bandwidth", "is required with node_burst");
  const double peak = positive(s, "node_peak_bandwidth", 1.0);
  if (!(peak > rate)) throw s.error("node_peak_bandwidth", "must exceed node_bandwidth");
  return {burst, peak};
}

class ClassesNetwork final : public Network {
 public:
  ClassesNetwork(const collectives::Topology& topology, Contention contention, double rendezvous_bytes,
                 double rendezvous_latency)
      : classes_(topology) {
    model_ = "classes";
    contention_ = contention;
    reduce_rate_ = topology.reduce_rate();
    rendezvous_bytes_ = rendezvous_bytes;
    rendezvous_latency_ = rendezvous_latency;
    const double nic = std::max(topology.intra().bandwidth, topology.inter().bandwidth);
    for (int n = 0; n < topology.ranks(); ++n) {
      add_link("node" + std::to_string(n) + ".out", nic);
      add_link("node" + std::to_string(n) + ".in", nic);
    }
    place(topology.ranks(), topology.ranks(), collectives::Placement::block, 0, false);
    set_topology(topology);  // the collectives see the given groups and placement
  }

 protected:
  void route(int a, int b, Route& out) const override {
    out.add(static_cast<std::uint32_t>(2 * a));
    out.add(static_cast<std::uint32_t>(2 * b + 1));
    const collectives::Link& link = classes_.link(a, b);
    out.latency = link.latency;
    out.bandwidth = link.bandwidth;
  }

 private:
  collectives::Topology classes_;
};

class TreeNetwork final : public Network {
 public:
  TreeNetwork(const config::Section& s, int ranks) {
    model_ = "tree";
    auto sizes = s.get_list_or<int>("group_sizes", {});
    if (sizes.empty()) throw s.error("group_sizes", "is required (nodes per group at each level below the top)");
    if (2 * sizes.size() + 2 > static_cast<std::size_t>(Route::max_hops)) {
      throw s.error("group_sizes", "at most " + std::to_string(Route::max_hops / 2 - 1) + " levels below the top");
    }
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] < 1 || (i > 0 && sizes[i] % sizes[i - 1] != 0) || (i > 0 && sizes[i] <= sizes[i - 1])) {
        throw s.error("group_sizes", "each size must be positive and a larger multiple of the one before");
      }
    }
    sizes_ = sizes;
    const std::size_t levels = sizes.size() + 1;  // the top switch is the last level
    node_bandwidth_ = positive(s, "node_bandwidth");
    const auto [burst, peak] = read_bucket(s, node_bandwidth_);
    latency_ = per_level(s, "latency", levels, {1e-6}, true);
    flow_ = per_level(s, "flow_bandwidth", levels, {burst > 0 ? peak : node_bandwidth_}, false);
    std::vector<double> uplink;
    if (s.has("uplink_bandwidth")) {
      uplink = per_level(s, "uplink_bandwidth", sizes.size(), {}, false);
    } else {
      const auto taper = per_level(s, "taper", sizes.size(), {1.0}, false);
      for (std::size_t k = 0; k < sizes.size(); ++k) uplink.push_back(sizes[k] * node_bandwidth_ / taper[k]);
    }
    read_common(s);
    const auto placement = read_placement(s);
    // Nodes with links: block fills 0 … P-1; round-robin spreads over the
    // groups used; random draws from the whole machine.
    const int g1 = sizes[0];
    const int groups = (ranks + g1 - 1) / g1;
    nodes_ = placement == collectives::Placement::block ? ranks : groups * g1;
    if (placement == collectives::Placement::random && !s.has("nodes")) {
      throw s.error("placement", "random draws from the machine's nodes: set nodes");
    }
    if (s.has("nodes")) {
      const int machine = positive_int(s, "nodes");
      if (machine < nodes_) {
        throw s.error("nodes", "a machine of " + std::to_string(machine) + " nodes cannot hold " +
                                   std::to_string(ranks) + " ranks placed " +
                                   s.get_or<std::string>("placement", "block"));
      }
      if (placement == collectives::Placement::random) nodes_ = machine;
    }
    for (int n = 0; n < nodes_; ++n) {
      add_link("node" + std::to_string(n) + ".up", node_bandwidth_, burst, peak);
      add_link("node" + std::to_string(n) + ".down", node_bandwidth_, burst, peak);
    }
    for (std::size_t k = 0; k < sizes.size(); ++k) {
      first_group_link_.push_back(static_cast<std::uint32_t>(link_count()));
      const int count = (nodes_ + sizes[k] - 1) / sizes[k];
      for (int g = 0; g < count; ++g) {
        const std::string name = "level" + std::to_string(k + 1) + ".group" + std::to_string(g);
        add_link(name + ".up", uplink[k]);
        add_link(name + ".down", uplink[k]);
      }
    }
    place(ranks, g1, placement, nodes_);
  }

 protected:
  void route(int a, int b, Route& out) const override {
    std::size_t top = sizes_.size();  // index into latency_: 0 = same level-1 group
    for (std::size_t k = 0; k < sizes_.size(); ++k) {
      if (a / sizes_[k] == b / sizes_[k]) {
        top = k;
        break;
      }
    }
    out.add(static_cast<std::uint32_t>(2 * a));
    for (std::size_t k = 0; k < top; ++k) out.add(first_group_link_[k] + static_cast<std::uint32_t>(2 * (a / sizes_[k])));
    for (std::size_t k = top; k-- > 0;) {
      out.add(first_group_link_[k] + static_cast<std::uint32_t>(2 * (b / sizes_[k]) + 1));
    }
    out.add(static_cast<std::uint32_t>(2 * b + 1));
    out.latency = latency_[top];
    out.bandwidth = flow_[top];
  }

 private:
  void read_common(const config::Section& s);

  std::vector<int> sizes_;
  double node_bandwidth_ = 0;
  std::vector<double> latency_, flow_;
  std::vector<std::uint32_t> first_group_link_;
  int nodes_ = 0;
};

class DragonflyNetwork final : public Network {
 public:
  DragonflyNetwork(const config::Section& s, int ranks) {
    model_ = "dragonfly";
    p_ = positive_int(s, "nodes_per_router");
    a_ = positive_int(s, "routers_per_group");
    const int group_nodes = p_ * a_;
    const int needed = (ranks + group_nodes - 1) / group_nodes;
    groups_ = s.get_or<int>("groups", needed);
    if (groups_ < needed) {
      throw s.error("groups", "holds " + std::to_string(groups_ * group_nodes) + " nodes, " + std::to_string(ranks) +
                                  " ranks need " + std::to_string(needed) + " groups");
    }
    const double node_bw = positive(s, "node_bandwidth");
    const auto [burst, peak] = read_bucket(s, node_bw);
    const double local_bw = positive(s, "local_bandwidth");
    const double global_bw = positive(s, "global_bandwidth");
    base_latency_ = non_negative(s, "latency", 1e-6);
    hop_latency_ = non_negative(s, "hop_latency", 1e-7);
    flow_ = burst > 0 ? peak : node_bw;
    read_reduction(s);
    contention_ = s.get_choice("contention", {"none", "fifo"}, "fifo") == "none" ? Contention::none : Contention::fifo;
    if (burst > 0 && contention_ != Contention::fifo) throw s.error("node_burst", "needs contention = fifo");
    rendezvous_bytes_ = non_negative(s, "rendezvous_bytes", 0.0);
    rendezvous_latency_ = non_negative(s, "rendezvous_latency", 0.0);
    const auto placement = read_placement(s);
    const int nodes = groups_ * group_nodes;
    for (int n = 0; n < nodes; ++n) {
      add_link("node" + std::to_string(n) + ".up", node_bw, burst, peak);
      add_link("node" + std::to_string(n) + ".down", node_bw, burst, peak);
    }
    local0_ = static_cast<std::uint32_t>(link_count());
    for (int g = 0; g < groups_; ++g) {
      for (int i = 0; i < a_; ++i) {
        for (int j = 0; j < a_; ++j) {
          add_link("group" + std::to_string(g) + ".local" + std::to_string(i) + "-" + std::to_string(j), local_bw);
        }
      }
    }
    global0_ = static_cast<std::uint32_t>(link_count());
    for (int g = 0; g < groups_; ++g) {
      for (int h = 0; h < groups_; ++h) add_link("global" + std::to_string(g) + "-" + std::to_string(h), global_bw);
    }
    place(ranks, group_nodes, placement, nodes);
  }

 protected:
  void route(int a, int b, Route& out) const override {
    const int ra = a / p_, rb = b / p_;
    const int ga = ra / a_, gb = rb / a_;
    int routers = 1;
    out.add(static_cast<std::uint32_t>(2 * a));
    if (ga == gb) {
      if (ra != rb) {
        out.add(local(ga, ra % a_, rb % a_));
        ++routers;
      }
    } else {
      const int exit = gb % a_, entry = ga % a_;  // gateway routers of the global link
      if (ra % a_ != exit) {
        out.add(local(ga, ra % a_, exit));
        ++routers;
      }
      out.add(global0_ + static_cast<std::uint32_t>(ga * groups_ + gb));
      ++routers;
      if (entry != rb % a_) {
        out.add(local(gb, entry, rb % a_));
        ++routers;
      }
    }
    out.add(static_cast<std::uint32_t>(2 * b + 1));
    out.latency = base_latency_ + routers * hop_latency_;
    out.bandwidth = flow_;
  }

 private:
  std::uint32_t local(int group, int i, int j) const {
    return local0_ + static_cast<std::uint32_t>((group * a_ + i) * a_ + j);
  }
  int p_ = 1, a_ = 1, groups_ = 1;
  double base_latency_ = 0, hop_latency_ = 0, flow_ = 0;
  std::uint32_t local0_ = 0, global0_ = 0;
};

void TreeNetwork::read_common(const config::Section& s) {
  read_reduction(s);
  contention_ = s.get_choice("contention", {"none", "fifo"}, "fifo") == "none" ? Contention::none : Contention::fifo;
  if (s.has("node_burst") && s.get<double>("node_burst") > 0 && contention_ != Contention::fifo)
    throw s.error("node_burst", "needs contention = fifo");
  rendezvous_bytes_ = non_negative(s, "rendezvous_bytes", 0.0);
  rendezvous_latency_ = non_negative(s, "rendezvous_latency", 0.0);
}

}  // namespace

collectives::Placement Network::read_placement(const config::Section& s) {
  const auto keys = read_placement_keys(s);
  placement_seed_ = keys.seed;
  return keys.placement;
}

void Network::read_reduction(const config::Section& s) {
  reduce_rate_ = non_negative(s, "reduce_rate", 0.0);
  small_reduce_bytes_ = non_negative(s, "small_reduce_bytes", 0.0);
  if (small_reduce_bytes_ > 0) {
    if (!s.has("small_reduce_rate")) throw s.error("small_reduce_rate", "is required with small_reduce_bytes");
    small_reduce_rate_ = positive(s, "small_reduce_rate", 1.0);
  } else if (s.has("small_reduce_rate")) {
    throw s.error("small_reduce_rate", "only with small_reduce_bytes > 0");
  }
}

void Network::read_hosts(const config::Section& s) {
  const int cores = s.get_or<int>("host_cores", 0);
  if (cores < 0) throw s.error("host_cores", "must not be negative");
  const int per_host = s.get_or<int>("host_nodes", 1);
  if (per_host < 1) throw s.error("host_nodes", "must be at least 1");
  const double send = non_negative(s, "send_cpu_rate", 0.0);
  const double receive = non_negative(s, "receive_cpu_rate", 0.0);
  const double tls_rate = non_negative(s, "tls_cpu_rate", 0.0);
  const double share = positive(s, "host_core_share", 1.0);
  if (share > 1) throw s.error("host_core_share", "must be at most 1 (the whole core)");
  const bool tls = s.get_choice("tls", {"off", "on"}, "off") == "on";
  if (tls && tls_rate == 0) throw s.error("tls", "on needs tls_cpu_rate (bytes per second of one core)");
  if (cores == 0) {
    for (const char* key : {"host_nodes", "host_core_share", "send_cpu_rate", "receive_cpu_rate", "tls_cpu_rate", "tls"}) {
      if (s.has(key)) throw s.error(key, "only with host_cores > 0 (the host CPUs it runs on)");
    }
    return;
  }
  if (contention_ != Contention::fifo) throw s.error("host_cores", "needs contention = fifo");
  host_cores_ = cores;
  host_nodes_ = per_host;
  core_share_ = share;
  const double crypto = tls ? 1.0 / tls_rate : 0.0;
  send_cost_ = ((send > 0 ? 1.0 / send : 0.0) + crypto) / share;
  receive_cost_ = ((receive > 0 ? 1.0 / receive : 0.0) + crypto) / share;
  const int nodes = *std::max_element(node_of_.begin(), node_of_.end()) + 1;
  core_busy_.assign(static_cast<std::size_t>((nodes + per_host - 1) / per_host),
                    std::vector<std::vector<std::pair<double, double>>>(static_cast<std::size_t>(cores)));
}

std::unique_ptr<Network> Network::from_topology(const collectives::Topology& topology, Contention contention) {
  return std::make_unique<ClassesNetwork>(topology, contention, 0.0, 0.0);
}

std::unique_ptr<Network> Network::from_config(const config::Section& s, int ranks) {
  require(ranks >= 1, "network: {} ranks", ranks);
  const std::string model = s.get_choice("model", {"classes", "tree", "dragonfly"}, "tree");
  std::unique_ptr<Network> network;
  if (model == "tree") network = std::make_unique<TreeNetwork>(s, ranks);
  if (model == "dragonfly") network = std::make_unique<DragonflyNetwork>(s, ranks);
  if (network) {
    network->read_hosts(s);
    return network;
  }
  const int group_size = s.get_or<int>("group_size", ranks);
  if (group_size < 1) throw s.error("group_size", "must be at least 1");
  collectives::Link intra{non_negative(s, "intra_latency", 1e-6), positive(s, "intra_bandwidth", 12e9)};
  collectives::Link inter{non_negative(s, "inter_latency", intra.latency), positive(s, "inter_bandwidth", intra.bandwidth)};
  const collectives::Topology topology(ranks, group_size, read_formula_placement(s), intra, inter,
                                       non_negative(s, "reduce_rate", 0.0));
  const auto contention =
      s.get_choice("contention", {"none", "fifo"}, "fifo") == "none" ? Contention::none : Contention::fifo;
  network = std::make_unique<ClassesNetwork>(topology, contention, non_negative(s, "rendezvous_bytes", 0.0),
                                             non_negative(s, "rendezvous_latency", 0.0));
  network->read_hosts(s);
  return network;
}

}  // namespace taihu::simulator
