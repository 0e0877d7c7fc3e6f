// Recursive halving reduce-scatter + recursive doubling allgather (Rabenseifner),
// for any number of ranks, plus its topology-aware relabelling (swCaffe §7).
#include <algorithm>
#include <numeric>

#include "collectives/algorithms.hpp"
#include "collectives/algorithms/primitives.hpp"

namespace taihu::collectives {

void detail::append_rabenseifner(Schedule& s, std::span<const int> members, Range whole) {
  const int m = static_cast<int>(members.size());
  if (m < 2) return;
  int core = 1;
  while (core * 2 <= m) core *= 2;
  auto rank = [&](int i) { return members[static_cast<std::size_t>(i)]; };

  // Fold: extra index core+e hands its whole buffer to index e.
  for (int e = core; e < m; ++e) s.transfer(rank(e), rank(e - core), whole, Combine::reduce);

  for (int i = 0; i < core; ++i) {
    // Halving, largest half first: index i ends owning chunk i of `core`.
    int lo = 0, hi = core;
    for (int d = core / 2; d >= 1; d /= 2) {
      const int mid = lo + (hi - lo) / 2;
      const bool lower = (i & d) == 0;
      const Range keep = lower ? chunks(whole, core, lo, mid) : chunks(whole, core, mid, hi);
      const Range give = lower ? chunks(whole, core, mid, hi) : chunks(whole, core, lo, mid);
      s.add(rank(i), Step::exchange(rank(i ^ d), give, rank(i ^ d), keep, Combine::reduce));
      (lower ? hi : lo) = mid;
    }
    // Doubling: blocks of d chunks, owned block first, grow to the whole.
    for (int d = 1; d < core; d *= 2) {
      const int own = i & ~(d - 1), other = (i ^ d) & ~(d - 1);
      s.add(rank(i), Step::exchange(rank(i ^ d), chunks(whole, core, own, own + d), rank(i ^ d),
                                    chunks(whole, core, other, other + d), Combine::copy));
    }
  }

  // Unfold: the result goes back to the extras.
  for (int e = core; e < m; ++e) s.transfer(rank(e - core), rank(e), whole, Combine::copy);
}

Schedule rabenseifner_allreduce(int ranks, std::size_t elements) {
  Schedule s(Collective::allreduce, Algorithm::rabenseifner, ranks, elements);
  std::vector<int> members(static_cast<std::size_t>(ranks));
  std::iota(members.begin(), members.end(), 0);
  detail::append_rabenseifner(s, members, {0, elements});
  s.finalize();
  return s;
}

std::vector<int> round_robin_order(const Topology& topology) {
  // Deal by position inside the group first, then by group: logical l is in
  // group l mod groups when the groups are equal.
  std::vector<int> order(static_cast<std::size_t>(topology.ranks()));
  std::iota(order.begin(), order.end(), 0);
  auto position = [&](int r) {
    const auto& m = topology.members(topology.group_of(r));
    return static_cast<int>(std::find(m.begin(), m.end(), r) - m.begin());
  };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const int pa = position(a), pb = position(b);
    return pa != pb ? pa < pb : topology.group_of(a) < topology.group_of(b);
  });
  return order;
}

Schedule topology_aware_allreduce(const Topology& topology, std::size_t elements) {
  Schedule s(Collective::allreduce, Algorithm::topology_aware, topology.ranks(), elements);
  const auto order = round_robin_order(topology);
  detail::append_rabenseifner(s, order, {0, elements});
  s.finalize();
  return s;
}

}  // namespace taihu::collectives
