#pragma once
// Device work items (actors/device): the executor of a net on the simulated
// SW26010 asks each core-group actor to run its share of one phase of one
// layer's pass; the actor answers with the phase's simulated time on its core
// group. The data stays in the net's blobs (each group writes only its share);
// messages carry which work to run and, back, what it cost.

#include <caf/meta/type_name.hpp>
#include <cstdint>

namespace taihu::msg {

struct CoreGroupWork {
  std::uint32_t layer = 0;
  bool backward = false;
  std::int32_t phase = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, CoreGroupWork& x) {
  return f(caf::meta::type_name("taihu::msg::CoreGroupWork"), x.layer, x.backward, x.phase);
}

struct CoreGroupDone {
  std::uint32_t group = 0;
  std::uint32_t layer = 0;
  std::int32_t phase = 0;
  std::int64_t cycles = 0;     // simulated, spawn to join of the group's kernels
  std::int64_t dma_bytes = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, CoreGroupDone& x) {
  return f(caf::meta::type_name("taihu::msg::CoreGroupDone"), x.group, x.layer, x.phase, x.cycles, x.dma_bytes);
}

}  // namespace taihu::msg
