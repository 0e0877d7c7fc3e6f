#pragma once
// The collective executor as an actor: one per (bucket, rank).
//
// Protocol (messages/):
//   ShardInit{bucket, peers, owner}      once: peers[r] is rank r's shard of this bucket
//   GradientReady{bucket, it, buffer}    per iteration, from the owner: the rank's input
//   Chunk{bucket, it, sender, seq, ...}  between peers, as the schedule says
//   Reduced{bucket, it, rank, buffer}    to the owner when the rank's last step is done
// The shard runs its rank's steps of the Schedule strictly in order, driven
// only by arriving messages: a chunk that arrives before its step (or before
// its iteration started) is kept, keyed by (iteration, sender, seq).
// GradientReady messages that arrive while an iteration runs, or before
// ShardInit, queue up and start in iteration order.
//
// Sends copy: each send step snapshots its range into a fresh immutable
// buffer (one memcpy of the range), which then travels by reference count.
// A view of the live buffer would save that copy during the collective (the
// schedules pass analyse_zero_copy's overwrite check), but a receiver may
// still read it after the sender has finished and handed the buffer back to
// its worker (ZeroCopyReport::outlive_sender), and the worker writes it next;
// making that safe needs acknowledgements, which come with credits.
//
// Reductions call kernels::add; the schedule fixes the order, so results are
// deterministic and bit-identical on all ranks. A malformed message (wrong
// bucket, range or size, a stale iteration) makes the shard throw: it
// terminates with an error that its owner sees through a monitor.

#include <caf/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "actors/sync/schedule.hpp"

namespace taihu::sync {

struct ShardSpec {
  std::uint32_t bucket = 0;
  int rank = 0;
  int ranks = 1;
  std::size_t elements = 0;  // bucket length in floats
  std::vector<Step> steps;   // this rank's steps of a finalized schedule
};

// Rank `rank`'s part of `schedule` for bucket `bucket`.
ShardSpec shard_spec(const Schedule& schedule, int rank, std::uint32_t bucket);

caf::actor spawn_shard(caf::actor_system& system, ShardSpec spec);

}  // namespace taihu::sync
