#pragma once
// Runs all ranks of a schedule in one thread, on real buffers, the way shard
// actors will: each rank advances only on its own steps and on arrived
// messages. The order of everything that could happen concurrently (which
// rank moves next, which in-flight message is delivered next) is drawn at
// random from `seed`, so tests can show a schedule's result does not depend
// on arrival order. For tests and as an executable spec of schedule.hpp.

#include <cstdint>
#include <span>
#include <vector>

#include "collectives/schedule.hpp"

namespace taihu::collectives {

struct ExecutionStats {
  std::size_t messages = 0;
  std::size_t max_in_flight = 0;  // delivered-but-unconsumed plus undelivered, at worst
  // Deliveries of a message its receiver was not yet waiting for (it had to
  // be kept): shows that the run exercised out-of-order arrival.
  std::size_t early = 0;
};

// copy: a message carries a snapshot taken when it is sent. view: it carries
// only (sender, range) and is read from the sender's live buffer when
// consumed, like a copy-free in-process send (see zero_copy.hpp).
enum class Payload { copy, view };

// buffers[r] is rank r's buffer (schedule.elements floats), updated in place.
// Throws taihu::Error on a deadlock or a buffer of the wrong size.
ExecutionStats execute(const Schedule& schedule, std::span<std::vector<float>> buffers, std::uint64_t seed,
                       Payload payload = Payload::copy);

}  // namespace taihu::collectives
