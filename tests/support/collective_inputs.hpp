#pragma once
// Inputs for collectives run by shard actors or their step engine: one buffer
// per rank, integer-valued (sums exact in floats, so they equal the plain sum
// in any order) or random normal (sums that show the order in their bits).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "collectives/schedule.hpp"
#include "collectives/topology.hpp"
#include "core/common/random.hpp"

namespace taihu::testing {

using Buffers = std::vector<std::vector<float>>;  // by rank

inline constexpr collectives::Algorithm allreduce_algorithms[] = {
    collectives::Algorithm::ring, collectives::Algorithm::rabenseifner, collectives::Algorithm::topology_aware,
    collectives::Algorithm::hierarchical, collectives::Algorithm::direct,
    collectives::Algorithm::pipelined_ring, collectives::Algorithm::reduce_broadcast};

// Groups of 2 make topology-aware and hierarchical differ from Rabenseifner.
inline collectives::Topology test_topology(int p) {
  using namespace collectives;
  return Topology(p, 2, Placement::block, Link{1e-6, 12e9}, Link{2e-6, 3e9}, 10e9);
}

// Small integers in [-5, 5], different per rank, element and salt.
inline Buffers integer_inputs(int p, std::size_t n, int salt) {
  Buffers b(static_cast<std::size_t>(p), std::vector<float>(n));
  for (int r = 0; r < p; ++r) {
    for (std::size_t i = 0; i < n; ++i) {
      b[static_cast<std::size_t>(r)][i] = static_cast<float>((r * 7 + i * 3 + static_cast<std::size_t>(salt)) % 11) - 5;
    }
  }
  return b;
}

// Standard normal floats drawn from `seed`.
inline Buffers random_inputs(int p, std::size_t n, std::uint64_t seed) {
  Rng rng(seed);
  Buffers b(static_cast<std::size_t>(p), std::vector<float>(n));
  for (auto& v : b)
    for (auto& f : v) f = rng.normal(0.0f, 1.0f);
  return b;
}

// Element-wise float sum over ranks: exact on integer_inputs, so every
// allreduce, in any summation order, must give these bits.
inline std::vector<float> plain_sum(const Buffers& inputs) {
  std::vector<float> sum(inputs[0].size(), 0.0f);
  for (const auto& b : inputs)
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += b[i];
  return sum;
}

inline bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0);
}

}  // namespace taihu::testing
