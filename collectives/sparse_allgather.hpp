#pragma once
// RedSync's sparse synchronisation as a collective schedule (redsync.md
// §2.8, §3.2): every rank selects k = density·n entries and sends one packed
// message [len, indices, values] (1 + 2k four-byte words) to all others by an
// allgather of variable-size blocks; each rank then adds the P packed
// vectors into its gradients (a sparse axpy, charged separately:
// sparse_decompress_bytes).

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "collectives/schedule.hpp"

namespace taihu::collectives {

// Packed message sizes (floats) of `ranks` ranks for a bucket of `elements`
// at `density`; with spread s > 0 each rank's k varies by a deterministic
// factor in [1 - s, 1 + s] (selections are not equally large in practice).
std::vector<std::size_t> packed_sizes(int ranks, std::size_t elements, double density, double spread = 0.1,
                                      std::uint64_t seed = 1);

// Recursive-doubling allgather of variable-size blocks (Thakur, Rabenseifner,
// Gropp), as RedSync uses: log2 P exchanges, step i swaps the 2^i blocks each
// side already holds (one contiguous range, since the blocks are in rank
// order). P must be a power of two; the layout is ring_allgatherv's.
collectives::Schedule recursive_doubling_allgatherv(std::span<const std::size_t> counts);

// recursive doubling when P is a power of two, else the ring allgatherv.
collectives::Schedule sparse_allgather(std::span<const std::size_t> counts);

// Bytes each rank adds into its gradients after the allgather: the values of
// all P packed messages (k per rank, fp32).
double sparse_decompress_bytes(std::span<const std::size_t> counts);

}  // namespace taihu::collectives
