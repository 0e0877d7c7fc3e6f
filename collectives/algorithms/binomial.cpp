// Binomial trees over relative indices v = (i - root) mod m: the parent of v
// is v with its lowest set bit cleared; children are v + 2^k below that bit.
#include <algorithm>
#include <numeric>

#include "collectives/algorithms.hpp"
#include "collectives/algorithms/primitives.hpp"
#include "core/common/check.hpp"

namespace taihu::collectives {
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

Schedule reduce_broadcast_allreduce(int ranks, std::size_t elements) {
  Schedule s(Collective::allreduce, Algorithm::reduce_broadcast, ranks, elements);
  std::vector<int> members(static_cast<std::size_t>(ranks));
  std::iota(members.begin(), members.end(), 0);
  detail::append_binomial_reduce(s, members, 0, {0, elements});
  detail::append_binomial_broadcast(s, members, 0, {0, elements});
  s.finalize();
  return s;
}

}  // namespace taihu::collectives

namespace taihu::collectives {

Schedule scatter_allgather_broadcast(int ranks, std::size_t elements, int root) {
  require(root >= 0 && root < ranks, "broadcast root {} is not one of {} ranks", root, ranks);
  Schedule s(Collective::broadcast, Algorithm::scatter_allgather, ranks, elements);
  const int p = ranks;
  const Range whole{0, elements};
  // Relative rank v = rank - root owns chunk v; a binomial subtree [v, v + low)
  // is a contiguous run of chunks.
  auto rank = [&](int v) { return detail::mod(v + root, p); };
  auto piece = [&](int first, int last) { return detail::chunks(whole, p, first, std::min(last, p)); };
  for (int v = 0; v < p; ++v) {
    const int low = lowest_bit_or(v, top_mask(p));
    if (v != 0) s.add(rank(v), Step::receive_only(rank(v - low), piece(v, v + low), Combine::copy));
    for (int mask = low / 2; mask >= 1; mask /= 2) {
      if (v + mask < p) s.add(rank(v), Step::send_only(rank(v + mask), piece(v + mask, v + 2 * mask)));
    }
  }
  for (int v = 0; v < p && p > 1; ++v) {
    for (int t = 0; t < p - 1; ++t) {
      const int out = detail::mod(v - t, p), in = detail::mod(v - t - 1, p);
      s.add(rank(v), Step::exchange(rank(v + 1), piece(out, out + 1), rank(v - 1), piece(in, in + 1),
                                    Combine::copy));
    }
  }
  s.finalize();
  return s;
}

Schedule make_broadcast(Algorithm algorithm, int ranks, std::size_t elements, int root) {
  if (algorithm == Algorithm::binomial) return binomial_broadcast(ranks, elements, root);
  if (algorithm == Algorithm::scatter_allgather) return scatter_allgather_broadcast(ranks, elements, root);
  raise("'{}' is not a broadcast algorithm", name(algorithm));
}

}  // namespace taihu::collectives
