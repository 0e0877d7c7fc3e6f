#include "actors/sync/float_buffer.hpp"

#include <utility>

#include "actors/sync/chunk_ops.hpp"

namespace taihu::sync {

bool FloatBuffer::bind(msg::TensorPayload payload) {
  payload_ = std::move(payload);
  const bool shared = !payload_.unique();
  data_ = payload_.mutable_data();
  return shared;
}

msg::TensorPayload FloatBuffer::release() {
  data_ = nullptr;
  return std::exchange(payload_, {});
}

msg::TensorPayload FloatBuffer::outgoing(std::size_t index, const collectives::Step& step) {
  // A view needs no snapshot: the zero-copy analysis cleared it
  // (collectives/zero_copy.hpp).
  if (sizes_only_ || (index < send_view_.size() && send_view_[index])) {
    return payload_.slice(step.send.offset, step.send.length);
  }
  copied_floats_ += step.send.length;
  return msg::TensorPayload::copy_of(data_ + step.send.offset, step.send.length, allocator_);
}

void FloatBuffer::consume(const collectives::Step& step, const msg::Chunk& chunk) {
  if (sizes_only_) return;  // no values to combine
  float* out = data_ + step.recv.offset;
  if (step.combine == collectives::Combine::reduce) {
    add_chunk(chunk, out);
  } else {
    copy_chunk(chunk, out);
  }
}

}  // namespace taihu::sync
