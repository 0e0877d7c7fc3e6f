#include "simulator/network.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/common/check.hpp"
#include "core/common/random.hpp"

namespace taihu::simulator {

std::uint32_t Network::add_link(std::string name, double bandwidth, double burst, double peak) {
  LinkState link{std::move(name), bandwidth, 0.0, {}};
  if (burst > 0) {
    require(peak > bandwidth, "network: link {} has a bucket, its peak {} must exceed its rate {}", link.name, peak,
            bandwidth);
    link.burst = burst;
    link.peak = peak;
    link.tokens = burst;
  }
  links_.push_back(std::move(link));
  return static_cast<std::uint32_t>(links_.size() - 1);
}

double Network::LinkState::hold(double bytes, double s) {
  if (burst <= 0) return bytes / bandwidth;
  const double have = std::min(burst, tokens + (s - tokens_at) * bandwidth);
  // Tokens drain at peak - rate while the link sends at peak.
  const double drain = have / (peak - bandwidth);
  double seconds;
  if (bytes <= drain * peak) {
    seconds = bytes / peak;
    tokens = have - bytes + seconds * bandwidth;
  } else {
    seconds = drain + (bytes - drain * peak) / bandwidth;
    tokens = 0;
  }
  tokens_at = s + seconds;
  return seconds;
}

double Network::cpu_job(int host, double seconds, double t) {
  auto& cores = core_busy_[static_cast<std::size_t>(host)];
  std::size_t best = 0;
  double best_start = std::numeric_limits<double>::infinity();
  for (std::size_t c = 0; c < cores.size(); ++c) {
    double start = t;
    for (const auto& [a, b] : cores[c]) {
      if (b <= start) continue;
      if (a >= start + seconds) break;  // fits in the gap before this one
      start = b;
    }
    if (start < best_start) {
      best_start = start;
      best = c;
    }
  }
  auto& busy = cores[best];
  busy.insert(std::upper_bound(busy.begin(), busy.end(), std::make_pair(best_start, best_start + seconds)),
              {best_start, best_start + seconds});
  return best_start + seconds;
}

void Network::forget_cpu_before(double t) {
  for (auto& host : core_busy_)
    for (auto& busy : host)
      busy.erase(std::remove_if(busy.begin(), busy.end(), [t](const auto& job) { return job.second < t; }), busy.end());
}

double Network::work(int rank, double seconds, double t) {
  if (host_cores_ == 0) return t + seconds;
  return cpu_job(node_of(rank) / host_nodes_, seconds / core_share_, t);
}

double Network::reduce(int rank, double bytes, double t) {
  const double seconds = reduce_time(bytes);
  if (host_cores_ == 0 || seconds <= 0) return t + seconds;
  return cpu_job(node_of(rank) / host_nodes_, seconds / core_share_, t);
}

void Network::place(int ranks, int group_nodes, collectives::Placement placement, int machine_nodes,
                    bool derive_topology) {
  require(ranks >= 1 && group_nodes >= 1, "network: {} ranks in groups of {}", ranks, group_nodes);
  node_of_.resize(static_cast<std::size_t>(ranks));
  const int groups = (ranks + group_nodes - 1) / group_nodes;
  if (placement == collectives::Placement::random) {
    require(machine_nodes >= ranks, "network: {} ranks drawn from a machine of {} nodes", ranks, machine_nodes);
    // The first `ranks` places of a Fisher-Yates shuffle of the machine's
    // nodes: a uniform draw without repeats, from our own generator so that
    // every platform draws the same nodes.
    std::vector<int> nodes(static_cast<std::size_t>(machine_nodes));
    std::iota(nodes.begin(), nodes.end(), 0);
    Rng rng(placement_seed_);
    for (std::size_t r = 0; r < node_of_.size(); ++r) {
      std::swap(nodes[r], nodes[r + rng.below(nodes.size() - r)]);
      node_of_[r] = nodes[r];
    }
  } else {
    for (int r = 0; r < ranks; ++r) {
      node_of_[static_cast<std::size_t>(r)] =
          placement == collectives::Placement::block ? r : (r % groups) * group_nodes + r / groups;
    }
  }
  if (!derive_topology) return;
  // Lone-message costs inside a group (nodes 0, 1) and across (0, group_nodes).
  auto lone = [&](int a, int b) {
    Route route;
    this->route(a, b, route);
    double cap = route.bandwidth;
    for (int h = 0; h < route.hops; ++h) cap = std::min(cap, links_[route.links[static_cast<std::size_t>(h)]].bandwidth);
    return collectives::Link{route.latency, cap};
  };
  // Only nodes that hold ranks have links; a class no pair of ranks uses
  // takes the other's cost.
  const int last = *std::max_element(node_of_.begin(), node_of_.end());
  const collectives::Link intra = group_nodes > 1 && last >= 1 ? lone(0, 1) : collectives::Link{};
  const collectives::Link inter = last >= group_nodes ? lone(0, group_nodes) : intra;
  if (placement != collectives::Placement::random) {
    topology_ = std::make_unique<collectives::Topology>(ranks, group_nodes, placement, intra, inter, reduce_rate_);
    return;
  }
  std::vector<int> group_of(node_of_.size());
  for (std::size_t r = 0; r < node_of_.size(); ++r) group_of[r] = node_of_[r] / group_nodes;
  topology_ =
      std::make_unique<collectives::Topology>(std::move(group_of), group_nodes, placement, intra, inter, reduce_rate_);
}

Route Network::route_between(int from, int to) const {
  Route r;
  route(node_of(from), node_of(to), r);
  return r;
}

double Network::transmit(int from, int to, double bytes, double t) {
  Route r;
  route(node_of(from), node_of(to), r);
  if (contention_ == Contention::fifo) {
    bool general = host_cores_ > 0;
    for (int h = 0; h < r.hops && !general; ++h) general = links_[r.links[static_cast<std::size_t>(h)]].burst > 0;
    if (general) return transmit_general(r, node_of(from), node_of(to), bytes, t);
  }
  double cap = r.bandwidth;
  for (int h = 0; h < r.hops; ++h) {
    LinkState& link = links_[r.links[static_cast<std::size_t>(h)]];
    cap = std::min(cap, link.bandwidth);
    link.usage.bytes += bytes;
    ++link.usage.messages;
  }
  double latency = r.latency;
  if (rendezvous_bytes_ > 0 && bytes > rendezvous_bytes_) latency += rendezvous_latency_;
  // The α-β expression exactly as sync::Link::time() writes it, so that an
  // uncontended run reproduces sync::predict() bit for bit.
  const double lone = t + (latency + bytes / cap);
  if (contention_ == Contention::none) return lone;
  double start = t, end = t;
  bool waited = false;
  for (int h = 0; h < r.hops; ++h) {
    LinkState& link = links_[r.links[static_cast<std::size_t>(h)]];
    if (link.free_at > start) {
      start = link.free_at;
      waited = true;
    }
    link.free_at = start + bytes / link.bandwidth;
    end = std::max(end, link.free_at);
  }
  if (!waited) return lone;
  return std::max(end, start + bytes / cap) + latency;
}

// Buckets and host CPUs: every hop's holding time from its own state (no
// shortcut through the lone-message cost, which a bucket can beat).
double Network::transmit_general(const Route& r, int from_node, int to_node, double bytes, double t) {
  double start = t, end = t;
  for (int h = 0; h < r.hops; ++h) {
    LinkState& link = links_[r.links[static_cast<std::size_t>(h)]];
    link.usage.bytes += bytes;
    ++link.usage.messages;
    start = std::max(start, link.free_at);
    link.free_at = start + link.hold(bytes, start);
    end = std::max(end, link.free_at);
  }
  double arrival = std::max(end, start + bytes / r.bandwidth);
  if (host_cores_ > 0) {
    forget_cpu_before(t);  // sends come in time order: nothing is booked before t any more
    if (send_cost_ > 0) arrival = std::max(arrival, cpu_job(from_node / host_nodes_, bytes * send_cost_, t));
    if (receive_cost_ > 0) arrival = std::max(arrival, cpu_job(to_node / host_nodes_, bytes * receive_cost_, t));
  }
  double latency = r.latency;
  if (rendezvous_bytes_ > 0 && bytes > rendezvous_bytes_) latency += rendezvous_latency_;
  return arrival + latency;
}

std::size_t Network::find_link(const std::string& name) const {
  for (std::size_t i = 0; i < links_.size(); ++i) {
    if (links_[i].name == name) return i;
  }
  raise<Error>("network: no link called '{}'", name);
}

void Network::reset() {
  for (auto& link : links_) {
    link.free_at = 0;
    link.usage = {};
    link.tokens = std::min(link.burst, idle_before_ * link.bandwidth);
    link.tokens_at = 0;
  }
  for (auto& host : core_busy_)
    for (auto& busy : host) busy.clear();
}

}  // namespace taihu::simulator
