// Ring allreduce: reduce-scatter, then allgather, each P-1 neighbour steps;
// and the same ring pipelined in segments.
#include <algorithm>

#include "collectives/algorithms.hpp"
#include "collectives/algorithms/primitives.hpp"
#include "core/common/check.hpp"

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

// The ring's 2(P-1) steps as (send, receive) ranges of index i: step u sends
// what step u-1 received (after combining it), so a segment can go on as soon
// as it has come. Every rank first sends all segments of its first range;
// then for each step and segment: receive it, combine it, send it on. Each
// element is combined in the same order as in the plain ring.
Schedule pipelined_ring_allreduce(int ranks, std::size_t elements, std::size_t segment_elements) {
  require(segment_elements > 0, "pipelined ring: segments of 0 elements");
  Schedule s(Collective::allreduce, Algorithm::pipelined_ring, ranks, elements);
  const int m = ranks;
  if (m >= 2) {
    const Range whole{0, elements};
    auto piece = [&](int c) { return detail::chunks(whole, m, detail::mod(c, m), detail::mod(c, m) + 1); };
    // The largest piece sets the segment count, the same for every piece, so
    // that sender and receiver cut a range alike.
    const std::size_t longest = chunk(elements, m, 0).length;
    const int segments = static_cast<int>(std::clamp<std::size_t>(
        (longest + segment_elements - 1) / segment_elements, 1, max_pipeline_segments));
    auto cut = [&](Range r, int k) { return detail::chunks(r, segments, k, k + 1); };  // segment k of r
    for (int i = 0; i < m; ++i) {
      const int next = (i + 1) % m, prev = (i + m - 1) % m;
      // Step u receives piece(i - u - 1) (reduce) for u < m-1, then piece(i - u + m - 1) (copy).
      auto received = [&](int u) { return u < m - 1 ? piece(i - u - 1) : piece(i - u + m - 1); };
      const int steps = 2 * (m - 1);
      for (int k = 0; k < segments; ++k) s.add(i, Step::send_only(next, cut(piece(i), k)));
      for (int u = 0; u < steps; ++u) {
        const Combine combine = u < m - 1 ? Combine::reduce : Combine::copy;
        for (int k = 0; k < segments; ++k) {
          const Range r = cut(received(u), k);
          s.add(i, Step::receive_only(prev, r, combine));
          if (u + 1 < steps) s.add(i, Step::send_only(next, r));
        }
      }
    }
  }
  s.finalize();
  return s;
}

}  // namespace taihu::collectives
