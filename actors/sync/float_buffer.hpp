#pragma once
// A bucket's floats as a collective's steps see them (StepEngine): a send
// passes a view of its range where that is safe and a copy elsewhere (the
// per-step choice of shard_specs, actors/sync/shard_actor.hpp); a receive
// adds the chunk into its range or overwrites it, as the step's Combine says.
//
// The buffer holds the running iteration's payload. Its floats are taken
// writable once, when it is bound: views of it are out during the collective,
// and taking them again would copy the whole buffer (copy on write).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/schedule.hpp"
#include "messages/chunk.hpp"
#include "messages/payload_allocator.hpp"
#include "messages/tensor_payload.hpp"

namespace taihu::sync {

class FloatBuffer {
 public:
  FloatBuffer() = default;
  // send_view[i]: step i sends a view, else a copy (empty: every send copies);
  // copies come from `allocator` (null: the heap). sizes_only: the payloads
  // are TensorPayload::sized (timing-only simulation): sends are slices and
  // receives skip the arithmetic.
  FloatBuffer(std::vector<std::uint8_t> send_view, const msg::PayloadAllocator* allocator, bool sizes_only = false)
      : send_view_(std::move(send_view)), allocator_(allocator), sizes_only_(sizes_only) {}

  // Takes the iteration's payload and its floats, writable. True when the
  // payload was shared, so that its floats had to be copied first.
  bool bind(msg::TensorPayload payload);
  // Gives the payload back (the result, once the steps are done).
  msg::TensorPayload release();
  const msg::TensorPayload& payload() const { return payload_; }
  float* data() const { return data_; }

  // StepBuffer (actors/sync/step_engine.hpp).
  msg::TensorPayload outgoing(std::size_t index, const collectives::Step& step);
  bool fits(collectives::Range range, std::size_t size) const { return size == range.length; }
  void consume(const collectives::Step& step, const msg::Chunk& chunk);

  // Floats that sends copied, over all iterations.
  std::uint64_t copied_floats() const { return copied_floats_; }

 private:
  std::vector<std::uint8_t> send_view_;
  const msg::PayloadAllocator* allocator_ = nullptr;
  bool sizes_only_ = false;
  msg::TensorPayload payload_;
  float* data_ = nullptr;
  std::uint64_t copied_floats_ = 0;
};

}  // namespace taihu::sync
