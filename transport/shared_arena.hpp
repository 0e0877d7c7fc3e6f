#pragma once
// Memory that the other processes of this host can map: a node allocates the
// buffers its peers read (buckets, shards' copies; 64 KB and more) from here,
// through actors/chunk_link/arena_allocator.hpp (a memfd, reserved large and
// touched on demand). A peer on the same host that maps
// the arena (ArenaView, through /proc/<pid>/fd and the data plane's channel)
// reads a chunk's floats in place — a plain load, no system call and no page
// pinning per message — where process_vm_readv would copy them through the
// kernel.
//
// Allocation: first fit over 64 KB granules, neighbours merged on release.
// Like a heap, the arena keeps the memory of its peak use for reuse. Only
// the owner writes; peers map it read-only. It is sealed at its size, so a
// peer's mapping stays whole whatever the owner does. A child made by fork()
// gets a private copy of its parent's arena (its writes stay its own) and no
// installed arena: install() in the child makes a new one.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace taihu::transport {

class SharedArena {
 public:
  static constexpr std::size_t reserved_bytes = std::size_t{1} << 36;  // address space, not memory
  static constexpr std::size_t granule = std::size_t{64} << 10;       // and the smallest buffer it takes

  // The process's arena, creating it on first use; throws taihu::Error when
  // the system refuses (then buffers stay on the heap). Thread-safe.
  static SharedArena& install();
  // The arena if installed, else null.
  static SharedArena* installed();

  int fd() const { return fd_; }
  std::uint64_t base() const { return reinterpret_cast<std::uint64_t>(base_); }

  // `bytes` rounded up to granules; null when the arena is full.
  void* allocate(std::size_t bytes);
  void release(void* p, std::size_t bytes);
  std::size_t used_bytes() const;

  ~SharedArena();

 private:
  SharedArena(int fd, char* base) : fd_(fd), base_(base) {}
  int fd_;
  char* base_;
  mutable std::mutex mutex_;
  std::size_t top_ = 0;                     // bytes handed out from the start, ever
  std::map<std::size_t, std::size_t> free_;  // offset -> bytes, below top_
  std::size_t used_ = 0;
};

// Whether the memfd `fd` can no longer shrink (F_SEAL_SHRINK) nor have its
// seals changed: no one can then cut pages from under a mapping of it (a
// load from them would fault, SIGBUS). The arena and the channel segments
// are sealed so; their readers refuse anything else.
bool sealed_at_size(int fd);

// Another process's arena, mapped read-only.
class ArenaView {
 public:
  // The arena that process `pid` holds as descriptor `fd`, mapped at `base`
  // there. Throws taihu::Error when it cannot be opened or is not an arena
  // (of the arena's size, sealed at it).
  static std::unique_ptr<ArenaView> open(std::uint32_t pid, std::uint32_t fd, std::uint64_t base);
  ~ArenaView();
  ArenaView(const ArenaView&) = delete;
  ArenaView& operator=(const ArenaView&) = delete;

  // Where [address, address + bytes) of the owner's memory is readable here,
  // or null when it is not all inside the arena.
  const void* at(std::uint64_t address, std::uint64_t bytes) const;

 private:
  ArenaView(const char* data, std::uint64_t base) : data_(data), base_(base) {}
  const char* data_;
  std::uint64_t base_;
};

}  // namespace taihu::transport
