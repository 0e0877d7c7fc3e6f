#include "collectives/schedule.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "core/common/check.hpp"

namespace taihu::collectives {

std::string_view name(Collective c) {
  switch (c) {
    case Collective::allreduce: return "allreduce";
    case Collective::broadcast: return "broadcast";
    case Collective::allgatherv: return "allgatherv";
  }
  return "?";
}

std::string_view name(Algorithm a) {
  switch (a) {
    case Algorithm::ring: return "ring";
    case Algorithm::rabenseifner: return "rabenseifner";
    case Algorithm::topology_aware: return "topology_aware";
    case Algorithm::hierarchical: return "hierarchical";
    case Algorithm::binomial: return "binomial";
    case Algorithm::scatter_allgather: return "scatter_allgather";
    case Algorithm::direct: return "direct";
    case Algorithm::pipelined_ring: return "pipelined_ring";
    case Algorithm::reduce_broadcast: return "reduce_broadcast";
  }
  return "?";
}

Algorithm parse_algorithm(std::string_view text) {
  for (auto a : {Algorithm::ring, Algorithm::rabenseifner, Algorithm::topology_aware,
                 Algorithm::hierarchical, Algorithm::binomial, Algorithm::scatter_allgather, Algorithm::direct,
                 Algorithm::pipelined_ring, Algorithm::reduce_broadcast}) {
    if (name(a) == text) return a;
  }
  raise("unknown collective algorithm '{}' (ring, pipelined_ring, rabenseifner, topology_aware, hierarchical, direct, "
        "reduce_broadcast, binomial, scatter_allgather)",
        text);
}

Range chunk(std::size_t n, int parts, int index) {
  const auto p = static_cast<std::size_t>(parts);
  const auto i = static_cast<std::size_t>(index);
  const std::size_t base = n / p, extra = n % p;
  return {i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

void Schedule::add(int rank, Step step) {
  if (step.send.empty()) step.send_to = -1;
  if (step.recv.empty()) step.recv_from = -1;
  if (!step.sends() && !step.receives()) return;
  steps[static_cast<std::size_t>(rank)].push_back(step);
}

void Schedule::transfer(int from, int to, Range range, Combine combine) {
  add(from, Step::send_only(to, range));
  add(to, Step::receive_only(from, range, combine));
}

void Schedule::finalize() {
  // Per ordered pair (from, to): the ranges sent and the ranges expected.
  std::map<std::pair<int, int>, std::vector<Range>> sent, expected;
  for (int r = 0; r < ranks; ++r) {
    for (auto& s : steps[static_cast<std::size_t>(r)]) {
      if (s.sends()) {
        require(s.send_to < ranks && s.send_to != r, "{} {}: rank {} sends to invalid peer {}",
                name(algorithm), name(collective), r, s.send_to);
        require(s.send.end() <= elements, "{}: rank {} sends past the buffer", name(algorithm), r);
        auto& list = sent[{r, s.send_to}];
        s.send_seq = static_cast<std::uint32_t>(list.size());
        list.push_back(s.send);
      }
      if (s.receives()) {
        require(s.recv_from < ranks && s.recv_from != r, "{} {}: rank {} receives from invalid peer {}",
                name(algorithm), name(collective), r, s.recv_from);
        require(s.recv.end() <= elements, "{}: rank {} receives past the buffer", name(algorithm), r);
        auto& list = expected[{s.recv_from, r}];
        s.recv_seq = static_cast<std::uint32_t>(list.size());
        list.push_back(s.recv);
      }
    }
  }
  require(sent == expected, "{} {} on {} ranks: sends and receives do not match", name(algorithm),
          name(collective), ranks);
}

Schedule segment(const Schedule& schedule, std::size_t max_elements) {
  require(max_elements > 0, "segment: the largest message must hold at least one element");
  Schedule out(schedule.collective, schedule.algorithm, schedule.ranks, schedule.elements);
  auto piece = [&](Range r, std::size_t i) {
    const std::size_t begin = std::min(r.length, i * max_elements);
    return Range{r.offset + begin, std::min(max_elements, r.length - begin)};
  };
  for (int rank = 0; rank < schedule.ranks; ++rank) {
    for (const Step& s : schedule.steps[static_cast<std::size_t>(rank)]) {
      const Range send = s.sends() ? s.send : Range{};
      const Range recv = s.receives() ? s.recv : Range{};
      require(send.empty() || recv.empty() || send.end() <= recv.offset || recv.end() <= send.offset,
              "segment: rank {} receives into the range it sends", rank);
      const std::size_t pieces = (std::max(send.length, recv.length) + max_elements - 1) / max_elements;
      for (std::size_t i = 0; i < pieces; ++i) {
        out.add(rank, Step::exchange(s.send_to, piece(send, i), s.recv_from, piece(recv, i), s.combine));
      }
    }
  }
  out.finalize();
  return out;
}

std::size_t Schedule::elements_sent(int rank) const {
  std::size_t total = 0;
  for (const auto& s : steps[static_cast<std::size_t>(rank)]) total += s.sends() ? s.send.length : 0;
  return total;
}

std::size_t Schedule::elements_received(int rank) const {
  std::size_t total = 0;
  for (const auto& s : steps[static_cast<std::size_t>(rank)]) total += s.receives() ? s.recv.length : 0;
  return total;
}

std::size_t Schedule::messages_sent(int rank) const {
  std::size_t total = 0;
  for (const auto& s : steps[static_cast<std::size_t>(rank)]) total += s.sends() ? 1 : 0;
  return total;
}

}  // namespace taihu::collectives
