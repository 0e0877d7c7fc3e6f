#include "transport/shm_channel.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "transport/net_error.hpp"
#include "transport/shared_arena.hpp"
#include "core/common/check.hpp"

namespace taihu::transport {

namespace {

constexpr std::uint64_t layout_magic = 0x4c4e414843554854;  // "THUCHANL"
constexpr std::uint32_t layout_version = 2;

// An index on a cache line of its own: producer and consumer do not share lines.
struct alignas(64) Index {
  std::atomic<std::uint64_t> value{0};
};

struct alignas(64) Flags {
  std::atomic<std::uint32_t> polling{0};
  std::atomic<std::uint32_t> bell{0};
};

}  // namespace

struct ShmChannel::Layout {
  std::uint64_t magic = layout_magic;
  std::uint32_t version = layout_version;
  std::uint32_t messages = message_slots;
  std::uint32_t acks = ack_slots;
  std::uint32_t arena_fd = 0;  // + 1; 0: none
  std::uint64_t arena_base = 0;
  Index message_head, message_tail, ack_head, ack_tail;
  Flags receiver, sender;  // receiver: polls messages; sender: polls acks
  MessageDescriptor message[message_slots];
  std::uint64_t ack[ack_slots];
};

static_assert(std::atomic<std::uint64_t>::is_always_lock_free && std::atomic<std::uint32_t>::is_always_lock_free,
              "shared-memory rings need address-free (lock-free) atomics");

std::unique_ptr<ShmChannel> ShmChannel::create() {
  const int fd = ::memfd_create("taihu-channel", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  require<NetError>(fd >= 0, "same-host channel: memfd_create failed: {}", std::strerror(errno));
  // Sealed at its size, so that neither side's loads can fault (SIGBUS).
  if (::ftruncate(fd, sizeof(Layout)) != 0 ||
      ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const int e = errno;
    ::close(fd);
    raise<NetError>("same-host channel: cannot size and seal the segment: {}", std::strerror(e));
  }
  void* p = ::mmap(nullptr, sizeof(Layout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    ::close(fd);
    raise<NetError>("same-host channel: cannot map the segment: {}", std::strerror(e));
  }
  auto* layout = new (p) Layout{};
  return std::unique_ptr<ShmChannel>(new ShmChannel(fd, layout));
}

std::unique_ptr<ShmChannel> ShmChannel::open(std::uint32_t pid, std::uint32_t fd) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const int local = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  require<NetError>(local >= 0, "same-host channel: cannot open {}: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(local, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) != sizeof(Layout) ||
      !sealed_at_size(local)) {
    ::close(local);
    raise<NetError>("same-host channel: {} is not a channel segment (of its size, sealed at it)", path);
  }
  void* p = ::mmap(nullptr, sizeof(Layout), PROT_READ | PROT_WRITE, MAP_SHARED, local, 0);
  ::close(local);  // the mapping keeps the segment
  require<NetError>(p != MAP_FAILED, "same-host channel: cannot map {}: {}", path, std::strerror(errno));
  auto* layout = static_cast<Layout*>(p);
  if (layout->magic != layout_magic || layout->version != layout_version || layout->messages != message_slots ||
      layout->acks != ack_slots) {
    ::munmap(p, sizeof(Layout));
    raise<NetError>("same-host channel: {} has another layout", path);
  }
  return std::unique_ptr<ShmChannel>(new ShmChannel(-1, layout));
}

ShmChannel::~ShmChannel() {
  ::munmap(layout_, sizeof(Layout));
  if (fd_ >= 0) ::close(fd_);
}

namespace {

template <class T, std::uint32_t N>
bool push(Index& head, Index& tail, T (&slots)[N], const T& value) {
  const std::uint64_t t = tail.value.load(std::memory_order_relaxed);
  const std::uint64_t h = head.value.load(std::memory_order_acquire);
  if (t - h >= N) return false;  // full (or the consumer wrote nonsense: as good as full)
  slots[t % N] = value;
  tail.value.store(t + 1, std::memory_order_release);
  return true;
}

template <class T, std::uint32_t N>
std::optional<T> pop(Index& head, Index& tail, T (&slots)[N], bool* corrupt) {
  const std::uint64_t h = head.value.load(std::memory_order_relaxed);
  const std::uint64_t t = tail.value.load(std::memory_order_acquire);
  if (t == h) return std::nullopt;
  if (t - h > N) {
    *corrupt = true;
    return std::nullopt;
  }
  T value = slots[h % N];
  head.value.store(h + 1, std::memory_order_release);
  return value;
}

}  // namespace

bool ShmChannel::push_message(const MessageDescriptor& m) {
  return push(layout_->message_head, layout_->message_tail, layout_->message, m);
}

std::optional<MessageDescriptor> ShmChannel::pop_message(bool* corrupt) {
  return pop(layout_->message_head, layout_->message_tail, layout_->message, corrupt);
}

bool ShmChannel::push_ack(std::uint64_t number) {
  return push(layout_->ack_head, layout_->ack_tail, layout_->ack, number);
}

std::optional<std::uint64_t> ShmChannel::pop_ack(bool* corrupt) {
  return pop(layout_->ack_head, layout_->ack_tail, layout_->ack, corrupt);
}

void ShmChannel::announce_arena(int fd, std::uint64_t base) {
  layout_->arena_fd = fd < 0 ? 0 : static_cast<std::uint32_t>(fd) + 1;
  layout_->arena_base = base;
}

ShmChannel::ArenaInfo ShmChannel::arena() const {
  const std::uint32_t fd = layout_->arena_fd;
  if (fd == 0) return {};
  return {static_cast<int>(fd - 1), layout_->arena_base};
}

std::atomic<std::uint32_t>& ShmChannel::receiver_polling() { return layout_->receiver.polling; }
std::atomic<std::uint32_t>& ShmChannel::message_bell() { return layout_->receiver.bell; }
std::atomic<std::uint32_t>& ShmChannel::sender_polling() { return layout_->sender.polling; }
std::atomic<std::uint32_t>& ShmChannel::ack_bell() { return layout_->sender.bell; }

bool needs_bell(std::atomic<std::uint32_t>& polling, std::atomic<std::uint32_t>& bell) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (polling.load(std::memory_order_seq_cst) != 0) return false;
  return bell.exchange(1, std::memory_order_seq_cst) == 0;
}

}  // namespace taihu::transport
