#pragma once
// Payload buffers from the process's shared arena (transport/shared_arena.hpp):
// peers on this host map the arena read-only, so a chunk sent from such a
// buffer is read in place, never copied through a socket. Buffers smaller
// than the arena's granule come from the heap (a socket frame is as cheap).

#include <memory>

#include "messages/payload_allocator.hpp"
#include "transport/shared_arena.hpp"

namespace taihu::transport {

class ArenaAllocator final : public msg::PayloadAllocator {
 public:
  explicit ArenaAllocator(SharedArena& arena) : arena_(&arena) {}

  std::shared_ptr<float[]> allocate(std::size_t n) const override {
    const std::size_t bytes = n * sizeof(float);
    if (bytes < SharedArena::granule) return nullptr;
    void* p = arena_->allocate(bytes);
    if (p == nullptr) return nullptr;  // full: the heap takes it
    return {static_cast<float*>(p), [arena = arena_, bytes](float* q) { arena->release(q, bytes); }};
  }

 private:
  SharedArena* arena_;
};

}  // namespace taihu::transport
