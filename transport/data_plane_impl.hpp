#pragma once
// The data plane's inside (transport/data_plane.hpp), shared by the files
// that implement it, one concern each:
//   data_plane.cpp            the public calls, start and stop, remote reads
//   data_plane_connect.cpp    the client's side of a connection's handshake
//   data_plane_handshake.cpp  the server's side: hello, proof, probe, TLS
//   data_plane_inbound.cpp    framing and routing of what a connection brings
//   data_plane_outbound.cpp   writing frames, same-host channels, their acks
// Private to transport/: nothing outside these files includes it.

#include <asio.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "transport/crypto.hpp"
#include "transport/data_plane.hpp"
#include "transport/listener.hpp"
#include "transport/log_limiter.hpp"
#include "transport/proofs.hpp"
#include "transport/shared_arena.hpp"
#include "transport/shm_channel.hpp"
#include "transport/stream.hpp"

namespace taihu::transport {
namespace data_plane_detail {

using tcp = asio::ip::tcp;

inline Nonce fresh_nonce() {
  Nonce n;
  random_bytes(n);
  return n;
}

inline std::string endpoint_text(const tcp::socket& socket) {
  asio::error_code ec;
  const auto ep = socket.remote_endpoint(ec);
  return ec ? std::string("?") : fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

inline std::string_view mode_text(std::uint32_t wire) {
  const auto mode = tls_mode_of(wire);
  return mode ? tls_mode_name(*mode) : std::string_view("unknown");
}

inline std::string_view reason_text(std::uint32_t reason) {
  switch (static_cast<RefuseReason>(reason)) {
    case RefuseReason::version: return "protocol version mismatch";
    case RefuseReason::authentication: return "wrong cluster secret";
    case RefuseReason::malformed: return "malformed handshake";
    case RefuseReason::tls_mode: return "another TLS mode";
    case RefuseReason::certificate: return "no certificate where the cluster uses certificates";
  }
  return "unknown reason";
}

// Copies `bytes` bytes at `address` in process `pid` to `to`; an empty string
// on success, else why not.
inline std::string read_remote(std::uint32_t pid, std::uint64_t address, void* to, std::size_t bytes) {
  std::size_t done = 0;
  while (done < bytes) {
    iovec local{static_cast<char*>(to) + done, bytes - done};
    iovec remote{reinterpret_cast<void*>(address + done), bytes - done};
    const ssize_t n = ::process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0);
    if (n <= 0) return n < 0 ? std::strerror(errno) : std::string("no bytes read");
    done += static_cast<std::size_t>(n);
  }
  return {};
}

// One doorbell byte to a peer that is not polling its channel. A full socket
// buffer means bells are already waiting to be read, so a failure is harmless;
// a broken connection is noticed by the I/O thread.
inline void ring(int fd) {
  const char bell = 1;
  [[maybe_unused]] const ssize_t n = ::send(fd, &bell, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

struct Outgoing {
  ChunkHeader chunk;
  const char* data = nullptr;
  std::size_t bytes = 0;
  std::size_t sent = 0;
  std::shared_ptr<const void> keep_alive;
};

}  // namespace data_plane_detail

using data_plane_detail::Outgoing;
using data_plane_detail::tcp;

struct RemoteMessage::State {
  std::uint32_t pid = 0;
  std::uint64_t address = 0;
  std::size_t bytes = 0;
  int sender = -1;
  const char* mapped = nullptr;      // the bytes, readable here (the sender's arena), or null
  std::shared_ptr<ArenaView> arena;  // keeps that mapping
  std::function<void()> release;     // acknowledges the message
  // Tells the sink that the sender has gone, before read() throws: the
  // failure is the sender's, and whoever hears of the reader's error next
  // must already know whose it is.
  std::function<void(const std::string&)> unreadable;

  ~State() {
    if (release) release();
  }
};

struct DataPlane::Impl : std::enable_shared_from_this<DataPlane::Impl> {
  DataPlaneOptions options;
  FrameSink* sink;
  std::mutex sink_mutex;  // sink_open, and calls to the sink from outside the I/O thread
  bool sink_open = true;  // until stop()
  asio::io_context io;
  std::shared_ptr<Listener> listener;
  std::thread thread;
  LogLimiter refusal_log;  // strangers can trigger refusals at will
  std::unique_ptr<TlsContext> tls_client, tls_server;  // unless options.tls is off

  struct Stats {
    std::atomic<std::uint64_t> bytes_sent{0}, bytes_received{0}, messages_sent{0}, messages_received{0},
        messages_read_remotely{0}, messages_polled{0}, doorbells_sent{0}, accepted{0}, tls_connections{0},
        refused_version{0}, refused_secret{0}, refused_garbage{0}, refused_tls{0};
  } stats;

  // A connection this node sends on (client side).
  struct Outbound {
    explicit Outbound(asio::io_context& io) : stream(io), overflow_timer(io) {}
    Stream stream;
    int node = -1;
    std::deque<Outgoing> queue;
    bool writing = false;
    bool lost = false;
    FrameHeader header;  // of the part being written
    RemoteSpan span;     // of the Remote frame being written
    bool remote_reads = false;  // the server reads large messages from this process's memory
    // Remote frames not yet acknowledged, by number: their memory and size.
    // They count as sent once acknowledged (the memory is no longer needed).
    std::map<std::uint64_t, std::pair<std::shared_ptr<const void>, std::size_t>> awaiting_ack;
    std::uint64_t remote_frames = 0;  // numbers the next Remote frame
    std::uint64_t ack = 0;            // being read
    // Same-host channel: messages go as descriptors in its ring, acks come
    // back through it; the socket carries doorbells only (never TLS, whose
    // records the raw doorbell writes would break). channel_mutex
    // guards the ring's producer and ack consumer, awaiting_ack, overflow,
    // `lost` and the socket's descriptor (raw doorbell writes from senders).
    std::unique_ptr<ShmChannel> channel;
    std::mutex channel_mutex;
    std::deque<Outgoing> overflow;  // waiting for room in the ring, in order
    asio::steady_timer overflow_timer;  // I/O thread: retries the overflow
    bool overflow_timer_armed = false;
    std::array<char, 64> bells{};
  };
  mutable std::mutex mutex;  // guards outbound (the map; connections are touched on the I/O thread)
  std::map<int, std::shared_ptr<Outbound>> outbound;

  // A connection this node receives on (server side).
  struct Inbound {
    explicit Inbound(tcp::socket s) : stream(std::move(s)), timer(stream.socket().get_executor()) {}
    Listener::Ticket ticket;  // its place among the connections in the handshake (until authenticated)
    Stream stream;
    asio::steady_timer timer;
    std::string peer;  // address, for logs
    int node = -1;     // once authenticated
    bool ready = false;  // probed, and TLS if any established: frames may come
    Hello hello;
    Nonce server_nonce{};
    Digest proof{};
    Digest probe_mac{}, answer_mac{};
    FrameHeader header;
    ChunkHeader message;  // the message being received
    Landing landing;
    std::uint64_t received = 0;
    std::uint64_t total = 0;
    RemoteSpan span;                     // of a Remote or Probe frame
    std::array<std::uint8_t, 32> token{};  // a Probe's bytes
    std::uint8_t probe_answer = 0;
    std::uint32_t probed_pid = 0;        // the process it proved readable: the only one read (0: none)
    std::uint64_t remote_frames = 0;      // numbers the next Remote frame
    std::vector<std::uint64_t> acks_due;  // Remote frames consumed, not yet acknowledged
    bool writing_acks = false;
    std::vector<std::uint64_t> acks_writing;
    // Same-host channel (see Outbound). consume_mutex: one reader of the
    // message ring at a time (the I/O thread on a doorbell, or a poller);
    // ack_mutex: the ack ring's producer and the socket's descriptor.
    std::unique_ptr<ShmChannel> channel;
    std::shared_ptr<ArenaView> arena;  // the client's shared arena, mapped read-only
    std::mutex consume_mutex, ack_mutex;
    bool closed = false;  // written under ack_mutex, on the I/O thread (which reads it without)
    bool broken = false;  // under consume_mutex: the channel broke the protocol
    std::array<char, 64> bells{};
  };

  // The connections with a channel, for poll() and hold_polling().
  std::mutex channels_mutex;
  std::vector<std::shared_ptr<Inbound>> inbound_channels;
  std::vector<std::shared_ptr<Outbound>> outbound_channels;
  int holds = 0;  // hold_polling() count
  std::atomic<int> channel_count{0};

  Impl(DataPlaneOptions o, FrameSink* s) : options(std::move(o)), sink(s) {}

  class ClientHandshake;  // the client's side of a connection (data_plane_connect.cpp)

  // Whether a connection runs TLS, from this side's mode (the peer's is the
  // same: the handshake refuses another) and the probe's authenticated answer.
  bool uses_tls(bool channel) const {
    return options.tls == TlsMode::always || (options.tls == TlsMode::between_hosts && !channel);
  }

  void start();
  void stop();

  // A reader (any thread) could not read node's memory: the sink hears of it
  // as a lost peer, unless the plane has stopped (the sink may be gone).
  void report_unreadable(int node, const std::string& why);

  // A connection whose channel is open: polled and told whether this process polls.
  template <class Connection>
  void remember_in(std::vector<std::shared_ptr<Connection>>& list, const std::shared_ptr<Connection>& c,
                   std::atomic<std::uint32_t>& polling) {
    std::lock_guard lock(channels_mutex);
    polling.store(holds > 0 ? 1 : 0);
    list.push_back(c);
    ++channel_count;
  }
  void remember(const std::shared_ptr<Inbound>& in);
  void remember(const std::shared_ptr<Outbound>& out);

  template <class Connection>
  void forget_in(std::vector<std::shared_ptr<Connection>>& list, const std::shared_ptr<Connection>& c) {
    std::lock_guard lock(channels_mutex);
    auto it = std::find(list.begin(), list.end(), c);
    if (it == list.end()) return;
    list.erase(it);
    --channel_count;
  }
  void forget(const std::shared_ptr<Inbound>& in) { forget_in(inbound_channels, in); }
  void forget(const std::shared_ptr<Outbound>& out) { forget_in(outbound_channels, out); }

  // ------------------------------------------------------------------------
  // The server's side of the handshake (data_plane_handshake.cpp).
  void refuse(const std::shared_ptr<Inbound>& in, const std::string& why);
  void close(const std::shared_ptr<Inbound>& in);

  // Sends a Refuse (best effort), then closes.
  void send_refusal(const std::shared_ptr<Inbound>& in, RefuseReason reason, const std::string& why);
  void begin_handshake(const std::shared_ptr<Inbound>& in);
  void on_hello(const std::shared_ptr<Inbound>& in);
  void on_proof(const std::shared_ptr<Inbound>& in);

  // Every connection's first frame: the same-host probe and its MAC (pid 0:
  // the client offers no same-host reads).
  void read_probe(const std::shared_ptr<Inbound>& in);

  // Can this process read the client's memory? One authenticated byte
  // answers; then TLS, if this connection runs it.
  void answer_probe(const std::shared_ptr<Inbound>& in);
  void start_tls(const std::shared_ptr<Inbound>& in);

  // The connection is set up: frames (or, with a channel, doorbells) follow.
  void ready(const std::shared_ptr<Inbound>& in);

  // Sets in->probe_answer: 1 if this process can read the client's token
  // where its span says (same host and user), 2 if it also opened the
  // client's channel.
  void probe_same_host(const std::shared_ptr<Inbound>& in);

  // ------------------------------------------------------------------------
  // Framing and routing of what an inbound connection brings (data_plane_inbound.cpp).
  // Once per connection: a read still pending when another path closed it
  // (a protocol error found by a poller, posted here) completes afterwards,
  // aborted, and has nothing new to report.
  void lose_inbound(const std::shared_ptr<Inbound>& in, const std::string& why);
  void read_header(const std::shared_ptr<Inbound>& in);

  // TLS rejecting what the peer sent (an altered record) is a protocol
  // error; anything else means the connection is gone.
  void read_failed(const std::shared_ptr<Inbound>& in, const asio::error_code& ec, const char* closed);
  void protocol_error(const std::shared_ptr<Inbound>& in, const std::string& why);
  void on_header(const std::shared_ptr<Inbound>& in);
  void on_part(const std::shared_ptr<Inbound>& in);

  // A whole message in the sender's memory: copy it across, acknowledge it.
  void on_remote_header(const std::shared_ptr<Inbound>& in);

  // A message in the sender's memory (a Remote frame or a channel
  // descriptor): the sink reads it in place, or it is copied into the sink's
  // buffer now. `acknowledge` runs once the memory is no longer needed (on
  // any thread). Empty on success, else the protocol error.
  std::string take_remote_message(const std::shared_ptr<Inbound>& in, const ChunkHeader& chunk, std::uint32_t pid,
                                  std::uint64_t address, std::uint64_t bytes, std::function<void()> acknowledge);

  // The socket carries only doorbells now: each one says "look at the ring".
  void read_bells(const std::shared_ptr<Inbound>& in);

  // Takes the descriptors in the message ring. wait = false: give up if
  // another thread is at it. Returns how many were taken.
  std::size_t drain(const std::shared_ptr<Inbound>& in, bool wait, bool polled);

  // A channel message has been read (on any thread): tell the sender.
  void channel_ack(const std::shared_ptr<Inbound>& in, std::uint64_t number);

  // Once a Remote frame's bytes have been read (on any thread).
  void acknowledge(const std::shared_ptr<Inbound>& in, std::uint64_t number);
  void write_acks(const std::shared_ptr<Inbound>& in);

  // ------------------------------------------------------------------------
  // Sending: frames, same-host channels, acknowledgements (data_plane_outbound.cpp).
  // On the I/O thread (the only writer of `lost`). Every completion handler
  // of an outbound connection returns first thing once it is lost: a write
  // or read that completed before the loss still runs after it, possibly with
  // success, and the queue and acknowledgements it would touch are gone
  // (a write's handler took front() of the emptied queue, and its
  // pop_front() released a sent message's memory a second time).
  void lose_outbound(const std::shared_ptr<Outbound>& out, const std::string& why);

  // I/O thread: the server broke the channel's protocol.
  void outbound_protocol_error(const std::shared_ptr<Outbound>& out, const std::string& why);

  // Under out.channel_mutex: releases the memory of acknowledged messages.
  // Empty, else the protocol error.
  std::string reap_acks(Outbound& out);

  // Under out.channel_mutex: what the sender does whenever it looks at its
  // channel. Empty, else the protocol error.
  std::string reap_and_flush(Outbound& out);

  // Under out.channel_mutex: moves what fits from the overflow into the ring,
  // in order, and wakes the receiver if it is not polling.
  void flush_overflow(Outbound& out);

  // I/O thread: while messages wait for room in a full ring (the receiver
  // has not looked at 4096 of them), try again every millisecond.
  void retry_overflow(const std::shared_ptr<Outbound>& out);

  // The server writes only doorbells: acknowledgements wait in the ring.
  void watch_bells(const std::shared_ptr<Outbound>& out);

  // A message to a node with a channel, on the sender's thread.
  void send_by_channel(const std::shared_ptr<Outbound>& out, Outgoing m);

  // Under channels_mutex: what every channel holds now. wait = false (a
  // poller): skip a connection another thread is at.
  std::size_t poll_channels(bool wait);

  // Under channels_mutex.
  void set_polling(std::uint32_t value);
  void write_next(const std::shared_ptr<Outbound>& out);

  // The message's header and where its bytes are; the server reads them itself.
  void write_remote(const std::shared_ptr<Outbound>& out);

  // After the handshake the server only writes acknowledgements of Remote
  // frames; anything else, or the end of the stream, means the connection is
  // gone (or the server broke the protocol).
  void watch(const std::shared_ptr<Outbound>& out);
};

}  // namespace taihu::transport
