#include "transport/shared_arena.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "core/common/check.hpp"

namespace taihu::transport {

namespace {

std::atomic<SharedArena*> the_arena{nullptr};
std::mutex install_mutex;

std::size_t round_up(std::size_t bytes) {
  return (bytes + SharedArena::granule - 1) / SharedArena::granule * SharedArena::granule;
}

}  // namespace

bool sealed_at_size(int fd) {
  const int seals = ::fcntl(fd, F_GET_SEALS);
  return seals >= 0 && (seals & F_SEAL_SHRINK) != 0 && (seals & F_SEAL_SEAL) != 0;
}

SharedArena* SharedArena::installed() { return the_arena.load(std::memory_order_acquire); }

namespace {

// In a child after fork(): the inherited mapping is still the parent's
// memory; make it a private copy, and let the child install its own arena.
void private_after_fork() {
  SharedArena* arena = the_arena.load(std::memory_order_acquire);
  if (arena == nullptr) return;
  void* base = reinterpret_cast<void*>(arena->base());
  [[maybe_unused]] void* p = ::mmap(base, SharedArena::reserved_bytes, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_FIXED | MAP_NORESERVE, arena->fd(), 0);
  the_arena.store(nullptr, std::memory_order_release);  // the parent's bookkeeping is not ours
}

}  // namespace

SharedArena& SharedArena::install() {
  std::lock_guard lock(install_mutex);
  if (SharedArena* a = installed()) return *a;
  const int fd = ::memfd_create("taihu-arena", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  require(fd >= 0, "shared arena: memfd_create failed: {}", std::strerror(errno));
  // Sealed at its size: no one (this process included) can shrink it under
  // a reader's mapping, which would make the reader's loads fault (SIGBUS).
  if (::ftruncate(fd, static_cast<off_t>(reserved_bytes)) != 0 ||
      ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const int e = errno;
    ::close(fd);
    raise("shared arena: cannot reserve and seal {} GB: {}", reserved_bytes >> 30, std::strerror(e));
  }
  void* p = ::mmap(nullptr, reserved_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    ::close(fd);
    raise("shared arena: cannot map it: {}", std::strerror(e));
  }
  ::madvise(p, reserved_bytes, MADV_DONTDUMP);  // a core dump would be as large as the reservation
  // Lives as long as the process: buffers from it may be freed at any time, even at exit.
  auto* arena = new SharedArena(fd, static_cast<char*>(p));
  static const bool fork_handler = [] { return ::pthread_atfork(nullptr, nullptr, private_after_fork) == 0; }();
  (void)fork_handler;
  the_arena.store(arena, std::memory_order_release);
  return *arena;
}

SharedArena::~SharedArena() {
  ::munmap(base_, reserved_bytes);
  ::close(fd_);
}

void* SharedArena::allocate(std::size_t bytes) {
  const std::size_t n = round_up(std::max<std::size_t>(bytes, 1));
  std::lock_guard lock(mutex_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < n) continue;
    const std::size_t offset = it->first, rest = it->second - n;
    free_.erase(it);
    if (rest > 0) free_.emplace(offset + n, rest);
    used_ += n;
    return base_ + offset;
  }
  if (n > reserved_bytes - top_) return nullptr;
  const std::size_t offset = top_;
  top_ += n;
  used_ += n;
  return base_ + offset;
}

void SharedArena::release(void* p, std::size_t bytes) {
  const std::size_t n = round_up(std::max<std::size_t>(bytes, 1));
  std::size_t offset = static_cast<std::size_t>(static_cast<char*>(p) - base_), size = n;
  std::lock_guard lock(mutex_);
  used_ -= n;
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == offset + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  if (offset + size == top_) {
    top_ = offset;  // the end of the used range moves back; its pages are reused first
  } else {
    free_.emplace(offset, size);
  }
}

std::size_t SharedArena::used_bytes() const {
  std::lock_guard lock(mutex_);
  return used_;
}

std::unique_ptr<ArenaView> ArenaView::open(std::uint32_t pid, std::uint32_t fd, std::uint64_t base) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const int local = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  require(local >= 0, "shared arena: cannot open {}: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(local, &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::size_t>(st.st_size) != SharedArena::reserved_bytes) {
    ::close(local);
    raise("shared arena: {} is not an arena", path);
  }
  if (!sealed_at_size(local)) {
    ::close(local);
    raise("shared arena: {} is not sealed against shrinking (a reader could fault)", path);
  }
  void* p = ::mmap(nullptr, SharedArena::reserved_bytes, PROT_READ, MAP_SHARED | MAP_NORESERVE, local, 0);
  ::close(local);  // the mapping keeps it
  require(p != MAP_FAILED, "shared arena: cannot map {}: {}", path, std::strerror(errno));
  ::madvise(p, SharedArena::reserved_bytes, MADV_DONTDUMP);
  return std::unique_ptr<ArenaView>(new ArenaView(static_cast<const char*>(p), base));
}

ArenaView::~ArenaView() { ::munmap(const_cast<char*>(data_), SharedArena::reserved_bytes); }

const void* ArenaView::at(std::uint64_t address, std::uint64_t bytes) const {
  if (address < base_) return nullptr;
  const std::uint64_t offset = address - base_;
  if (offset > SharedArena::reserved_bytes || bytes > SharedArena::reserved_bytes - offset) return nullptr;
  return data_ + offset;
}

}  // namespace taihu::transport
