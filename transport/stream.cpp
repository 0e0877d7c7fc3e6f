#include "transport/stream.hpp"

#include <asio/read.hpp>
#include <asio/ssl.hpp>
#include <asio/write.hpp>

namespace taihu::transport {

using asio::ip::tcp;

struct Stream::Tls {
  // The key first: the SSL (in `stream`) points at it until it is freed.
  TlsKey key;
  asio::ssl::stream<tcp::socket&> stream;
  Tls(tcp::socket& socket, const TlsContext& context, const TlsKey& k)
      : key(k), stream(socket, context.context()) {
    context.bind(stream.native_handle(), key);
  }
};

namespace {

// See async_read: a TLS stream cut without close_notify is a closed connection.
Stream::Handler closed_as_eof(Stream::Handler handler) {
  return [handler = std::move(handler)](const asio::error_code& ec, std::size_t n) {
    handler(ec == asio::ssl::error::stream_truncated ? asio::error_code(asio::error::eof) : ec, n);
  };
}

}  // namespace

Stream::Stream(tcp::socket socket) : socket_(std::move(socket)) {}
Stream::Stream(asio::io_context& io) : socket_(io) {}
Stream::~Stream() = default;

void Stream::start_tls(const TlsContext& context, const TlsKey& key, std::function<void(const asio::error_code&)> done) {
  if (tls_) throw std::logic_error("Stream::start_tls: TLS already started");
  tls_ = std::make_unique<Tls>(socket_, context, key);
  tls_->stream.async_handshake(
      context.role() == TlsContext::Role::client ? asio::ssl::stream_base::client : asio::ssl::stream_base::server,
      [done = std::move(done)](const asio::error_code& ec) {
        done(ec == asio::ssl::error::stream_truncated ? asio::error_code(asio::error::eof) : ec);
      });
}

void Stream::async_read(BufferList<asio::mutable_buffer> buffers, Handler handler) {
  if (tls_) return asio::async_read(tls_->stream, buffers, closed_as_eof(std::move(handler)));
  asio::async_read(socket_, buffers, std::move(handler));
}

void Stream::async_read_some(asio::mutable_buffer buffer, Handler handler) {
  if (tls_) return tls_->stream.async_read_some(buffer, closed_as_eof(std::move(handler)));
  socket_.async_read_some(buffer, std::move(handler));
}

void Stream::async_write(BufferList<asio::const_buffer> buffers, Handler handler) {
  if (tls_) return asio::async_write(tls_->stream, buffers, std::move(handler));
  asio::async_write(socket_, buffers, std::move(handler));
}

void Stream::close() {
  asio::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

long Stream::certificate_verdict() const {
  return tls_ ? transport::certificate_verdict(tls_->stream.native_handle()) : 0;
}

bool is_tls_error(const asio::error_code& ec) {
  return ec.category() == asio::error::get_ssl_category() ||
         (ec.category() == asio::ssl::error::get_stream_category() && ec != asio::ssl::error::stream_truncated);
}

}  // namespace taihu::transport
