// Ring allgather of variable-size blocks.
#include "collectives/algorithms.hpp"
#include "collectives/algorithms/primitives.hpp"

namespace taihu::collectives {

Schedule ring_allgatherv(std::span<const std::size_t> counts) {
  const int p = static_cast<int>(counts.size());
  std::vector<Range> block(counts.size());
  std::size_t offset = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    block[r] = {offset, counts[r]};
    offset += counts[r];
  }
  Schedule s(Collective::allgatherv, Algorithm::ring, p, offset);
  auto at = [&](int r) { return block[static_cast<std::size_t>(detail::mod(r, p))]; };
  for (int i = 0; i < p && p > 1; ++i) {
    // Step t forwards the block that originated t ranks upstream.
    for (int t = 0; t < p - 1; ++t) {
      s.add(i, Step::exchange(detail::mod(i + 1, p), at(i - t), detail::mod(i - 1, p), at(i - t - 1),
                              Combine::copy));
    }
  }
  s.finalize();
  return s;
}

}  // namespace taihu::collectives
