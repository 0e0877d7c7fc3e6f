#pragma once
// The accept loop every taihu port runs (control gate, data plane, status
// endpoint), on its owner's Asio thread.
//
// A port open to the network must not let strangers exhaust the process:
//   - at most `max_open` accepted connections hold a place at once; a new
//     one beyond that takes the place of the oldest, which is closed (its
//     owner's evict callback). Strangers who open connections and wait thus
//     cannot lock out a real peer, whose handshake takes milliseconds: they
//     would have to open max_open new connections within that time;
//   - an accept that fails (no descriptors left: EMFILE) waits `backoff`
//     before the next, instead of spinning on the error;
//   - both are logged at most once per second per port, with how many
//     occurred since the last line, so a flood cannot flood the log.
// A connection keeps its place while its owner holds the Ticket that came
// with it; dropping the last copy frees the place (an authenticated peer's
// owner may drop it early, so that only strangers are counted).

#include <asio.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "transport/log_limiter.hpp"

namespace taihu::transport {

struct ListenerOptions {
  std::string what;              // for logs: "coordinator control port"
  std::string address = "127.0.0.1";
  std::uint16_t port = 0;        // 0: any free port
  std::size_t max_open = 64;     // accepted connections open at once
  std::chrono::milliseconds backoff{100};
};

struct ListenerStats {
  std::uint64_t accepted = 0;
  std::uint64_t over_limit = 0;     // oldest connections closed to make room
  std::uint64_t accept_errors = 0;  // e.g. out of file descriptors
};

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  // A connection's place. The owner sets `evict` (closes the connection), called
  // on the listener's io thread when a newer connection needs the place.
  struct Place {
    std::function<void()> evict;
    std::chrono::steady_clock::time_point since = std::chrono::steady_clock::now();
    std::string peer;
  };
  using Ticket = std::shared_ptr<Place>;
  using Handler = std::function<void(asio::ip::tcp::socket, Ticket)>;

  // Binds and listens (throws NetError naming the address); start() begins accepting.
  Listener(asio::io_context& io, ListenerOptions options, Handler handler);
  void start();
  // Stops accepting and evicts the connections that hold a place (on the io
  // thread, or after it has stopped).
  void stop();

  std::uint16_t port() const { return port_; }
  ListenerStats stats() const;

 private:
  void accept_next();
  // Makes room for one more connection (io thread).
  void make_room();

  asio::io_context& io_;
  ListenerOptions options_;
  Handler handler_;
  asio::ip::tcp::acceptor acceptor_;
  asio::steady_timer backoff_timer_;
  std::uint16_t port_ = 0;
  std::deque<std::weak_ptr<Place>> places_;  // oldest first (io thread)
  std::atomic<std::uint64_t> accepted_{0}, over_limit_{0}, accept_errors_{0};
  LogLimiter over_limit_log_, error_log_;
};

}  // namespace taihu::transport
