// Two-level allreduce: inside each group to its leader, among leaders, back out.
#include "collectives/algorithms.hpp"
#include "collectives/algorithms/primitives.hpp"
#include "core/common/check.hpp"

namespace taihu::collectives {

Schedule hierarchical_allreduce(const Topology& topology, std::size_t elements) {
  Schedule s(Collective::allreduce, Algorithm::hierarchical, topology.ranks(), elements);
  const Range whole{0, elements};
  std::vector<int> leaders;
  for (int g = 0; g < topology.groups(); ++g) {
    detail::append_binomial_reduce(s, topology.members(g), 0, whole);
    leaders.push_back(topology.members(g).front());
  }
  detail::append_rabenseifner(s, leaders, whole);
  for (int g = 0; g < topology.groups(); ++g) detail::append_binomial_broadcast(s, topology.members(g), 0, whole);
  s.finalize();
  return s;
}

Schedule make_allreduce(Algorithm algorithm, const Topology& topology, std::size_t elements) {
  switch (algorithm) {
    case Algorithm::ring: return ring_allreduce(topology.ranks(), elements);
    case Algorithm::rabenseifner: return rabenseifner_allreduce(topology.ranks(), elements);
    case Algorithm::topology_aware: return topology_aware_allreduce(topology, elements);
    case Algorithm::hierarchical: return hierarchical_allreduce(topology, elements);
    case Algorithm::direct: return direct_allreduce(topology.ranks(), elements);
    case Algorithm::pipelined_ring: return pipelined_ring_allreduce(topology.ranks(), elements);
    case Algorithm::reduce_broadcast: return reduce_broadcast_allreduce(topology.ranks(), elements);
    case Algorithm::binomial:
    case Algorithm::scatter_allgather: break;
  }
  raise("'{}' is not an allreduce algorithm", name(algorithm));
}

}  // namespace taihu::collectives
