#pragma once
// A data-plane connection's byte stream: its TCP socket, and after
// start_tls() TLS 1.3 over that socket (transport/tls.hpp). The data plane
// reads and writes through it alike either way, so that every frame, part and
// acknowledgement of a TLS connection goes through TLS.
//
// Rules, as for asio::ssl::stream: calls on the owner's I/O thread; at most
// one read (async_read or async_read_some) and one write (async_write) in
// flight at once. Asio's TLS stream serialises the socket I/O of a read and a
// write that run together, and writes what a read must answer (alerts). Raw
// bytes written on socket() directly (the same-host doorbells) are only for a
// stream without TLS: they would break its records.
//
// A peer that has gone raises no SIGPIPE: Asio sends with MSG_NOSIGNAL, and
// OpenSSL never writes to the socket itself (Asio feeds it through a memory
// BIO and does the socket I/O).
//
// OpenSSL's headers stay in stream.cpp and tls.cpp: operations take their
// handler as a std::function.

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <stdexcept>

#include "transport/tls.hpp"

namespace taihu::transport {

// Up to four buffers read or written as one (a frame header and its
// payload), by value: an asio buffer sequence that owns its list.
template <class Buffer>
class BufferList {
 public:
  using value_type = Buffer;
  using const_iterator = const Buffer*;
  template <class B>
    requires std::convertible_to<B, Buffer>
  BufferList(B buffer) : items_{Buffer(buffer)}, size_(1) {}  // NOLINT: one buffer is a list
  BufferList(std::initializer_list<Buffer> buffers) : size_(buffers.size()) {
    if (size_ > items_.size()) throw std::length_error("BufferList: more than four buffers");
    std::copy(buffers.begin(), buffers.end(), items_.begin());
  }
  const Buffer* begin() const { return items_.data(); }
  const Buffer* end() const { return items_.data() + size_; }

 private:
  std::array<Buffer, 4> items_{};
  std::size_t size_;
};

class Stream {
 public:
  using Handler = std::function<void(const asio::error_code&, std::size_t)>;

  explicit Stream(asio::ip::tcp::socket socket);
  explicit Stream(asio::io_context& io);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Connecting, options, closing; the descriptor for doorbells (see above).
  asio::ip::tcp::socket& socket() { return socket_; }
  bool secure() const { return tls_ != nullptr; }

  // Wraps the socket in TLS with `key` as the pre-shared key, in `context`'s
  // role, and runs the TLS handshake; `done` gets its outcome. Once.
  void start_tls(const TlsContext& context, const TlsKey& key, std::function<void(const asio::error_code&)> done);

  // Reads until the buffers are full. A TLS peer that closes the connection
  // without TLS's close_notify reads as asio::error::eof, like a closed socket:
  // messages are framed by their lengths, so a cut between them is a loss of
  // the connection, and one within a message is noticed as such.
  void async_read(BufferList<asio::mutable_buffer> buffers, Handler handler);
  void async_read_some(asio::mutable_buffer buffer, Handler handler);
  // Writes all the buffers.
  void async_write(BufferList<asio::const_buffer> buffers, Handler handler);

  // Shuts the socket down and closes it (no close_notify: a peer notices the
  // end as it would a socket's).
  void close();

  // With certificates: certificate_verdict() on this stream's TLS (0 when it
  // runs none).
  long certificate_verdict() const;

 private:
  struct Tls;
  asio::ip::tcp::socket socket_;
  std::unique_ptr<Tls> tls_;
};

// Whether a failed read or write is TLS's verdict on what the peer sent (a
// record that fails its tag, an alert, bytes that are not TLS), rather than a
// closed or broken socket: a protocol error, not a lost connection.
bool is_tls_error(const asio::error_code& ec);

}  // namespace taihu::transport
