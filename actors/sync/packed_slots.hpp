#pragma once
// The buffer of RedSync's packed allgather as a collective's steps see it
// (StepEngine): one slot per rank, each `capacity` words long, slot r at
// r·capacity; rank r's packed message (core/compress/packed.hpp) fills a
// prefix of slot r. The schedule is ring_allgatherv over P slots of the same
// capacity (slots()), and each of its steps moves one whole slot. A send
// passes the slot's message on unchanged (in-process, a reference count); a
// receive keeps the chunk's message in its slot. Nothing is decoded here.
//
// Why slots of a fixed capacity rather than an allgather-v over the
// iteration's exact message sizes: the sizes differ per rank and iteration
// (a threshold selects what it selects), and a receiver would have to learn
// them before its first step (an allgather-v's ranges and sequence numbers
// depend on every size), which costs a round of messages per iteration.
// With slots, the schedule depends on nothing an iteration decides: it is
// built once. A message needs no length word of its own: its chunk carries
// its length, any length up to the capacity (fits()), and only the message's
// words travel. The capacity is the longest message the bucket's compressor
// can write (BucketCompressor::max_message_words, the same on every rank).

#include <cstddef>
#include <vector>

#include "collectives/schedule.hpp"
#include "messages/chunk.hpp"
#include "messages/tensor_payload.hpp"

namespace taihu::sync {

class PackedSlots {
 public:
  PackedSlots() = default;
  // `ranks` empty slots of `capacity` (> 0) words.
  PackedSlots(int ranks, std::size_t capacity);

  // The ring allgather of `ranks` slots of `capacity` words.
  static collectives::Schedule ring(int ranks, std::size_t capacity);

  std::size_t capacity() const { return capacity_; }
  // Rank `rank`'s own message; throws when it is longer than a slot.
  void put(int rank, msg::TensorPayload message);
  // The message in rank `rank`'s slot (empty until it came).
  const msg::TensorPayload& message(int rank) const { return slots_[static_cast<std::size_t>(rank)]; }
  // Empties every slot (releases the messages).
  void clear();

  // StepBuffer (actors/sync/step_engine.hpp).
  msg::TensorPayload outgoing(std::size_t index, const collectives::Step& step) const {
    return slots_[slot(step.send)];
  }
  bool fits(collectives::Range range, std::size_t size) const { return size <= range.length; }
  void consume(const collectives::Step& step, msg::Chunk& chunk) { slots_[slot(step.recv)] = msg::chunk_payload(chunk); }

 private:
  // The slot a range covers; throws unless it is exactly one whole slot.
  std::size_t slot(collectives::Range range) const;

  std::size_t capacity_ = 0;
  std::vector<msg::TensorPayload> slots_;
};

}  // namespace taihu::sync
