// Binomial trees over relative indices v = (i - root) mod m: the parent of v
// is v with its lowest set bit cleared; children are v + 2^k below that bit.
#include <numeric>

#include "actors/sync/algorithms.hpp"
#include "actors/sync/algorithms/primitives.hpp"
#include "core/common/check.hpp"

namespace taihu::sync {
namespace {

int lowest_bit_or(int v, int fallback) { return v == 0 ? fallback : (v & -v); }

int top_mask(int m) {
  int mask = 1;
  while (mask < m) mask *= 2;
  return mask;
}

}  // namespace

void detail::append_binomial_reduce(Schedule& s, std::span<const int> members, int root, Range whole) {
  const int m = static_cast<int>(members.size());
  auto rank = [&](int v) { return members[static_cast<std::size_t>(mod(v + root, m))]; };
  for (int v = 0; v < m; ++v) {
    const int low = lowest_bit_or(v, top_mask(m));
    // Children nearest first: the sum is ((x_v + sub(v+1)) + sub(v+2)) + sub(v+4) …
    for (int mask = 1; mask < low && v + mask < m; mask *= 2) {
      s.add(rank(v), Step::receive_only(rank(v + mask), whole, Combine::reduce));
    }
    if (v != 0) s.add(rank(v), Step::send_only(rank(v - low), whole));
  }
}

void detail::append_binomial_broadcast(Schedule& s, std::span<const int> members, int root, Range whole) {
  const int m = static_cast<int>(members.size());
  auto rank = [&](int v) { return members[static_cast<std::size_t>(mod(v + root, m))]; };
  for (int v = 0; v < m; ++v) {
    const int low = lowest_bit_or(v, top_mask(m));
    if (v != 0) s.add(rank(v), Step::receive_only(rank(v - low), whole, Combine::copy));
    // Largest subtree first, so the farthest branch starts earliest.
    for (int mask = low / 2; mask >= 1; mask /= 2) {
      if (v + mask < m) s.add(rank(v), Step::send_only(rank(v + mask), whole));
    }
  }
}

Schedule binomial_broadcast(int ranks, std::size_t elements, int root) {
  require(root >= 0 && root < ranks, "broadcast root {} is not one of {} ranks", root, ranks);
  Schedule s(Collective::broadcast, Algorithm::binomial, ranks, elements);
  std::vector<int> members(static_cast<std::size_t>(ranks));
  std::iota(members.begin(), members.end(), 0);
  detail::append_binomial_broadcast(s, members, root, {0, elements});
  s.finalize();
  return s;
}

}  // namespace taihu::sync
