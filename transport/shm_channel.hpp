#pragma once
// A same-host side channel of one data-plane connection: two single-producer
// single-consumer rings in a shared memory segment, so that a message's
// descriptor (where its bytes are in the sender's memory) and, back, its
// acknowledgement pass between the processes without a system call or a
// thread wake-up when the other side is polling for them.
//
// The connecting side (the sender of messages) creates the segment (a memfd)
// and names it in its same-host probe; the server opens it through
// /proc/<pid>/fd/<fd>, which the kernel allows only to a process of the same
// user, like the process_vm_readv the probe has just tested. Each side treats
// what the other writes as untrusted: indices are checked, and a descriptor's
// fields are checked by the data plane before use. The segment's header also
// names the sender's shared arena, which the receiver maps to read messages
// in place (transport/shared_arena.hpp).
//
// Doorbells: each ring has a `polling` word, set by its consumer while some
// thread of that process polls it, and a `bell` word the producer sets when
// it had to wake the consumer (with one byte over the connection's socket).
// Producer: push; fence; if !polling and bell was clear, ring. Consumer, before
// it stops looking (clears polling) or after it heard a bell (clears bell):
// clear; fence; drain. With the fences one of the two always sees the other.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "transport/wire.hpp"

namespace taihu::transport {

// A message left in the sender's memory.
struct MessageDescriptor {
  ChunkHeader chunk;
  std::uint64_t address = 0;  // in the sending process
  std::uint64_t bytes = 0;
  std::uint64_t number = 0;   // acknowledged with this number
  std::uint64_t reserved = 0;
};
static_assert(sizeof(MessageDescriptor) == 64);

class ShmChannel {
 public:
  static constexpr std::uint32_t message_slots = 4096;
  static constexpr std::uint32_t ack_slots = 16384;

  // A fresh segment (the sending side). Throws NetError.
  static std::unique_ptr<ShmChannel> create();
  // The segment that process `pid` created as its descriptor `fd` (the
  // receiving side). Throws NetError when it cannot be opened or is not one.
  static std::unique_ptr<ShmChannel> open(std::uint32_t pid, std::uint32_t fd);

  ~ShmChannel();
  ShmChannel(const ShmChannel&) = delete;
  ShmChannel& operator=(const ShmChannel&) = delete;

  // The creator's descriptor of the segment (-1 on the opening side).
  int fd() const { return fd_; }

  // Sender: false when the ring is full. One producer at a time.
  bool push_message(const MessageDescriptor& m);
  // Receiver: the next descriptor, or none; nullopt and *corrupt = true when
  // the sender's indices are impossible. One consumer at a time.
  std::optional<MessageDescriptor> pop_message(bool* corrupt);
  // Receiver: false when full. One producer at a time.
  bool push_ack(std::uint64_t number);
  // Sender: the next acknowledged number, or none (corrupt as above).
  std::optional<std::uint64_t> pop_ack(bool* corrupt);

  // The sender's shared arena (transport/shared_arena.hpp), announced in
  // the segment before the probe: its descriptor in the sender and where
  // it is mapped there. None: fd < 0.
  void announce_arena(int fd, std::uint64_t base);
  struct ArenaInfo {
    int fd = -1;
    std::uint64_t base = 0;
  };
  ArenaInfo arena() const;

  // The doorbell words (see above).
  std::atomic<std::uint32_t>& receiver_polling();
  std::atomic<std::uint32_t>& message_bell();
  std::atomic<std::uint32_t>& sender_polling();
  std::atomic<std::uint32_t>& ack_bell();

  struct Layout;

 private:
  ShmChannel(int fd, Layout* layout) : fd_(fd), layout_(layout) {}
  int fd_ = -1;
  Layout* layout_ = nullptr;
};

// Producer side of a doorbell: after a push, should the consumer be woken?
// (True at most once until the consumer clears the bell.)
bool needs_bell(std::atomic<std::uint32_t>& polling, std::atomic<std::uint32_t>& bell);

}  // namespace taihu::transport
