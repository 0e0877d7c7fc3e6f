// Ring allreduce: reduce-scatter, then allgather, each P-1 neighbour steps.
#include "collectives/algorithms.hpp"
#include "collectives/algorithms/primitives.hpp"

namespace taihu::collectives {

void detail::append_ring_allreduce(Schedule& s, std::span<const int> members, Range whole) {
  const int m = static_cast<int>(members.size());
  if (m < 2) return;
  auto piece = [&](int c) { return chunks(whole, m, mod(c, m), mod(c, m) + 1); };
  for (int i = 0; i < m; ++i) {
    const int next = members[static_cast<std::size_t>(mod(i + 1, m))];
    const int prev = members[static_cast<std::size_t>(mod(i - 1, m))];
    const int self = members[static_cast<std::size_t>(i)];
    // After step t of the reduce-scatter, chunk i-t-1 holds the sum over
    // indices i-t-1 … i; index i finishes with chunk i+1 complete.
    for (int t = 0; t < m - 1; ++t) {
      s.add(self, Step::exchange(next, piece(i - t), prev, piece(i - t - 1), Combine::reduce));
    }
    for (int t = 0; t < m - 1; ++t) {
      s.add(self, Step::exchange(next, piece(i + 1 - t), prev, piece(i - t), Combine::copy));
    }
  }
}

Schedule ring_allreduce(int ranks, std::size_t elements) {
  Schedule s(Collective::allreduce, Algorithm::ring, ranks, elements);
  std::vector<int> members(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) members[static_cast<std::size_t>(r)] = r;
  detail::append_ring_allreduce(s, members, {0, elements});
  s.finalize();
  return s;
}

}  // namespace taihu::collectives
