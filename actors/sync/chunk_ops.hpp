#pragma once
// A shard's arithmetic on a chunk's floats, wherever they are
// (messages/chunk.hpp): in its payload, or still in the sender's memory on
// this host. Either way each float is read once, straight into place.

#include <cstddef>

#include "messages/chunk.hpp"

namespace taihu::sync {

// out[0, n) += chunk's floats (n = chunk.size()).
void add_chunk(const msg::Chunk& chunk, float* out);
// out[0, n) = chunk's floats.
void copy_chunk(const msg::Chunk& chunk, float* out);

}  // namespace taihu::sync
