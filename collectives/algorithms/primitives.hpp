#pragma once
// Building blocks shared by the generators: each appends the steps of one
// collective phase among `members` (members[i] is the physical rank playing
// index i) over the buffer range `whole`. Phases appended one after another
// run one after another on every rank they involve.

#include <span>

#include "collectives/schedule.hpp"

namespace taihu::collectives::detail {

void append_ring_allreduce(Schedule& s, std::span<const int> members, Range whole);
void append_rabenseifner(Schedule& s, std::span<const int> members, Range whole);
// The sum of everyone's range ends on members[root] only.
void append_binomial_reduce(Schedule& s, std::span<const int> members, int root, Range whole);
void append_binomial_broadcast(Schedule& s, std::span<const int> members, int root, Range whole);

// Elements [first, last) of `parts` balanced chunks of `whole`.
inline Range chunks(Range whole, int parts, int first, int last) {
  if (first >= last) return {whole.offset, 0};
  const Range a = chunk(whole.length, parts, first);
  const Range b = chunk(whole.length, parts, last - 1);
  return {whole.offset + a.offset, b.end() - a.offset};
}

inline int mod(int a, int m) { return ((a % m) + m) % m; }

}  // namespace taihu::collectives::detail
