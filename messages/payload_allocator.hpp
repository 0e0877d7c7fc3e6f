#pragma once
// Where a payload's buffer comes from. By default the heap; a process whose
// peers on this host read its buffers in place passes the allocator of its
// shared arena (actors/chunk_link/arena_allocator.hpp) to whoever allocates
// buffers that cross to them (workers' buckets, shards' copies). Passed in,
// never a global, so messages/ knows nothing of the transport.

#include <cstddef>
#include <memory>

namespace taihu::msg {

class PayloadAllocator {
 public:
  virtual ~PayloadAllocator() = default;
  // A buffer of n floats, or null: this allocator does not take that size
  // (the payload then comes from the heap).
  virtual std::shared_ptr<float[]> allocate(std::size_t n) const = 0;
};

}  // namespace taihu::msg
