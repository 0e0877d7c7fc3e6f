#pragma once
// TLS for a peer that speaks only plaintext sockets: CAF's BASP on the
// control plane.
//
// CAF 0.17 takes a connection as a socket descriptor and does its own
// reads and writes; its OpenSSL module makes its own connections with
// certificates or anonymous ciphers and cannot take a socket that the
// gatekeeper has already authenticated, nor a pre-shared key. So the
// gatekeeper runs TLS itself (transport/stream.hpp, as the data plane does)
// and gives CAF one end of a Unix socket pair; a relay on an Asio thread
// copies bytes between the pair's other end and the TLS stream, both ways.
// The pair is private to the process (socketpair(2): no name anyone else can
// open), so every byte that leaves the process goes through TLS.
//
// Either side's end (EOF, error, a record that fails its tag) closes both:
// CAF sees its connection closed, as it would see a lost TCP connection, and
// the peer's relay sees the TCP connection end. Control traffic is small
// (commands, metrics, checkpoints), so the copy and the extra hop cost little
// next to a step (bench/RESULTS.md, "TLS on the control plane").

#include <asio/io_context.hpp>

#include <atomic>
#include <chrono>

#include <memory>
#include <string>
#include <thread>

#include "transport/stream.hpp"

namespace taihu::transport {

// Starts relaying between `secure` (a Stream whose TLS handshake is done,
// bound to `secure`'s socket's executor) and a new socket pair; returns the
// plaintext end, which is the caller's to close. Call on the stream's I/O
// thread; the relay runs there until either side closes. `what` names the
// connection in the log line of a protocol error.
int relay_over_tls(std::unique_ptr<Stream> secure, std::string what);

// An Asio I/O thread that runs until destroyed.
class IoThread {
 public:
  // `drain`: how long the destructor lets the work still running there end
  // by itself (relays end when both sides have closed) before it stops it.
  explicit IoThread(std::chrono::milliseconds drain = {});
  ~IoThread();  // then stops the I/O (closing what still runs there) and joins
  IoThread(const IoThread&) = delete;
  IoThread& operator=(const IoThread&) = delete;

  asio::io_context& io() { return *io_; }

 private:
  std::chrono::milliseconds drain_;
  std::unique_ptr<asio::io_context> io_;
  std::shared_ptr<void> work_;  // keeps run() going with nothing to do
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

// The process's control-plane I/O thread: the gatekeeper's handshakes and
// every TLS relay of the control plane, coordinator's and node's alike.
// Started on first use; it outlives the actor system, so that what CAF wrote
// last (the run's end, sent just before the coordinator closes its port and
// the process its actor system) still crosses TLS: at exit it lets open
// relays finish for up to 2 s (they end once CAF has closed its ends).
IoThread& control_plane_thread();

}  // namespace taihu::transport
