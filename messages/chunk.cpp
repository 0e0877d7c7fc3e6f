#include "messages/chunk.hpp"

namespace taihu::msg {

const TensorPayload& chunk_payload(Chunk& chunk) {
  if (chunk.source) {
    chunk.payload = TensorPayload::allocate(chunk.source->size());
    if (!chunk.payload.empty()) chunk.source->read(0, chunk.payload.size(), chunk.payload.mutable_data());
    chunk.source.reset();
  }
  return chunk.payload;
}

}  // namespace taihu::msg
