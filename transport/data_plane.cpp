#include "transport/data_plane.hpp"

#include <asio.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "transport/addresses.hpp"
#include "transport/listener.hpp"
#include "transport/log_limiter.hpp"
#include "transport/crypto.hpp"
#include "transport/proofs.hpp"
#include "transport/stream.hpp"
#include "transport/shm_channel.hpp"
#include "transport/shared_arena.hpp"
#include "core/common/check.hpp"

namespace taihu::transport {
namespace {

using asio::ip::tcp;

Nonce fresh_nonce() {
  Nonce n;
  random_bytes(n);
  return n;
}

std::string endpoint_text(const tcp::socket& socket) {
  asio::error_code ec;
  const auto ep = socket.remote_endpoint(ec);
  return ec ? std::string("?") : fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

std::string_view mode_text(std::uint32_t wire) {
  const auto mode = tls_mode_of(wire);
  return mode ? tls_mode_name(*mode) : std::string_view("unknown");
}

std::string_view reason_text(std::uint32_t reason) {
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
std::string read_remote(std::uint32_t pid, std::uint64_t address, void* to, std::size_t bytes) {
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
void ring(int fd) {
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

}  // namespace

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

  // Whether a connection runs TLS, from this side's mode (the peer's is the
  // same: the handshake refuses another) and the probe's authenticated answer.
  bool uses_tls(bool channel) const {
    return options.tls == TlsMode::always || (options.tls == TlsMode::between_hosts && !channel);
  }

  void start() {
    if (options.tls != TlsMode::off) {
      tls_client = std::make_unique<TlsContext>(TlsContext::Role::client, options.certificates);
      tls_server = std::make_unique<TlsContext>(TlsContext::Role::server, options.certificates);
    }
    ListenerOptions lo;
    lo.what = fmt::format("data plane node {}", options.node);
    lo.address = options.listen_address;
    lo.port = options.port;
    lo.max_open = options.max_pending;
    listener = std::make_shared<Listener>(io, lo, [this](tcp::socket socket, Listener::Ticket ticket) {
      auto in = std::make_shared<Inbound>(std::move(socket));
      in->ticket = std::move(ticket);
      in->ticket->evict = [this, weak = std::weak_ptr<Inbound>(in)] {
        if (auto i = weak.lock()) close(i);
      };
      in->peer = endpoint_text(in->stream.socket());
      asio::error_code ignored;
      in->stream.socket().set_option(tcp::no_delay(true), ignored);
      begin_handshake(in);
    });
    listener->start();
    thread = std::thread([self = shared_from_this()] {
      for (;;) {
        try {
          self->io.run();
          return;
        } catch (const std::exception& e) {
          spdlog::error("data plane node {}: I/O thread: {}", self->options.node, e.what());
        }
      }
    });
  }

  void stop() {
    io.stop();
    if (thread.joinable()) thread.join();
    std::lock_guard lock(sink_mutex);
    sink_open = false;
  }

  // A reader (any thread) could not read node's memory: the sink hears of it
  // as a lost peer, unless the plane has stopped (the sink may be gone).
  void report_unreadable(int node, const std::string& why) {
    std::lock_guard lock(sink_mutex);
    if (sink_open) sink->peer_lost(node, why);
  }

  // --- server side ---------------------------------------------------------

  void refuse(const std::shared_ptr<Inbound>& in, const std::string& why) {
    refusal_log.warn("data plane node {}: refused connection from {}: {}", options.node, in->peer, why);
    close(in);
  }

  void close(const std::shared_ptr<Inbound>& in) {
    in->timer.cancel();
    std::lock_guard lock(in->ack_mutex);  // no doorbell write on a closed descriptor
    in->closed = true;
    in->stream.close();
  }

  // Sends a Refuse (best effort), then closes.
  void send_refusal(const std::shared_ptr<Inbound>& in, RefuseReason reason, const std::string& why) {
    auto refusal = std::make_shared<Hello>();
    refusal->version = options.version;
    refusal->kind = 1;
    refusal->detail = static_cast<std::uint32_t>(reason);
    refusal_log.warn("data plane node {}: refused connection from {}: {}", options.node, in->peer, why);
    in->stream.async_write(asio::buffer(refusal.get(), sizeof(Hello)),
                           [this, in, refusal](const asio::error_code&, std::size_t) { close(in); });
  }

  void begin_handshake(const std::shared_ptr<Inbound>& in) {
    in->timer.expires_after(options.handshake_timeout);
    in->timer.async_wait([this, in](const asio::error_code& ec) {
      if (ec || in->ready) return;
      ++(in->stream.secure() ? stats.refused_tls : stats.refused_garbage);
      refuse(in, fmt::format("no complete {}handshake within {} ms", in->stream.secure() ? "TLS " : "",
                             options.handshake_timeout.count()));
    });
    // The magic first, so that a short stranger (an HTTP request) is told off at once.
    auto* bytes = reinterpret_cast<char*>(&in->hello);
    auto on_error = [this, in](const asio::error_code& ec) {
      if (in->stream.socket().is_open()) {
        ++stats.refused_garbage;
        refuse(in, fmt::format("closed during the handshake ({})", ec.message()));
      }
    };
    in->stream.async_read(asio::buffer(bytes, hello_magic.size()),
                          [this, in, bytes, on_error](const asio::error_code& ec, std::size_t) {
                            if (ec) return on_error(ec);
                            if (in->hello.magic != hello_magic) {
                              ++stats.refused_garbage;
                              return refuse(in, "not a taihu data-plane client (garbage bytes)");
                            }
                            in->stream.async_read(
                                asio::buffer(bytes + hello_magic.size(), sizeof(Hello) - hello_magic.size()),
                                [this, in, on_error](const asio::error_code& ec, std::size_t) {
                                  if (ec) return on_error(ec);
                                  on_hello(in);
                                });
                          });
  }

  void on_hello(const std::shared_ptr<Inbound>& in) {
    const Hello& h = in->hello;
    if (h.magic != hello_magic || h.kind != 0) {
      ++stats.refused_garbage;
      refuse(in, "not a taihu data-plane client (garbage bytes)");
      return;
    }
    if (h.version != options.version) {
      ++stats.refused_version;
      send_refusal(in, RefuseReason::version,
                   fmt::format("node {} speaks protocol version {}, this node speaks {}", h.node, h.version,
                               options.version));
      return;
    }
    if (h.detail != static_cast<std::uint32_t>(options.tls)) {
      ++stats.refused_tls;
      send_refusal(in, RefuseReason::tls_mode,
                   fmt::format("node {} uses tls = {}, this node tls = {} (every node needs the same [cluster] tls)",
                               h.node, mode_text(h.detail), tls_mode_name(options.tls)));
      return;
    }
    in->server_nonce = fresh_nonce();
    auto challenge = std::make_shared<Hello>();
    challenge->version = options.version;
    challenge->node = options.node;
    challenge->detail = static_cast<std::uint32_t>(options.tls);
    challenge->nonce = in->server_nonce;
    in->stream.async_write(asio::buffer(challenge.get(), sizeof(Hello)),
                           [this, in, challenge](const asio::error_code& ec, std::size_t) {
                             if (ec) return close(in);
                             in->stream.async_read(asio::buffer(in->proof),
                                                   [this, in](const asio::error_code& ec2, std::size_t) {
                                                     if (ec2) {
                                                       if (in->stream.socket().is_open()) {
                                                         ++stats.refused_garbage;
                                                         refuse(in, "closed before proving the secret");
                                                       }
                                                       return;
                                                     }
                                                     on_proof(in);
                                                   });
                           });
  }

  void on_proof(const std::shared_ptr<Inbound>& in) {
    const Hello& h = in->hello;
    const Digest expected =
        handshake_proof(options.secret, "taihu-dp client", h.version, h.node, h.nonce, in->server_nonce);
    if (!equal_constant_time(expected, in->proof)) {
      ++stats.refused_secret;
      send_refusal(in, RefuseReason::authentication,
                   fmt::format("node {} does not hold the cluster secret", h.node));
      return;
    }
    auto welcome = std::make_shared<Digest>(
        handshake_proof(options.secret, "taihu-dp server", h.version, h.node, in->server_nonce, h.nonce));
    in->stream.async_write(asio::buffer(*welcome), [this, in, welcome](const asio::error_code& ec, std::size_t) {
      if (ec) return close(in);
      in->ticket.reset();  // authenticated: no longer counted among strangers
      in->node = in->hello.node;
      read_probe(in);
    });
  }

  // Every connection's first frame: the same-host probe and its MAC (pid 0:
  // the client offers no same-host reads).
  void read_probe(const std::shared_ptr<Inbound>& in) {
    in->stream.async_read(
        {asio::buffer(&in->header, sizeof(FrameHeader)), asio::buffer(&in->span, sizeof(RemoteSpan)),
         asio::buffer(in->token), asio::buffer(in->probe_mac)},
        [this, in](const asio::error_code& ec, std::size_t) {
          if (ec) {
            if (!in->stream.socket().is_open()) return;
            ++stats.refused_garbage;
            return refuse(in, fmt::format("node {} closed before its same-host probe", in->node));
          }
          if (in->header.magic != probe_frame_magic || in->header.total_bytes != in->token.size()) {
            ++stats.refused_garbage;
            return refuse(in, fmt::format("node {} sent no same-host probe after the handshake", in->node));
          }
          const Digest expected = probe_mac(options.secret, in->hello.version, in->hello.node, in->span, in->token,
                                            in->hello.nonce, in->server_nonce);
          if (!equal_constant_time(expected, in->probe_mac)) {
            ++stats.refused_secret;
            return refuse(in, fmt::format("node {}'s same-host probe is not authentic", in->node));
          }
          answer_probe(in);
        });
  }

  // Can this process read the client's memory? One authenticated byte
  // answers; then TLS, if this connection runs it.
  void answer_probe(const std::shared_ptr<Inbound>& in) {
    in->probe_answer = 0;
    if (in->span.pid != 0 && options.tls != TlsMode::always) probe_same_host(in);
    in->answer_mac = answer_mac(options.secret, in->hello.version, in->hello.node, in->probe_answer, in->server_nonce,
                                in->hello.nonce);
    in->stream.async_write({asio::buffer(&in->probe_answer, 1), asio::buffer(in->answer_mac)},
                           [this, in](const asio::error_code& ec, std::size_t) {
                             if (ec) return close(in);
                             if (uses_tls(in->channel != nullptr)) return start_tls(in);
                             ready(in);
                           });
  }

  void start_tls(const std::shared_ptr<Inbound>& in) {
    const TlsKey key = tls_key(Plane::data, options.secret, in->hello.nonce, in->server_nonce);
    in->stream.start_tls(*tls_server, key, [this, in](const asio::error_code& ec) {
      if (!ec) return ready(in);
      if (!in->stream.socket().is_open()) return;  // timed out, and refused for that
      ++stats.refused_tls;
      refuse(in, fmt::format("node {}: TLS handshake failed: {}", in->node, ec.message()));
    });
  }

  // The connection is set up: frames (or, with a channel, doorbells) follow.
  void ready(const std::shared_ptr<Inbound>& in) {
    in->timer.cancel();
    in->ready = true;
    ++stats.accepted;
    if (in->stream.secure()) ++stats.tls_connections;
    spdlog::debug("data plane node {}: node {} connected from {}{}", options.node, in->node, in->peer,
                  in->stream.secure() ? " (TLS)" : in->channel ? " (same-host channel)" : "");
    if (!in->channel) return read_header(in);
    remember(in);
    // A bell may have been skipped while no one listened: look once.
    drain(in, true, false);
    read_bells(in);
  }

  // Once per connection: a read still pending when another path closed it
  // (a protocol error found by a poller, posted here) completes afterwards,
  // aborted, and has nothing new to report.
  void lose_inbound(const std::shared_ptr<Inbound>& in, const std::string& why) {
    if (in->closed) return;
    close(in);
    if (in->channel) forget(in);
    sink->peer_lost(in->node, why);
  }

  // A connection whose channel is open: polled and told whether this process polls.
  template <class Connection>
  void remember_in(std::vector<std::shared_ptr<Connection>>& list, const std::shared_ptr<Connection>& c,
                   std::atomic<std::uint32_t>& polling) {
    std::lock_guard lock(channels_mutex);
    polling.store(holds > 0 ? 1 : 0);
    list.push_back(c);
    ++channel_count;
  }
  void remember(const std::shared_ptr<Inbound>& in) {
    remember_in(inbound_channels, in, in->channel->receiver_polling());
  }
  void remember(const std::shared_ptr<Outbound>& out) {
    remember_in(outbound_channels, out, out->channel->sender_polling());
  }

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

  void read_header(const std::shared_ptr<Inbound>& in) {
    in->stream.async_read(asio::buffer(&in->header, sizeof(FrameHeader)),
                          [this, in](const asio::error_code& ec, std::size_t) {
                            if (ec) return read_failed(in, ec, "connection closed");
                            on_header(in);
                          });
  }

  // TLS rejecting what the peer sent (an altered record) is a protocol
  // error; anything else means the connection is gone.
  void read_failed(const std::shared_ptr<Inbound>& in, const asio::error_code& ec, const char* closed) {
    if (is_tls_error(ec)) return protocol_error(in, "TLS: " + ec.message());
    lose_inbound(in, ec == asio::error::eof ? std::string(closed) : ec.message());
  }

  void protocol_error(const std::shared_ptr<Inbound>& in, const std::string& why) {
    spdlog::warn("data plane node {}: protocol error from node {} ({}): {}", options.node, in->node, in->peer, why);
    lose_inbound(in, "protocol error: " + why);
  }

  void on_header(const std::shared_ptr<Inbound>& in) {
    const FrameHeader& f = in->header;
    if (f.magic == remote_frame_magic) return on_remote_header(in);
    if (f.magic == probe_frame_magic) return protocol_error(in, "a second same-host probe");
    if (f.magic != frame_magic) return protocol_error(in, "bad frame magic");
    if (f.part_bytes > options.max_part_bytes) return protocol_error(in, fmt::format("frame of {} bytes", f.part_bytes));
    if (f.total_bytes > options.max_message_bytes)
      return protocol_error(in, fmt::format("message of {} bytes", f.total_bytes));
    if (f.part_offset > f.total_bytes || f.part_bytes > f.total_bytes - f.part_offset)
      return protocol_error(in, "frame outside its message");
    if (f.part_offset == 0) {
      if (in->received != in->total) return protocol_error(in, "new message before the last one ended");
      in->message = f.chunk;
      in->total = f.total_bytes;
      in->received = 0;
      in->landing = sink->land(in->node, f.chunk, f.total_bytes);
      if (in->landing.data == nullptr && f.total_bytes > 0) return protocol_error(in, "message refused by the receiver");
    } else if (f.part_offset != in->received || f.total_bytes != in->total ||
               std::memcmp(&f.chunk, &in->message, sizeof(ChunkHeader)) != 0) {
      return protocol_error(in, "frame does not continue its message");
    }
    if (f.part_bytes == 0) return on_part(in);
    in->stream.async_read(asio::buffer(static_cast<char*>(in->landing.data) + f.part_offset, f.part_bytes),
                          [this, in](const asio::error_code& ec, std::size_t) {
                            if (ec) return read_failed(in, ec, "connection closed mid-message");
                            on_part(in);
                          });
  }

  void on_part(const std::shared_ptr<Inbound>& in) {
    in->received += in->header.part_bytes;
    stats.bytes_received += in->header.part_bytes;
    if (in->received == in->total) {
      ++stats.messages_received;
      Landing landing = std::move(in->landing);
      in->landing = {};
      sink->deliver(in->node, in->message, std::move(landing));
    }
    read_header(in);
  }

  // A whole message in the sender's memory: copy it across, acknowledge it.
  void on_remote_header(const std::shared_ptr<Inbound>& in) {
    const FrameHeader& f = in->header;
    if (f.part_bytes != 0 || f.part_offset != 0) return protocol_error(in, "malformed remote frame");
    if (f.total_bytes > options.max_message_bytes)
      return protocol_error(in, fmt::format("message of {} bytes", f.total_bytes));
    if (in->received != in->total) return protocol_error(in, "new message before the last one ended");
    in->stream.async_read(asio::buffer(&in->span, sizeof(RemoteSpan)),
                     [this, in](const asio::error_code& ec, std::size_t) {
                       if (ec) return read_failed(in, ec, "connection closed mid-message");
                       const FrameHeader& f = in->header;
                       // The pid in the frame is the peer's word; only the one its
                       // probe proved (a process holding the probe's random bytes) is read.
                       if (in->probed_pid == 0)
                         return protocol_error(in, "a same-host frame on a connection without a successful probe");
                       if (in->span.pid != in->probed_pid)
                         return protocol_error(in, fmt::format("a same-host frame names process {}, the probe "
                                                               "established process {}",
                                                               in->span.pid, in->probed_pid));
                       const std::uint64_t number = in->remote_frames++;
                       const std::string error = take_remote_message(
                           in, f.chunk, in->probed_pid, in->span.address, f.total_bytes,
                           [plane = weak_from_this(), in, number] {
                             if (auto p = plane.lock()) p->acknowledge(in, number);
                           });
                       if (!error.empty()) return protocol_error(in, error);
                       read_header(in);
                     });
  }

  // A message in the sender's memory (a Remote frame or a channel
  // descriptor): the sink reads it in place, or it is copied into the sink's
  // buffer now. `acknowledge` runs once the memory is no longer needed (on
  // any thread). Empty on success, else the protocol error.
  std::string take_remote_message(const std::shared_ptr<Inbound>& in, const ChunkHeader& chunk, std::uint32_t pid,
                                  std::uint64_t address, std::uint64_t bytes, std::function<void()> acknowledge) {
    auto state = std::make_shared<RemoteMessage::State>();
    state->pid = pid;
    state->address = address;
    state->bytes = static_cast<std::size_t>(bytes);
    state->sender = in->node;
    if (in->arena) {
      state->mapped = static_cast<const char*>(in->arena->at(address, bytes));
      if (state->mapped) state->arena = in->arena;
    }
    state->release = std::move(acknowledge);
    state->unreadable = [plane = weak_from_this(), node = in->node](const std::string& why) {
      if (auto p = plane.lock()) p->report_unreadable(node, why);
    };
    stats.bytes_received += bytes;
    ++stats.messages_received;
    ++stats.messages_read_remotely;
    if (sink->take_remote(in->node, chunk, RemoteMessage(state))) return {};
    // The sink wants the bytes now, in its own buffer (a failure is a
    // protocol error of this connection, reported as such).
    state->unreadable = nullptr;
    Landing landing = sink->land(in->node, chunk, bytes);
    if (landing.data == nullptr && bytes > 0) return "message refused by the receiver";
    try {
      RemoteMessage(state).read(0, state->bytes, landing.data);
    } catch (const NetError& e) {
      return e.what();
    }
    state.reset();  // acknowledged here, before the sink hears of it
    sink->deliver(in->node, chunk, std::move(landing));
    return {};
  }

  // --- same-host channel, receiving side -------------------------------------

  // The socket carries only doorbells now: each one says "look at the ring".
  void read_bells(const std::shared_ptr<Inbound>& in) {
    in->stream.async_read_some(asio::buffer(in->bells), [this, in](const asio::error_code& ec, std::size_t n) {
      if (ec) return lose_inbound(in, ec == asio::error::eof ? std::string("connection closed") : ec.message());
      if (std::any_of(in->bells.begin(), in->bells.begin() + static_cast<std::ptrdiff_t>(n),
                      [](char b) { return b != 1; }))
        return protocol_error(in, "bytes other than doorbells on a channel connection");
      in->channel->message_bell().store(0, std::memory_order_seq_cst);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      drain(in, true, false);
      read_bells(in);
    });
  }

  // Takes the descriptors in the message ring. wait = false: give up if
  // another thread is at it. Returns how many were taken.
  std::size_t drain(const std::shared_ptr<Inbound>& in, bool wait, bool polled) {
    std::unique_lock lock(in->consume_mutex, std::defer_lock);
    if (wait) {
      lock.lock();
    } else if (!lock.try_lock()) {
      return 0;
    }
    std::size_t taken = 0;
    while (!in->broken) {
      bool corrupt = false;
      const auto m = in->channel->pop_message(&corrupt);
      std::string error;
      if (corrupt) {
        error = "impossible indices in the channel's message ring";
      } else if (!m) {
        break;
      } else if (m->number != in->remote_frames) {
        error = fmt::format("channel message number {}, expected {}", m->number, in->remote_frames);
      } else if (m->bytes > options.max_message_bytes) {
        error = fmt::format("message of {} bytes", m->bytes);
      } else {
        ++in->remote_frames;
        error = take_remote_message(in, m->chunk, in->probed_pid, m->address, m->bytes,
                                    [plane = weak_from_this(), in, number = m->number] {
                                      if (auto p = plane.lock()) p->channel_ack(in, number);
                                    });
        ++taken;
      }
      if (!error.empty()) {
        in->broken = true;
        asio::post(io, [this, in, error] { protocol_error(in, error); });
      }
    }
    if (polled) stats.messages_polled += taken;
    return taken;
  }

  // A channel message has been read (on any thread): tell the sender.
  void channel_ack(const std::shared_ptr<Inbound>& in, std::uint64_t number) {
    std::lock_guard lock(in->ack_mutex);
    if (in->closed) return;
    if (!in->channel->push_ack(number)) {
      // 16384 unreaped acks: the sender has stopped reading its ring.
      asio::post(io, [this, in] { protocol_error(in, "the sender does not take its acknowledgements"); });
      return;
    }
    if (needs_bell(in->channel->sender_polling(), in->channel->ack_bell())) {
      ring(in->stream.socket().native_handle());
      ++stats.doorbells_sent;
    }
  }

  // Once a Remote frame's bytes have been read (on any thread).
  void acknowledge(const std::shared_ptr<Inbound>& in, std::uint64_t number) {
    asio::post(io, [this, in, number] {
      if (!in->stream.socket().is_open()) return;
      in->acks_due.push_back(number);
      write_acks(in);
    });
  }

  void write_acks(const std::shared_ptr<Inbound>& in) {
    if (in->writing_acks || in->acks_due.empty()) return;
    in->writing_acks = true;
    in->acks_writing.swap(in->acks_due);
    in->acks_due.clear();
    in->stream.async_write(asio::buffer(in->acks_writing), [this, in](const asio::error_code& ec, std::size_t) {
      in->writing_acks = false;
      if (ec) return;  // the read side sees the connection go
      write_acks(in);
    });
  }

  // Sets in->probe_answer: 1 if this process can read the client's token
  // where its span says (same host and user), 2 if it also opened the
  // client's channel.
  void probe_same_host(const std::shared_ptr<Inbound>& in) {
    std::array<std::uint8_t, 32> seen{};
    const bool readable =
        read_remote(in->span.pid, in->span.address, seen.data(), seen.size()).empty() && seen == in->token;
    in->probe_answer = readable ? 1 : 0;
    if (readable) in->probed_pid = in->span.pid;
    if (!readable || in->span.reserved == 0 || !options.same_host_channel) return;
    try {
      in->channel = ShmChannel::open(in->span.pid, in->span.reserved - 1);
      in->probe_answer = 2;
      if (const auto info = in->channel->arena(); info.fd >= 0) {
        try {
          in->arena = ArenaView::open(in->span.pid, static_cast<std::uint32_t>(info.fd), info.base);
        } catch (const std::exception& e) {
          spdlog::warn("data plane node {}: node {}'s buffers are read through the kernel: {}", options.node, in->node,
                       e.what());
        }
      }
    } catch (const NetError& e) {
      spdlog::warn("data plane node {}: node {} on this host: {}; messages go through the socket", options.node,
                   in->node, e.what());
    }
  }

  // --- client side ---------------------------------------------------------

  // On the I/O thread (the only writer of `lost`). Every completion handler
  // of an outbound connection returns first thing once it is lost: a write
  // or read that completed before the loss still runs after it, possibly with
  // success, and the queue and acknowledgements it would touch are gone
  // (a write's handler took front() of the emptied queue, and its
  // pop_front() released a sent message's memory a second time).
  void lose_outbound(const std::shared_ptr<Outbound>& out, const std::string& why) {
    {
      std::lock_guard lock(out->channel_mutex);
      if (out->lost) return;
      out->lost = true;
      out->queue.clear();
      out->awaiting_ack.clear();
      out->overflow.clear();
      out->stream.close();
      out->overflow_timer.cancel();
    }
    if (out->channel) forget(out);
    sink->peer_lost(out->node, why);
  }

  // --- same-host channel, sending side ---------------------------------------

  // I/O thread: the server broke the channel's protocol.
  void outbound_protocol_error(const std::shared_ptr<Outbound>& out, const std::string& why) {
    spdlog::warn("data plane node {}: protocol error from node {}: {}", options.node, out->node, why);
    lose_outbound(out, "protocol error: " + why);
  }

  // Under out.channel_mutex: releases the memory of acknowledged messages.
  // Empty, else the protocol error.
  std::string reap_acks(Outbound& out) {
    for (;;) {
      bool corrupt = false;
      const auto a = out.channel->pop_ack(&corrupt);
      if (corrupt) return "impossible indices in the channel's ack ring";
      if (!a) return {};
      auto it = out.awaiting_ack.find(*a);
      if (it == out.awaiting_ack.end()) return fmt::format("acknowledgement of unknown message {}", *a);
      stats.bytes_sent += it->second.second;
      ++stats.messages_sent;
      out.awaiting_ack.erase(it);
    }
  }

  // Under out.channel_mutex: what the sender does whenever it looks at its
  // channel. Empty, else the protocol error.
  std::string reap_and_flush(Outbound& out) {
    std::string error = reap_acks(out);
    if (error.empty()) flush_overflow(out);
    return error;
  }

  // Under out.channel_mutex: moves what fits from the overflow into the ring,
  // in order, and wakes the receiver if it is not polling.
  void flush_overflow(Outbound& out) {
    bool pushed = false;
    while (!out.overflow.empty()) {
      Outgoing& m = out.overflow.front();
      const MessageDescriptor d{m.chunk, reinterpret_cast<std::uint64_t>(m.data), m.bytes, out.remote_frames, 0};
      if (!out.channel->push_message(d)) break;
      out.awaiting_ack.emplace(out.remote_frames++, std::pair{std::move(m.keep_alive), m.bytes});
      out.overflow.pop_front();
      pushed = true;
    }
    if (pushed && needs_bell(out.channel->receiver_polling(), out.channel->message_bell())) {
      ring(out.stream.socket().native_handle());
      ++stats.doorbells_sent;
    }
  }

  // I/O thread: while messages wait for room in a full ring (the receiver
  // has not looked at 4096 of them), try again every millisecond.
  void retry_overflow(const std::shared_ptr<Outbound>& out) {
    if (out->overflow_timer_armed || out->lost) return;
    out->overflow_timer_armed = true;
    out->overflow_timer.expires_after(std::chrono::milliseconds(1));
    out->overflow_timer.async_wait([this, out](const asio::error_code&) {
      out->overflow_timer_armed = false;
      bool waiting = false;
      {
        std::lock_guard lock(out->channel_mutex);
        if (out->lost) return;
        flush_overflow(*out);
        waiting = !out->overflow.empty();
      }
      if (waiting) retry_overflow(out);
    });
  }

  // The server writes only doorbells: acknowledgements wait in the ring.
  void watch_bells(const std::shared_ptr<Outbound>& out) {
    out->stream.async_read_some(asio::buffer(out->bells), [this, out](const asio::error_code& ec, std::size_t n) {
      if (out->lost) return;
      if (ec) return lose_outbound(out, ec == asio::error::eof ? std::string("connection closed") : ec.message());
      if (std::any_of(out->bells.begin(), out->bells.begin() + static_cast<std::ptrdiff_t>(n),
                      [](char b) { return b != 1; }))
        return lose_outbound(out, "unexpected bytes from the server");
      std::string error;
      {
        std::lock_guard lock(out->channel_mutex);
        out->channel->ack_bell().store(0, std::memory_order_seq_cst);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        error = reap_and_flush(*out);
      }
      if (!error.empty()) return outbound_protocol_error(out, error);
      watch_bells(out);
    });
  }

  // A message to a node with a channel, on the sender's thread.
  void send_by_channel(const std::shared_ptr<Outbound>& out, Outgoing m) {
    std::string error;
    bool waiting = false;
    {
      std::lock_guard lock(out->channel_mutex);
      if (out->lost) return;
      out->overflow.push_back(std::move(m));
      error = reap_and_flush(*out);
      waiting = !out->overflow.empty();
    }
    if (!error.empty()) {
      asio::post(io, [this, out, error] { outbound_protocol_error(out, error); });
    } else if (waiting) {
      asio::post(io, [this, out] { retry_overflow(out); });
    }
  }

  // Under channels_mutex: what every channel holds now. wait = false (a
  // poller): skip a connection another thread is at.
  std::size_t poll_channels(bool wait) {
    std::size_t taken = 0;
    for (const auto& in : inbound_channels) taken += drain(in, wait, !wait);
    for (const auto& out : outbound_channels) {
      std::unique_lock lock(out->channel_mutex, std::defer_lock);
      if (wait) {
        lock.lock();
      } else if (!lock.try_lock()) {
        continue;
      }
      if (out->lost) continue;
      if (std::string error = reap_and_flush(*out); !error.empty())
        asio::post(io, [this, out, error] { outbound_protocol_error(out, error); });
    }
    return taken;
  }

  // Under channels_mutex.
  void set_polling(std::uint32_t value) {
    for (const auto& in : inbound_channels) in->channel->receiver_polling().store(value, std::memory_order_seq_cst);
    for (const auto& out : outbound_channels) out->channel->sender_polling().store(value, std::memory_order_seq_cst);
  }

  void write_next(const std::shared_ptr<Outbound>& out) {
    if (out->lost || out->queue.empty()) {
      out->writing = false;
      return;
    }
    out->writing = true;
    Outgoing& m = out->queue.front();
    if (out->remote_reads && options.remote_read_min_bytes > 0 && m.bytes >= options.remote_read_min_bytes)
      return write_remote(out);
    const std::size_t part = std::min(options.part_bytes, m.bytes - m.sent);
    out->header = FrameHeader{};
    out->header.part_bytes = static_cast<std::uint32_t>(part);
    out->header.total_bytes = m.bytes;
    out->header.part_offset = m.sent;
    out->header.chunk = m.chunk;
    const BufferList<asio::const_buffer> buffers{asio::buffer(&out->header, sizeof(FrameHeader)),
                                                 asio::buffer(m.data + m.sent, part)};
    out->stream.async_write(buffers, [this, out, part](const asio::error_code& ec, std::size_t) {
      if (out->lost) return;
      if (ec) return lose_outbound(out, ec.message());
      Outgoing& m = out->queue.front();
      m.sent += part;
      stats.bytes_sent += part;
      if (m.sent == m.bytes) {
        ++stats.messages_sent;
        out->queue.pop_front();
      }
      write_next(out);
    });
  }

  // The message's header and where its bytes are; the server reads them itself.
  void write_remote(const std::shared_ptr<Outbound>& out) {
    Outgoing& m = out->queue.front();
    out->header = FrameHeader{};
    out->header.magic = remote_frame_magic;
    out->header.total_bytes = m.bytes;
    out->header.chunk = m.chunk;
    out->span = RemoteSpan{reinterpret_cast<std::uint64_t>(m.data), static_cast<std::uint32_t>(::getpid()), 0};
    // Awaited from now on: the server's ack may be handled before this
    // write's completion.
    out->awaiting_ack.emplace(out->remote_frames++, std::pair{std::move(m.keep_alive), m.bytes});
    const BufferList<asio::const_buffer> buffers{asio::buffer(&out->header, sizeof(FrameHeader)),
                                                 asio::buffer(&out->span, sizeof(RemoteSpan))};
    out->stream.async_write(buffers, [this, out](const asio::error_code& ec, std::size_t) {
      if (out->lost) return;
      if (ec) return lose_outbound(out, ec.message());
      out->queue.pop_front();
      write_next(out);
    });
  }

  // After the handshake the server only writes acknowledgements of Remote
  // frames; anything else, or the end of the stream, means the connection is
  // gone (or the server broke the protocol).
  void watch(const std::shared_ptr<Outbound>& out) {
    out->stream.async_read(asio::buffer(&out->ack, sizeof out->ack), [this, out](const asio::error_code& ec, std::size_t) {
      if (out->lost) return;
      if (is_tls_error(ec)) return outbound_protocol_error(out, "TLS: " + ec.message());
      if (ec) return lose_outbound(out, ec == asio::error::eof ? std::string("connection closed") : ec.message());
      auto it = out->awaiting_ack.find(out->ack);
      if (it == out->awaiting_ack.end()) return lose_outbound(out, "unexpected bytes from the server");
      stats.bytes_sent += it->second.second;
      ++stats.messages_sent;
      out->awaiting_ack.erase(it);
      watch(out);
    });
  }
};

std::size_t RemoteMessage::bytes() const { return state_->bytes; }

const void* RemoteMessage::data() const { return state_->mapped; }

void RemoteMessage::read(std::size_t offset, std::size_t n, void* to) const {
  const State& s = *state_;
  require<NetError>(offset <= s.bytes && n <= s.bytes - offset, "remote message of {} bytes: read of [{}, +{})",
                    s.bytes, offset, n);
  if (s.mapped != nullptr) {
    if (n > 0) std::memcpy(to, s.mapped + offset, n);
    return;
  }
  const std::string error = read_remote(s.pid, s.address + offset, to, n);
  if (error.empty()) return;
  const std::string why = fmt::format("cannot read node {}'s memory (process {}): {}", s.sender, s.pid, error);
  if (s.unreadable) s.unreadable(why);
  raise<NetError>("{}", why);
}

DataPlane::DataPlane(DataPlaneOptions options, FrameSink* sink)
    : impl_(std::make_shared<Impl>(std::move(options), sink)) {
  require<NetError>(sink != nullptr, "DataPlane: a sink is required");
  require<NetError>(!impl_->options.secret.empty(), "DataPlane: the cluster secret is empty");
  require<NetError>(tls_mode_of(static_cast<std::uint32_t>(impl_->options.tls)).has_value(),
                    "DataPlane: unknown TLS mode {}", static_cast<std::uint32_t>(impl_->options.tls));
  if (impl_->options.tls == TlsMode::off)
    spdlog::warn("data plane node {}: tls = off: chunks travel in plaintext, and whoever can reach the network "
                 "between hosts can read and alter them",
                 impl_->options.node);
  if (impl_->options.same_host_channel && impl_->options.remote_read_min_bytes > 0 &&
      impl_->options.tls != TlsMode::always) {
    try {
      SharedArena::install();  // large buffers allocated from now on can be read in place by peers here
    } catch (const std::exception& e) {
      spdlog::warn("data plane node {}: no shared arena ({}); peers on this host read through the kernel",
                   impl_->options.node, e.what());
    }
  }
  try {
    impl_->start();
  } catch (const std::system_error& e) {
    const std::string hint = listen_failure_hint(e.code(), impl_->options.listen_address);
    raise<NetError>("data plane: cannot listen on {}:{}: {}{}{}", impl_->options.listen_address, impl_->options.port,
                    e.what(), hint.empty() ? "" : ": ", hint);
  }
}

DataPlane::~DataPlane() { impl_->stop(); }

std::uint16_t DataPlane::port() const { return impl_->listener->port(); }
int DataPlane::node() const { return impl_->options.node; }

void DataPlane::connect(int node, const std::string& host, std::uint16_t port) {
  Impl& im = *impl_;
  const DataPlaneOptions& o = im.options;
  auto out = std::make_shared<Impl::Outbound>(im.io);
  out->node = node;
  struct Exchange {
    Hello hello, answer;
    Digest client_proof{}, welcome{};
    FrameHeader probe;
    RemoteSpan span{};                     // pid 0: no same-host reads offered
    std::array<std::uint8_t, 32> token{};  // the probe reads these from this process
    Digest probe_mac{}, answer_mac{};
    std::uint8_t readable = 0;
    std::unique_ptr<ShmChannel> channel;  // offered in the probe
    asio::steady_timer timer;
    std::promise<std::string> done;  // empty: success
    bool finished = false;
    explicit Exchange(asio::io_context& io) : timer(io) {}
  };
  auto x = std::make_shared<Exchange>(im.io);
  x->hello.version = o.version;
  x->hello.node = o.node;
  x->hello.detail = static_cast<std::uint32_t>(o.tls);
  x->hello.nonce = fresh_nonce();
  auto future = x->done.get_future();
  auto finish = [x, out](std::string error) {
    if (x->finished) return;
    x->finished = true;
    x->timer.cancel();
    if (!error.empty()) out->stream.close();
    x->done.set_value(std::move(error));
  };
  // After the Welcome: the probe (wire.hpp), its authenticated answer, then
  // TLS unless this connection skips it.
  auto probe = [&im, &o, x, out, finish] {
    x->probe.magic = probe_frame_magic;
    x->probe.total_bytes = x->token.size();
    // Same host and user? The server tries to read our token.
    if (o.remote_read_min_bytes > 0 && o.tls != TlsMode::always) {
      const Nonce token = fresh_nonce();
      std::copy(token.begin(), token.end(), x->token.begin());
      x->span = RemoteSpan{reinterpret_cast<std::uint64_t>(x->token.data()), static_cast<std::uint32_t>(::getpid()), 0};
      if (o.same_host_channel) {
        try {
          x->channel = ShmChannel::create();
          x->span.reserved = static_cast<std::uint32_t>(x->channel->fd()) + 1;
          if (SharedArena* arena = SharedArena::installed()) x->channel->announce_arena(arena->fd(), arena->base());
        } catch (const NetError& e) {
          spdlog::warn("data plane node {}: {}; same-host messages go through the socket", o.node, e.what());
        }
      }
    }
    x->probe_mac = probe_mac(o.secret, o.version, o.node, x->span, x->token, x->hello.nonce, x->answer.nonce);
    const BufferList<asio::const_buffer> buffers{asio::buffer(&x->probe, sizeof(FrameHeader)),
                                                 asio::buffer(&x->span, sizeof(RemoteSpan)), asio::buffer(x->token),
                                                 asio::buffer(x->probe_mac)};
    out->stream.async_write(buffers, [&im, &o, x, out, finish](const asio::error_code& ec, std::size_t) {
      if (ec) return finish(ec.message());
      const BufferList<asio::mutable_buffer> answer{asio::buffer(&x->readable, 1), asio::buffer(x->answer_mac)};
      out->stream.async_read(answer, [&im, &o, x, out, finish](const asio::error_code& ec, std::size_t) {
        if (ec) return finish("closed during the same-host probe (" + ec.message() + ")");
        const Digest expected = answer_mac(o.secret, o.version, o.node, x->readable, x->answer.nonce, x->hello.nonce);
        if (!equal_constant_time(expected, x->answer_mac))
          return finish("the server's answer to the same-host probe is not authentic");
        if (x->readable > 2 || (x->readable > 0 && x->span.pid == 0) || (x->readable == 2 && !x->channel))
          return finish(fmt::format("the server answered {} to a same-host probe that did not offer it", x->readable));
        out->remote_reads = x->readable == 1 || x->readable == 2;
        if (x->readable == 2) out->channel = std::move(x->channel);
        if (!im.uses_tls(out->channel != nullptr)) return finish({});
        out->stream.start_tls(*im.tls_client, tls_key(Plane::data, o.secret, x->hello.nonce, x->answer.nonce),
                              [finish](const asio::error_code& ec) {
                                finish(ec ? "TLS handshake failed: " + ec.message() : std::string());
                              });
      });
    });
  };
  const std::string where = fmt::format("{}:{}", host, port);
  asio::post(im.io, [&im, &o, x, out, finish, probe, host, port] {
    x->timer.expires_after(o.handshake_timeout);
    x->timer.async_wait([finish, &o](const asio::error_code& ec) {
      if (!ec) finish(fmt::format("no answer within {} ms", o.handshake_timeout.count()));
    });
    asio::error_code ec;
    tcp::resolver resolver(im.io);
    auto endpoints = resolver.resolve(host, std::to_string(port), ec);
    if (ec) return finish("cannot resolve: " + ec.message());
    asio::async_connect(out->stream.socket(), endpoints, [&o, x, out, finish, probe](const asio::error_code& ec, const tcp::endpoint&) {
      if (ec) return finish(ec.message());
      out->stream.socket().set_option(tcp::no_delay(true));
      out->stream.async_write(asio::buffer(&x->hello, sizeof(Hello)), [&o, x, out, finish, probe](const asio::error_code& ec, std::size_t) {
        if (ec) return finish(ec.message());
        out->stream.async_read(asio::buffer(&x->answer, sizeof(Hello)), [&o, x, out, finish, probe](const asio::error_code& ec, std::size_t) {
          if (ec) return finish("closed during the handshake (" + ec.message() + ")");
          const Hello& a = x->answer;
          if (a.magic != hello_magic) return finish("the server does not speak the taihu data-plane protocol");
          if (a.kind == 1 && a.detail == static_cast<std::uint32_t>(RefuseReason::tls_mode))
            return finish(fmt::format("refused by the server: it uses another TLS mode than this node's tls = {} "
                                      "(every node needs the same [cluster] tls)", tls_mode_name(o.tls)));
          if (a.kind == 1) {
            return finish(fmt::format("refused by the server: {} (server speaks version {}, this node {})",
                                      reason_text(a.detail), a.version, o.version));
          }
          if (a.detail != static_cast<std::uint32_t>(o.tls))
            return finish(fmt::format("the server uses tls = {}, this node tls = {} (every node needs the same "
                                      "[cluster] tls)", mode_text(a.detail), tls_mode_name(o.tls)));
          x->client_proof = handshake_proof(o.secret, "taihu-dp client", o.version, o.node, x->hello.nonce, a.nonce);
          out->stream.async_write(asio::buffer(x->client_proof), [&o, x, out, finish, probe](const asio::error_code& ec, std::size_t) {
            if (ec) return finish(ec.message());
            // A Welcome digest, or (on a wrong secret) the first 32 bytes of a Refuse.
            out->stream.async_read(asio::buffer(x->welcome), [&o, x, finish, probe](const asio::error_code& ec, std::size_t) {
              if (ec) return finish("closed during the handshake (" + ec.message() + ")");
              const Digest expected =
                  handshake_proof(o.secret, "taihu-dp server", o.version, o.node, x->answer.nonce, x->hello.nonce);
              if (!equal_constant_time(expected, x->welcome)) {
                if (std::memcmp(x->welcome.data(), hello_magic.data(), hello_magic.size()) == 0)
                  return finish("refused by the server: wrong cluster secret");
                return finish("the server does not hold the cluster secret");
              }
              probe();
            });
          });
        });
      });
    });
  });
  const std::string error = future.get();
  if (!error.empty())
    raise<NetError>("data plane node {}: cannot connect to node {} at {}: {}", o.node, node, where, error);
  {
    std::lock_guard lock(im.mutex);
    im.outbound[node] = out;
  }
  if (out->channel) im.remember(out);
  if (out->stream.secure()) ++im.stats.tls_connections;
  asio::post(im.io, [&im, out] {
    if (out->channel) {
      im.watch_bells(out);
    } else {
      im.watch(out);
    }
  });
}

bool DataPlane::connected(int node) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->outbound.contains(node);
}

void DataPlane::send(int node, const ChunkHeader& header, const void* data, std::size_t bytes,
                     std::shared_ptr<const void> keep_alive) {
  Impl& im = *impl_;
  std::shared_ptr<Impl::Outbound> out;
  {
    std::lock_guard lock(im.mutex);
    auto it = im.outbound.find(node);
    if (it != im.outbound.end()) out = it->second;
  }
  require<NetError>(out != nullptr, "data plane node {}: no connection to node {}", im.options.node, node);
  Outgoing m{header, static_cast<const char*>(data), bytes, 0, std::move(keep_alive)};
  if (out->channel) return im.send_by_channel(out, std::move(m));
  asio::post(im.io, [&im, out, m = std::move(m)]() mutable {
    if (out->lost) return;
    out->queue.push_back(std::move(m));
    if (!out->writing) im.write_next(out);
  });
}

DataPlaneStats DataPlane::stats() const {
  const auto& s = impl_->stats;
  return {s.bytes_sent,      s.bytes_received, s.messages_sent,   s.messages_received, s.messages_read_remotely,
          s.messages_polled, s.doorbells_sent, s.accepted,        s.tls_connections,   s.refused_version,
          s.refused_secret,  s.refused_garbage, s.refused_tls};
}

int DataPlane::channels() const { return impl_->channel_count.load(); }

std::size_t DataPlane::poll() {
  Impl& im = *impl_;
  std::unique_lock lock(im.channels_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return 0;
  return im.poll_channels(false);
}

void DataPlane::hold_polling(bool hold) {
  Impl& im = *impl_;
  std::lock_guard lock(im.channels_mutex);
  if (hold) {
    if (im.holds++ == 0) im.set_polling(1);
    return;
  }
  require<NetError>(im.holds > 0, "data plane node {}: hold_polling(false) without a hold", im.options.node);
  if (--im.holds > 0) return;
  im.set_polling(0);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  im.poll_channels(true);  // what came while peers thought we were looking
}

}  // namespace taihu::transport
