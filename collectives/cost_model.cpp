#include "collectives/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "collectives/algorithms.hpp"
#include "core/common/check.hpp"

namespace taihu::collectives {

Prediction predict(const Schedule& schedule, const Topology& topology) {
  require(schedule.ranks == topology.ranks(), "schedule for {} ranks on a topology of {}", schedule.ranks,
          topology.ranks());
  const auto p = static_cast<std::size_t>(schedule.ranks);
  std::vector<double> clock(p, 0.0);
  std::vector<std::size_t> next(p, 0);
  std::vector<bool> sent(p, false);
  std::vector<double> send_done(p, 0.0);
  // (from, to, seq) → arrival time.
  std::unordered_map<std::uint64_t, double> arrival;
  auto key = [&](int from, int to, std::uint32_t seq) {
    return (static_cast<std::uint64_t>(from) * p + static_cast<std::uint64_t>(to)) << 32 | seq;
  };

  std::size_t remaining = 0;
  for (const auto& steps : schedule.steps) remaining += steps.size();
  arrival.reserve(remaining);
  while (remaining > 0) {
    bool progressed = false;
    for (int r = 0; r < schedule.ranks; ++r) {
      const auto ri = static_cast<std::size_t>(r);
      const auto& steps = schedule.steps[ri];
      while (next[ri] < steps.size()) {
        const Step& s = steps[next[ri]];
        if (s.sends() && !sent[ri]) {
          const double bytes = static_cast<double>(s.send.length) * bytes_per_element;
          send_done[ri] = clock[ri] + topology.link(r, s.send_to).time(bytes);
          arrival[key(r, s.send_to, s.send_seq)] = send_done[ri];
          sent[ri] = true;
        }
        double done = s.sends() ? send_done[ri] : clock[ri];
        if (s.receives()) {
          auto it = arrival.find(key(s.recv_from, r, s.recv_seq));
          if (it == arrival.end()) break;
          done = std::max(done, it->second);
          if (s.combine == Combine::reduce) {
            done += topology.reduce_time(static_cast<double>(s.recv.length) * bytes_per_element);
          }
        }
        clock[ri] = done;
        sent[ri] = false;
        ++next[ri];
        --remaining;
        progressed = true;
      }
    }
    require(progressed, "{} {} on {} ranks deadlocks", name(schedule.algorithm), name(schedule.collective),
            schedule.ranks);
  }
  Prediction out;
  out.finish = clock;
  out.seconds = clock.empty() ? 0.0 : *std::max_element(clock.begin(), clock.end());
  return out;
}

namespace {

double reduce_term(const Topology& t, double bytes) {
  const double p = t.ranks();
  return t.reduce_time((p - 1) / p * bytes);
}

// The two halving/doubling formulas differ only in how many chunk-sized
// units each link class carries per direction.
double tree_formula(const Topology& t, double bytes, double intra_units, double inter_units) {
  const double p = t.ranks(), q = t.group_size();
  const double chunk = bytes / p;
  const double one_way = std::log2(q) * t.intra().latency + std::log2(p / q) * t.inter().latency +
                         intra_units * chunk / t.intra().bandwidth + inter_units * chunk / t.inter().bandwidth;
  return 2 * one_way + reduce_term(t, bytes);
}

}  // namespace

double ring_formula(const Topology& t, double bytes) {
  const int p = t.ranks();
  if (p == 1) return 0.0;
  Link slowest = t.intra();
  for (int r = 0; r < p; ++r) {
    if (!t.same_group(r, (r + 1) % p)) slowest = t.inter();
  }
  return 2.0 * (p - 1) * slowest.time(bytes / p) + reduce_term(t, bytes);
}

double rabenseifner_block_formula(const Topology& t, double bytes) {
  const double p = t.ranks(), q = t.group_size();
  return tree_formula(t, bytes, q - 1, p - q);
}

double topology_aware_formula(const Topology& t, double bytes) {
  const double p = t.ranks(), q = t.group_size();
  return tree_formula(t, bytes, p - p / q, p / q - 1);
}

Choice choose_algorithm(const Topology& topology, double bytes) {
  const auto elements = static_cast<std::size_t>(std::ceil(bytes / bytes_per_element));
  Choice best{Algorithm::ring, -1.0};
  for (auto a : {Algorithm::ring, Algorithm::rabenseifner, Algorithm::topology_aware, Algorithm::hierarchical}) {
    const double seconds = predict(make_allreduce(a, topology, elements), topology).seconds;
    if (best.seconds < 0 || seconds < best.seconds) best = {a, seconds};
  }
  return best;
}

Choice choose_broadcast(const Topology& topology, double bytes) {
  const auto elements = static_cast<std::size_t>(std::ceil(bytes / bytes_per_element));
  Choice best{Algorithm::binomial, -1.0};
  for (auto a : {Algorithm::binomial, Algorithm::scatter_allgather}) {
    const double seconds = predict(make_broadcast(a, topology.ranks(), elements, 0), topology).seconds;
    if (best.seconds < 0 || seconds < best.seconds) best = {a, seconds};
  }
  return best;
}

}  // namespace taihu::collectives
