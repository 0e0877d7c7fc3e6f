#pragma once
// RedSync's flow as a shard actor: one per (bucket, rank), like the plain
// allreduce shard (actors/sync/shard_actor.hpp) and with the same protocol
// towards its owner:
//   ShardInit{bucket, peers, owner}      once
//   GradientReady{bucket, it, buffer}    per iteration: the rank's raw gradient
//   Chunk{bucket, it, sender, seq, offset = origin rank's slot, payload = packed message}
//                                        between peers (the ring allgather)
//   Reduced{bucket, it, rank, buffer}    the dense SUM of every rank's
//                                        decompressed message (the owner scales by 1/N)
//
// Per iteration: the bucket's BucketCompressor (its residual, and velocity
// with momentum correction, live in this actor) writes this rank's packed
// message (core/compress/packed.hpp); ring_allgatherv passes the messages on
// (P-1 steps: step s sends the message of origin rank-s to the right
// neighbour and receives origin rank-s-1 from the left), over one slot per
// rank as long as the longest message the compressor can write, so that the
// schedule is built once: a message fills a prefix of its slot and its Chunk
// carries its own length (actors/sync/packed_slots.hpp); then the messages
// are added in rank order into the gradient buffer, so every rank computes
// the same floats and an index sent by several ranks is summed. Both
// collectives run through the shard's StepEngine (actors/sync/step_engine.hpp).
//
// Messages travel as float payloads (bit copies of the words): in-process a
// forwarded message is a reference count, across processes the data plane
// carries the Chunk unchanged (ChunkRouter), so one code path serves both.
//
// A bucket that mixes sparse and dense segments can send the dense ones by
// allreduce instead (CompressedShardSpec::dense_steps), concurrently with
// the allgather; the result is the same sum.
//
// A malformed message (wrong origin, garbage words) makes the shard throw:
// it terminates with an error naming the bucket, the ranks and the problem.

#include <caf/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "actors/sync/shard_actor.hpp"
#include "core/compress/compressor.hpp"

namespace taihu::sync {

struct CompressedShardSpec {
  std::uint32_t bucket = 0;
  int rank = 0;
  int ranks = 1;
  std::size_t elements = 0;
  std::vector<compress::Segment> segments;  // tile [0, elements); options.workers is set to ranks
  // Optional: this rank's steps of an allreduce over the bucket's dense fp32
  // segments, concatenated in bucket order (make_allreduce over their total
  // length). Then those segments skip the allgather (2(P-1)/P·4n bytes a
  // rank instead of (P-1)·4n), behind their compressor's momentum
  // correction; their chunks use seq dense_seq_base + the schedule's seq.
  // Without split_dense every segment goes in the packed message.
  bool split_dense = false;
  std::vector<collectives::Step> dense_steps;
};

inline constexpr std::uint32_t dense_seq_base = 1u << 24;

// The shard_actor protocol; ShardStats counts chunks, early chunks, bytes
// sent and the entries of this rank's own messages.
shard_actor spawn_compressed_shard(caf::actor_system& system, CompressedShardSpec spec,
                                  std::shared_ptr<ChunkRouter> router = nullptr);

}  // namespace taihu::sync
