#include "collectives/sparse_allgather.hpp"

#include <cmath>
#include <numeric>

#include "collectives/algorithms.hpp"
#include "core/common/check.hpp"

namespace taihu::collectives {

std::vector<std::size_t> packed_sizes(int ranks, std::size_t elements, double density, double spread,
                                      std::uint64_t seed) {
  require(ranks >= 1 && density >= 0 && density <= 1 && spread >= 0 && spread < 1,
          "packed_sizes: {} ranks, density {}, spread {}", ranks, density, spread);
  std::vector<std::size_t> sizes;
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int r = 0; r < ranks; ++r) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;  // LCG: reproducible, no <random> dependence
    const double u = static_cast<double>(state >> 11) / static_cast<double>(1ull << 53) * 2 - 1;  // [-1, 1)
    const double k = std::round(density * static_cast<double>(elements) * (1 + spread * u));
    sizes.push_back(1 + 2 * static_cast<std::size_t>(std::max(0.0, k)));
  }
  return sizes;
}

collectives::Schedule recursive_doubling_allgatherv(std::span<const std::size_t> counts) {
  const int p = static_cast<int>(counts.size());
  require(p >= 1 && (p & (p - 1)) == 0, "recursive doubling allgatherv needs a power-of-two rank count, got {}", p);
  std::vector<std::size_t> offset(counts.size() + 1, 0);
  std::partial_sum(counts.begin(), counts.end(), offset.begin() + 1);
  // Recorded as Rabenseifner's: its allgather half is this exchange pattern.
  collectives::Schedule s(collectives::Collective::allgatherv, collectives::Algorithm::rabenseifner, p, offset.back());
  auto blocks = [&](int first, int count) {
    const auto a = static_cast<std::size_t>(first), b = static_cast<std::size_t>(first + count);
    return collectives::Range{offset[a], offset[b] - offset[a]};
  };
  for (int d = 1; d < p; d *= 2) {
    for (int r = 0; r < p; ++r) {
      const int partner = r ^ d;
      const int mine = r & ~(d - 1), theirs = partner & ~(d - 1);
      s.add(r, collectives::Step::exchange(partner, blocks(mine, d), partner, blocks(theirs, d), collectives::Combine::copy));
    }
  }
  s.finalize();
  return s;
}

collectives::Schedule sparse_allgather(std::span<const std::size_t> counts) {
  const auto p = counts.size();
  if (p >= 1 && (p & (p - 1)) == 0) return recursive_doubling_allgatherv(counts);
  return collectives::ring_allgatherv(counts);
}

double sparse_decompress_bytes(std::span<const std::size_t> counts) {
  double values = 0;
  for (std::size_t c : counts) values += static_cast<double>((c - 1) / 2);
  return values * 4.0;
}

}  // namespace taihu::collectives
