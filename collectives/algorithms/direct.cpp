// Direct allreduce: every rank sends each peer that peer's chunk at once, sums
// the P-1 contributions to its own chunk, then sends the result to every peer.
#include "collectives/algorithms.hpp"
#include "collectives/algorithms/primitives.hpp"

namespace taihu::collectives {

Schedule direct_allreduce(int ranks, std::size_t elements) {
  Schedule s(Collective::allreduce, Algorithm::direct, ranks, elements);
  auto piece = [&](int c) { return chunk(elements, ranks, c); };
  using detail::mod;
  for (int r = 0; r < ranks; ++r) {
    // Send-only steps never wait, so all P-1 messages of a phase are in
    // flight together; the receives then run in a fixed order.
    for (int t = 1; t < ranks; ++t) s.add(r, Step::send_only(mod(r + t, ranks), piece(mod(r + t, ranks))));
    for (int t = 1; t < ranks; ++t) s.add(r, Step::receive_only(mod(r - t, ranks), piece(r), Combine::reduce));
    for (int t = 1; t < ranks; ++t) s.add(r, Step::send_only(mod(r + t, ranks), piece(r)));
    for (int t = 1; t < ranks; ++t)
      s.add(r, Step::receive_only(mod(r - t, ranks), piece(mod(r - t, ranks)), Combine::copy));
  }
  s.finalize();
  return s;
}

}  // namespace taihu::collectives
