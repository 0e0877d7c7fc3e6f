#pragma once
// Consuming a chunk's floats, wherever they are (messages/chunk.hpp): in its
// payload, or still in the sender's memory on this host. Either way each
// float is read once, straight into place.

#include <cstddef>

#include "messages/chunk.hpp"

namespace taihu::msg {

// out[0, n) += chunk's floats (n = chunk.size()).
void add_chunk(const Chunk& chunk, float* out);
// out[0, n) = chunk's floats.
void copy_chunk(const Chunk& chunk, float* out);
// chunk_payload (chunk.hpp): the floats as a payload.

}  // namespace taihu::msg
