#include "actors/sync/chunk_ops.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/kernels/elementwise.hpp"

namespace taihu::sync {

void add_chunk(const msg::Chunk& chunk, float* out) {
  const std::size_t n = chunk.size();
  if (!chunk.source || chunk.source->data() != nullptr) {
    const float* in = chunk.source ? chunk.source->data() : chunk.payload.data();
    kernels::add(static_cast<std::int64_t>(n), out, in, out);
    return;
  }
  // Read a block into a buffer that stays in L2, add it, repeat: the sender's
  // floats cross the memory bus once and never land in a full-size buffer.
  constexpr std::size_t block = std::size_t{32} << 10;  // floats: 128 KB
  thread_local std::vector<float> staging(block);
  for (std::size_t first = 0; first < n; first += block) {
    const std::size_t m = std::min(block, n - first);
    chunk.source->read(first, m, staging.data());
    kernels::add(static_cast<std::int64_t>(m), out + first, staging.data(), out + first);
  }
}

void copy_chunk(const msg::Chunk& chunk, float* out) {
  if (chunk.source && chunk.source->data() != nullptr) {
    std::memcpy(out, chunk.source->data(), chunk.size() * sizeof(float));
  } else if (chunk.source) {
    chunk.source->read(0, chunk.size(), out);
  } else if (!chunk.payload.empty()) {
    std::memcpy(out, chunk.payload.data(), chunk.payload.size() * sizeof(float));
  }
}

}  // namespace taihu::sync
