#pragma once
// α-β-γ cost of collectives on a Topology (sw26010.md §7.2).
//
// predict() walks a schedule with the zero-contention model: every rank runs
// its steps in order; a step starting at t0 that sends b bytes keeps the
// sender busy until t0 + α + β·b (blocking send, as MPI_Sendrecv) and the
// message arrives then; a receive completes at max(own send done, arrival),
// plus γ·b when it reduces. Link α and β come from the class of the (sender,
// receiver) pair. The prediction is the time the last rank finishes.
//
// The closed forms below are the reference's formulas, with α split by link
// class. They hold exactly (equal to predict()) when their preconditions hold.

#include <cstddef>

#include "collectives/schedule.hpp"
#include "collectives/topology.hpp"

namespace taihu::collectives {

inline constexpr double bytes_per_element = sizeof(float);

struct Prediction {
  double seconds = 0;           // completion time of the slowest rank
  std::vector<double> finish;   // per rank
};

// Throws taihu::Error if the schedule deadlocks (a receive that never comes).
Prediction predict(const Schedule& schedule, const Topology& topology);

// 2(P-1)(α + β·n/P) + (P-1)/P·n·γ, with the slowest link any ring neighbour
// pair uses. Exact when n (bytes) is a multiple of 4·P.
double ring_formula(const Topology& topology, double bytes);
// Rabenseifner with halving partner at distance P/2 first on contiguous
// (block) groups of q: P, q powers of two, q | P, equal groups, n a multiple of 4·P.
//   2·(log q·α1 + log(P/q)·α2 + (q-1)(n/P)β1 + (P-q)(n/P)β2) + (P-1)/P·n·γ
double rabenseifner_block_formula(const Topology& topology, double bytes);
// The same on ranks dealt round-robin over the P/q groups (topology_aware):
//   2·(log q·α1 + log(P/q)·α2 + (P-P/q)(n/P)β1 + (P/q-1)(n/P)β2) + (P-1)/P·n·γ
double topology_aware_formula(const Topology& topology, double bytes);

struct Choice {
  Algorithm algorithm = Algorithm::ring;
  double seconds = 0;
};
// The cheapest allreduce (by predict()) for `bytes` on this topology: what
// `algorithm = auto` picks. Ties go to the simpler algorithm (ring first).
Choice choose_algorithm(const Topology& topology, double bytes);
// The cheapest broadcast from rank 0 (binomial or scatter_allgather).
Choice choose_broadcast(const Topology& topology, double bytes);

}  // namespace taihu::collectives
