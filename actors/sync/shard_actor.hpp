#pragma once
// The collective executor as an actor: one per (bucket, rank).
//
// Protocol (shard_actor below; messages/):
//   ShardInit{bucket, peers, owner}      once: peers[r] is rank r's shard of this bucket
//   GradientReady{bucket, it, buffer}    per iteration, from the owner: the rank's input
//   Chunk{bucket, it, sender, seq, ...}  between peers, as the schedule says
//   Reduced{bucket, it, rank, buffer}    to the owner when the rank's last step is done
//   stats_atom                           -> ShardStats
//   compressor_atom                      -> its compressor state (empty: none)
//   (compressor_atom, bytes)             -> true once restored (false: another layout, kept its own)
//   poll_atom                            to itself, while it polls its router
// The shard runs its rank's steps of the Schedule strictly in order, driven
// only by arriving messages (StepEngine, actors/sync/step_engine.hpp): a
// chunk that arrives before its step (or before its iteration started) is
// kept, keyed by (iteration, sender, seq).
// GradientReady messages that arrive while an iteration runs, or before
// ShardInit, queue up and start in iteration order.
//
// Sends pass views where that is safe, and copy elsewhere (SendMode):
//  - view: the chunk's payload is a slice of the shard's live buffer (no
//    memcpy; a reference count). Safe during the collective when
//    analyse_zero_copy() finds that no arrival order lets the sender write
//    the range before the receiver has consumed it (true of every generated
//    schedule). A receiver may still hold a view after the sender finished
//    (ZeroCopyReport::outlive_sender); then the buffer, handed back in
//    Reduced, is shared, and whoever writes it next goes through
//    TensorPayload::mutable_data(), which copies it first (copy on write).
//    The shard does the same with a GradientReady buffer that is not its
//    own (counted as buffer_copies).
//  - copy: the send snapshots its range into a fresh immutable buffer (one
//    memcpy of the range), taken before the same step's receive writes it.
//    Used for the sends the analysis flags, or for all in SendMode::copy.
//
// Reductions call kernels::add; the schedule fixes the order, so results are
// deterministic and bit-identical on all ranks. A malformed message (wrong
// bucket, range or size, a stale iteration) makes the shard throw: it
// terminates with an error that its owner sees through a monitor.

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "collectives/schedule.hpp"
#include "core/compress/compressor.hpp"
#include "messages/payload_allocator.hpp"
#include "messages/type_ids.hpp"

namespace taihu::sync {

// Both kinds of shard (this one and compressed_shard_actor.hpp) speak it.
using shard_actor = caf::typed_actor<
    caf::reacts_to<msg::ShardInit>, caf::reacts_to<msg::GradientReady>, caf::reacts_to<msg::Chunk>,
    caf::reacts_to<msg::poll_atom>, caf::replies_to<msg::stats_atom>::with<msg::ShardStats>,
    caf::replies_to<msg::compressor_atom>::with<std::string>,
    caf::replies_to<msg::compressor_atom, std::string>::with<bool>>;

// Who gets a shard's Reduced: its owner (a worker, actors/compute/worker_actor.hpp).
using msg::reduced_receiver;  // messages/shard_init.hpp

enum class SendMode : std::uint8_t { copy, view_where_safe };

struct ShardSpec {
  std::uint32_t bucket = 0;
  int rank = 0;
  int ranks = 1;
  std::size_t elements = 0;            // bucket length in floats
  std::vector<collectives::Step> steps;             // this rank's steps of a finalized schedule
  std::vector<std::uint8_t> send_view;  // per step: 1 = send a view, 0 = send a copy
  // Compression that sends every segment dense (collectives/compression_plan.hpp):
  // the rank's gradient goes through it (momentum correction, clipping)
  // before the allreduce; this rank's own compressor, or null.
  std::shared_ptr<compress::BucketCompressor> precompress;
  // Timing-only simulation (actors/sim/): the buffers are TensorPayload::sized,
  // sends are slices of them and receives skip the arithmetic; the message
  // flow (peers, sequence numbers, ranges, checks) is unchanged.
  bool sizes_only = false;
};

// Every rank's part of `schedule` for bucket `bucket` (one zero-copy analysis).
std::vector<ShardSpec> shard_specs(const collectives::Schedule& schedule, std::uint32_t bucket,
                                   SendMode mode = SendMode::view_where_safe);

// The transport seam: where chunks for other processes go. A shard with no
// router (in-process training) sends every chunk as a CAF message to its
// peer; with one, chunks for the ranks the router calls remote go to
// send() instead (the data plane, actors/chunk_link/chunk_link.hpp), and the
// peers' entries in ShardInit may be empty handles (or, when the router
// calls every rank remote, the list may be empty). Chunks from remote ranks
// come back as ordinary Chunk messages, so the collective code is the same.
//
// A router whose transport can be polled (same-host shared-memory channels)
// lets a shard that waits for a chunk in the middle of a collective look for
// it itself, for up to poll_budget(), instead of sleeping until another
// thread delivers it: a small collective then pays no thread wake-ups. The
// shard holds polling from its first wait to the end of the iteration (or
// until a wait outlasts the budget), so that peers skip their doorbells.
class ChunkRouter {
 public:
  virtual ~ChunkRouter() = default;
  virtual bool remote(int rank) const = 0;
  // Called on the shard's thread; must not block.
  virtual void send(int rank, msg::Chunk chunk) = 0;
  // How long a waiting shard polls; zero: it never does.
  virtual std::chrono::microseconds poll_budget() const { return {}; }
  // Delivers what has arrived (as Chunk messages to the shards); how many.
  virtual std::size_t poll() { return 0; }
  virtual void hold_polling(bool hold) {}
  // Where the shard's outgoing copies come from (messages/payload_allocator.hpp);
  // null: the heap.
  virtual const msg::PayloadAllocator* allocator() const { return nullptr; }
};

shard_actor spawn_shard(caf::actor_system& system, ShardSpec spec, std::shared_ptr<ChunkRouter> router = nullptr);

// One bucket's shards as ShardInit's peers carry them: what each takes from the others.
std::vector<msg::chunk_receiver> as_peers(const std::vector<shard_actor>& shards);

}  // namespace taihu::sync
