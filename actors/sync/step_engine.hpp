#pragma once
// The readiness loop of a collective, written once for every shard actor: one
// rank's steps of a finalized Schedule (collectives/schedule.hpp), run strictly
// in order over one buffer and driven only by what has arrived.
//
// advance() goes from the current step on: it sends the step's chunk unless it
// already went out, looks for the chunk the step receives in the shard's inbox
// (chunks are kept there by (iteration, sender, seq), so they may come in any
// order), checks its range, hands it to the buffer and moves on; it returns at
// the first step whose chunk has not come. So every reduction happens at its
// step, in the schedule's order, whatever the arrival order: results are fixed
// bit for bit by the schedule alone.
//
// The buffer says what a send carries and what a receive does (StepBuffer):
//   FloatBuffer  (float_buffer.hpp)  the bucket's floats: a send is a view of
//                its range or a copy; a receive adds into it or overwrites it
//   PackedSlots  (packed_slots.hpp)  one packed message per rank: a send passes
//                a message on unchanged; a receive keeps it
// Sending itself is the caller's (a CAF message to a peer, or a router): the
// engine knows no actors.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "collectives/schedule.hpp"
#include "core/common/check.hpp"
#include "messages/chunk.hpp"

namespace taihu::sync {

// Where the chunks that came wait for their step: ShardInbox
// (actors/sync/shard_inbox.hpp), whose name() names the shard in errors.
template <class I>
concept ChunkInbox = requires(I& inbox, std::uint64_t iteration, int sender, std::uint32_t seq) {
  { inbox.find(iteration, sender, seq) } -> std::same_as<msg::Chunk*>;
  inbox.drop(iteration, sender, seq);
  { inbox.name() } -> std::convertible_to<std::string_view>;
};

template <class B>
concept StepBuffer = requires(B& buffer, std::size_t index, const collectives::Step& step, msg::Chunk& chunk) {
  // What step `index` sends: its send range, as a payload.
  { buffer.outgoing(index, step) } -> std::same_as<msg::TensorPayload>;
  // Whether a chunk of `size` floats may fill the step's receive range.
  { buffer.fits(step.recv, chunk.size()) } -> std::same_as<bool>;
  // Combines a chunk that fits into the receive range.
  buffer.consume(step, chunk);
};

class StepEngine {
 public:
  StepEngine() = default;
  // `steps`: rank `rank`'s steps of a finalized schedule; its chunks name
  // bucket `bucket` and carry seq_base + the schedule's sequence numbers (two
  // schedules of one bucket share an inbox with different bases).
  StepEngine(std::uint32_t bucket, int rank, std::vector<collectives::Step> steps, std::uint32_t seq_base = 0)
      : bucket_(bucket), rank_(rank), seq_base_(seq_base), steps_(std::move(steps)) {}

  const std::vector<collectives::Step>& steps() const { return steps_; }

  // Goes back to the first step, for `iteration`.
  void start(std::uint64_t iteration) {
    iteration_ = iteration;
    next_ = 0;
    sent_ = false;
  }
  bool done() const { return next_ == steps_.size(); }

  // `chunk` is the one the current step waits for (so it did not come early).
  bool awaits(const msg::Chunk& chunk) const {
    return !done() && chunk.iteration == iteration_ && receives(steps_[next_], chunk);
  }
  // Some step receives `chunk` (of whatever iteration).
  bool expects(const msg::Chunk& chunk) const {
    for (const collectives::Step& step : steps_)
      if (receives(step, chunk)) return true;
    return false;
  }

  // Runs steps until one waits for a chunk that `inbox` does not hold; each
  // send goes to post(int to, msg::Chunk). True when the last step is done.
  // A chunk whose range is not the step's throws, naming the shard.
  template <ChunkInbox Inbox, StepBuffer Buffer, class Post>
  bool advance(Inbox& inbox, Buffer& buffer, Post&& post) {
    while (next_ < steps_.size()) {
      const collectives::Step& step = steps_[next_];
      if (step.sends() && !sent_) {
        // Taken before this step's receive writes the buffer (schedule.hpp, rule 2).
        post(step.send_to, msg::Chunk{bucket_, iteration_, rank_, seq_base_ + step.send_seq, step.send.offset,
                                      buffer.outgoing(next_, step), nullptr});
        sent_ = true;
      }
      if (step.receives()) {
        const std::uint32_t seq = seq_base_ + step.recv_seq;
        msg::Chunk* chunk = inbox.find(iteration_, step.recv_from, seq);
        if (chunk == nullptr) return false;
        require(chunk->offset == step.recv.offset && buffer.fits(step.recv, chunk->size()),
                "{}: chunk {} from rank {} holds [{}, +{}), step {} expects [{}, +{})", inbox.name(), step.recv_seq,
                step.recv_from, chunk->offset, chunk->size(), next_, step.recv.offset, step.recv.length);
        buffer.consume(step, *chunk);
        inbox.drop(iteration_, step.recv_from, seq);  // releases a same-host sender's memory
      }
      sent_ = false;
      ++next_;
    }
    return true;
  }

 private:
  bool receives(const collectives::Step& step, const msg::Chunk& chunk) const {
    return step.receives() && step.recv_from == chunk.sender && seq_base_ + step.recv_seq == chunk.seq;
  }

  std::uint32_t bucket_ = 0;
  int rank_ = 0;
  std::uint32_t seq_base_ = 0;
  std::vector<collectives::Step> steps_;
  std::uint64_t iteration_ = 0;
  std::size_t next_ = 0;
  bool sent_ = false;  // the current step's send went out
};

}  // namespace taihu::sync
