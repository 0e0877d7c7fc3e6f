#pragma once
// The data plane: direct TCP connections between nodes that carry tensor
// chunks, on standalone Asio (one I/O thread per node).
//
// Every node listens; a node that sends to another connects to it (one
// connection per direction, so no tie-breaking) and proves it holds the
// cluster secret in a challenge-response handshake (transport/wire.hpp)
// before any byte of data is accepted. A client with the wrong secret, another
// protocol version or garbage bytes is refused with a log line and counted;
// the listener keeps accepting.
//
// Then TLS 1.3 (transport/tls.hpp), with a key derived from the secret and
// the handshake's nonces: every frame, part and acknowledgement of the
// connection goes through it, so a reader on the path sees ciphertext and an
// altered byte ends the connection as a protocol error. Which connections
// run TLS is DataPlaneOptions::tls: by default those without a same-host
// channel (below), whose peers could read this process's memory anyway.
//
// No extra copies: send() gathers a frame header and the caller's memory into
// one write (the caller keeps the memory alive through `keep_alive` until the
// write completes, and must not modify it meanwhile); the receiver asks its
// FrameSink where a message should land and reads the bytes straight there.
// Between processes of one host and user, large messages skip the socket:
// the receiver copies them straight out of the sender's memory, ideally
// where it consumes them (FrameSink::take_remote), so they are copied once;
// `keep_alive` is then held until the receiver acknowledges. Buffers in the
// sender's shared arena (transport/shared_arena.hpp; the data plane
// installs it) are read with plain loads from a read-only mapping of it.
// Messages larger than part_bytes go as several frames (bounded writes, so
// one connection cannot monopolise the I/O thread).
//
// Latency between processes of one host: each connection there also gets a
// shared-memory channel (transport/shm_channel.hpp) that carries the
// message descriptors and acknowledgements. A thread of the receiving
// process that expects a message soon (a shard in the middle of a
// collective) can hold_polling() and poll() for it itself: then nothing
// passes through a socket or wakes a thread, as in MPI's shared-memory
// transport. A process that does not poll is woken by a doorbell byte on the
// socket, and its I/O thread takes the message as before.
//
// Plain C++: no CAF. The CAF side (actors/chunk_link/chunk_link.hpp) plugs in a
// FrameSink that turns messages into msg::Chunk for the local shard actors.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "transport/chunk_transport.hpp"
#include "transport/net_error.hpp"
#include "transport/tls.hpp"
#include "transport/wire.hpp"
#include "core/common/error.hpp"

namespace taihu::transport {

// Where an incoming message's bytes go: `data` is writable for the message's
// length and stays valid while `owner` lives.
struct Landing {
  void* data = nullptr;
  std::shared_ptr<void> owner;
};

// A message that is still in the sender's memory (same host and user): read()
// copies any part of it from there, from any thread. When the last copy of
// the handle is gone, the sender is told it may release the memory; a reader
// must therefore finish before dropping it.
class RemoteMessage {
 public:
  struct State;
  RemoteMessage() = default;  // none (assigning it releases a held message)
  explicit RemoteMessage(std::shared_ptr<State> state) : state_(std::move(state)) {}

  std::size_t bytes() const;
  // The bytes themselves when they are readable here (the sender's shared
  // arena, mapped: transport/shared_arena.hpp), valid while this handle
  // lives; else null.
  const void* data() const;
  // Copies bytes [offset, offset + n) to `to`; throws NetError naming the
  // sender when its memory cannot be read (it has gone), after telling the
  // sink (FrameSink::peer_lost) that the sender is lost.
  void read(std::size_t offset, std::size_t n, void* to) const;

 private:
  std::shared_ptr<State> state_;
};

// Called on the data plane's I/O thread, or on a thread in DataPlane::poll(),
// for one connection at a time but for several connections at once: keep it
// short (hand off, do not block) and thread-safe.
class FrameSink {
 public:
  virtual ~FrameSink() = default;
  // A message of `bytes` bytes from node `from` begins; data == nullptr refuses it
  // (the connection is then closed as a protocol error).
  virtual Landing land(int from, const ChunkHeader& header, std::size_t bytes) = 0;
  // Its bytes are all in landing.data.
  virtual void deliver(int from, const ChunkHeader& header, Landing landing) = 0;
  // A same-host message left where it is, for the consumer to read in place
  // (one copy, made where and when the bytes are needed). false: the sink
  // does not take it, and the data plane copies it into land()'s buffer.
  virtual bool take_remote(int from, const ChunkHeader& header, RemoteMessage message) { return false; }
  // A connection to or from an authenticated node failed or closed, or a
  // message left in its memory could not be read (then on the reader's thread).
  virtual void peer_lost(int node, const std::string& reason) {}
};

struct DataPlaneOptions {
  int node = 0;                            // this node's index, told to servers
  std::string secret;                      // the cluster secret (read_secret_file)
  std::string listen_address = "127.0.0.1";
  std::uint16_t port = 0;                  // 0: any free port
  std::size_t part_bytes = 8u << 20;       // largest frame this side sends
  std::size_t max_part_bytes = 64u << 20;  // largest frame it accepts
  std::uint64_t max_message_bytes = std::uint64_t{1} << 34;
  std::chrono::milliseconds handshake_timeout{5000};
  // Inbound connections in the handshake at once; beyond it a connection is
  // closed when accepted (transport/listener.hpp). Authenticated ones do
  // not count.
  std::size_t max_pending = 64;
  std::uint32_t version = protocol_version;  // tests speak other versions
  // Messages of at least this many bytes to a peer that can read this
  // process's memory (same host and user) go as one remote read instead of
  // through the socket (wire.hpp); 0 = never.
  std::size_t remote_read_min_bytes = 64u << 10;
  // Whether same-host connections get a shared-memory channel (needs
  // remote_read_min_bytes > 0); with one, messages of every size go through it.
  bool same_host_channel = true;
  // How long a waiting shard polls the channels before it sleeps until a
  // doorbell wakes its process (actors/chunk_link/chunk_link.hpp); 0 = never polls.
  std::chrono::microseconds poll_budget{1000};
  // Which connections run TLS (tls.hpp); both ends of a connection must
  // agree. always: same-host channels and reads are off, every byte goes
  // through TLS. off: plaintext, with a warning in the log.
  TlsMode tls = TlsMode::between_hosts;
  // Given: TLS connections authenticate by certificates instead of the
  // pre-shared key (tls.hpp); every node of a cluster then has its own.
  TlsCertificates certificates;
};

struct DataPlaneStats {
  std::uint64_t bytes_sent = 0;  // payload bytes (read remotely: once the receiver has them)
  std::uint64_t bytes_received = 0;
  std::uint64_t messages_sent = 0;
  std::uint64_t messages_received = 0;
  std::uint64_t messages_read_remotely = 0;  // received by a same-host remote read
  std::uint64_t messages_polled = 0;         // of those, taken from a channel by poll()
  std::uint64_t doorbells_sent = 0;          // wake-ups of a peer that was not polling
  std::uint64_t accepted = 0;  // authenticated inbound connections
  std::uint64_t tls_connections = 0;  // connections (inbound and outbound) that run TLS
  std::uint64_t refused_version = 0;
  std::uint64_t refused_secret = 0;
  std::uint64_t refused_garbage = 0;  // not a taihu client, or timed out in the handshake
  std::uint64_t refused_tls = 0;      // another TLS mode, or an authenticated client that failed the TLS handshake
};

class DataPlane final : public ChunkTransport {
 public:
  // Starts listening and the I/O thread. `sink` must outlive the data plane.
  DataPlane(DataPlaneOptions options, FrameSink* sink);
  ~DataPlane() override;
  DataPlane(const DataPlane&) = delete;
  DataPlane& operator=(const DataPlane&) = delete;

  std::uint16_t port() const;
  int node() const;

  // Opens the connection for sending to `node` and runs the handshake; blocks
  // until it is done. Throws NetError naming the reason (refused secret or
  // version, no answer within the handshake timeout, connection refused).
  void connect(int node, const std::string& host, std::uint16_t port);
  bool connected(int node) const;

  // Queues one message to `node` (connect first); returns at once. The bytes
  // are read from `data` while the write runs: keep them alive and unchanged
  // through `keep_alive` (released on the I/O thread when written). Messages
  // to one node arrive in the order sent. Throws NetError if `node` has no
  // connection or lost it.
  void send(int node, const ChunkHeader& header, const void* data, std::size_t bytes,
            std::shared_ptr<const void> keep_alive) override;

  DataPlaneStats stats() const;

  // Same-host channels (see the top): how many connections have one.
  int channels() const override;
  // Takes what the channels hold now, on the calling thread: messages for
  // this node go to the sink, acknowledged memory is released. Returns the
  // number of messages taken (0 also when another thread is polling).
  std::size_t poll() override;
  // While held (counted, from any thread), peers skip the doorbell: a thread
  // here promises to poll() soon. The last release takes what has arrived.
  void hold_polling(bool hold) override;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace taihu::transport
