#pragma once
// Schedule generators for the collectives (see schedule.hpp for the format).
// Every result is finalized: message sequence numbers assigned, sends and
// receives checked to match.

#include <cstddef>
#include <span>

#include "collectives/schedule.hpp"
#include "collectives/topology.hpp"

namespace taihu::collectives {

// Summation order (the exact float expression every rank ends with, per
// element; a + b is commutative in IEEE floats, so only grouping matters):
//   ring, element in chunk c:  x[c+P-1] + (… + (x[c+2] + (x[c+1] + x[c])))   (indices mod P)
//   direct, element in chunk c: ((x[c] + x[c-1]) + x[c-2]) + … + x[c-P+1]    (indices mod P)
//   rabenseifner:              y = x with y[e-p'] += y[e] for the extras e >= p';
//                              then for d = p'/2, …, 1: y[l] = y[l] + y[l xor d]; result y[0]
//   topology_aware:            the same over round_robin_order(topology)
//   hierarchical:              binomial reduce per group (node v adds its children
//                              v+1, v+2, v+4 … in that order), then rabenseifner over
//                              the leaders in group order
//   reduce_broadcast:          binomial reduce over all ranks (as hierarchical's per group)
// The tests recompute these expressions and compare bits.

// Ring reduce-scatter then ring allgather; P-1 + P-1 steps, each rank sends
// 2(P-1)/P·n elements. The owner of each chunk sums it once, in ring order.
Schedule ring_allreduce(int ranks, std::size_t elements);

// The ring pipelined: each of its ranges goes in segments of about
// `segment_elements` (at most max_pipeline_segments per range), and a rank
// passes a segment on as soon as it has combined it, instead of waiting for
// the whole range. Same messages' bytes, same sums bit for bit as the ring;
// no link waits while a step's last bytes arrive and are reduced (the ring's
// 2(P-1) step boundaries), at the cost of more, smaller messages. Chosen by
// name only (choose_algorithm's model has no such boundaries).
inline constexpr std::size_t default_pipeline_segment = std::size_t{1} << 18;  // floats: 1 MiB
inline constexpr std::size_t max_pipeline_segments = 64;
Schedule pipelined_ring_allreduce(int ranks, std::size_t elements,
                                  std::size_t segment_elements = default_pipeline_segment);

// Direct: each rank sends every peer its chunk (P-1 messages in flight at
// once), sums the contributions to its own chunk, then sends that sum to
// every peer: two rounds of latency, 2(P-1)/P·n elements sent per rank.
Schedule direct_allreduce(int ranks, std::size_t elements);

// Recursive halving (largest exchange first, partner at distance p'/2) then
// recursive doubling, where p' is the largest power of two <= P. The P - p'
// extra ranks first fold their buffer into rank (extra - p') and get the
// result back at the end. 2·log2(p') (+2) steps.
Schedule rabenseifner_allreduce(int ranks, std::size_t elements);

// swCaffe's topology-aware allreduce: Rabenseifner on logical ranks that are
// dealt round-robin over the topology's groups (logical rank l sits in group
// l mod groups), whatever the physical placement. The large early halving
// steps (distance a multiple of the group count) then stay inside a group.
Schedule topology_aware_allreduce(const Topology& topology, std::size_t elements);

// Binomial-tree reduce of the whole buffer to rank 0, then binomial broadcast:
// 2·ceil(log2 P) rounds of α + β·n, and rank 0's tree adds log2 P whole
// buffers. Never faster than Rabenseifner in the α-β model; it is here as
// what a plain MPI_Allreduce does where the reduction is slow (SWMPI reduces
// on the MPE: the simulator's model of it, sw26010.md §7.4).
Schedule reduce_broadcast_allreduce(int ranks, std::size_t elements);

// Binomial-tree reduce to each group's leader (its lowest rank), Rabenseifner
// among the leaders, binomial broadcast back inside each group.
Schedule hierarchical_allreduce(const Topology& topology, std::size_t elements);

// Dispatches on `algorithm` (binomial is not an allreduce and throws).
Schedule make_allreduce(Algorithm algorithm, const Topology& topology, std::size_t elements);

// Binomial-tree broadcast of the whole buffer from `root`: ceil(log2 P)
// rounds of α + β·n. Best for small buffers.
Schedule binomial_broadcast(int ranks, std::size_t elements, int root);

// Van de Geijn broadcast for large buffers: a binomial scatter gives rank
// root+v chunk v of P, then a ring allgather; about log2 P·α + 2·(P-1)/P·n·β.
Schedule scatter_allgather_broadcast(int ranks, std::size_t elements, int root);

// Dispatches on `algorithm` (binomial or scatter_allgather; others throw).
Schedule make_broadcast(Algorithm algorithm, int ranks, std::size_t elements, int root);

// Ring allgather of variable-size blocks: rank r contributes counts[r]
// elements (zero allowed) at offset counts[0] + … + counts[r-1] of a buffer of
// sum(counts) elements; all ranks end with the concatenation in rank order.
Schedule ring_allgatherv(std::span<const std::size_t> counts);

// Logical order used by topology_aware_allreduce: position l holds the
// physical rank that plays logical rank l.
std::vector<int> round_robin_order(const Topology& topology);

}  // namespace taihu::collectives
