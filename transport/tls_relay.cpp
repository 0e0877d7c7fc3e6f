#include "transport/tls_relay.hpp"

#include <asio.hpp>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <array>

#include "core/common/check.hpp"
#include "transport/net_error.hpp"

namespace taihu::transport {
namespace {

using Local = asio::local::stream_protocol::socket;

// One connection's relay: two pumps, each with one read and then one write in
// flight (Stream's rule: at most one read and one write at once), kept alive
// by their handlers.
class Relay : public std::enable_shared_from_this<Relay> {
 public:
  Relay(std::unique_ptr<Stream> secure, Local plain, std::string what)
      : secure_(std::move(secure)), plain_(std::move(plain)), what_(std::move(what)) {}

  void start() {
    outward();
    inward();
  }

 private:
  // CAF's bytes out through TLS. An EOF from CAF comes after everything it
  // wrote, all of which has then been written on.
  void outward() {
    plain_.async_read_some(asio::buffer(out_), [self = shared_from_this()](const asio::error_code& ec, std::size_t n) {
      if (ec) return self->close();
      self->secure_->async_write(asio::buffer(self->out_.data(), n),
                                 [self](const asio::error_code& ec, std::size_t) {
                                   if (ec) return self->close(ec);
                                   self->outward();
                                 });
    });
  }

  // The peer's bytes, decrypted and authenticated, in to CAF.
  void inward() {
    secure_->async_read_some(asio::buffer(in_), [self = shared_from_this()](const asio::error_code& ec, std::size_t n) {
      if (ec) return self->close(ec);
      asio::async_write(self->plain_, asio::buffer(self->in_.data(), n), [self](const asio::error_code& ec, std::size_t) {
        if (ec) return self->close();
        self->inward();
      });
    });
  }

  void close(const asio::error_code& ec = {}) {
    if (closed_) return;
    closed_ = true;
    if (is_tls_error(ec)) spdlog::warn("{}: protocol error: TLS: {}; connection closed", what_, ec.message());
    secure_->close();
    asio::error_code ignored;
    plain_.shutdown(Local::shutdown_both, ignored);
    plain_.close(ignored);
  }

  std::unique_ptr<Stream> secure_;
  Local plain_;
  std::string what_;
  // 64 KB each way: BASP messages are mostly far smaller; a checkpoint's
  // megabytes take several turns.
  std::array<char, 1 << 16> out_{}, in_{};
  bool closed_ = false;
};

}  // namespace

int relay_over_tls(std::unique_ptr<Stream> secure, std::string what) {
  require<NetError>(secure != nullptr && secure->secure(), "relay_over_tls: the stream runs no TLS");
  auto executor = secure->socket().get_executor();
  Local ours(executor), theirs(executor);
  asio::error_code ec;
  asio::local::connect_pair(ours, theirs, ec);
  if (ec) raise<NetError>("{}: cannot make a socket pair for TLS: {}", what, ec.message());
  std::make_shared<Relay>(std::move(secure), std::move(ours), std::move(what))->start();
  return theirs.release();
}

IoThread::IoThread(std::chrono::milliseconds drain)
    : drain_(drain), io_(std::make_unique<asio::io_context>(1)) {
  work_ = std::make_shared<asio::executor_work_guard<asio::io_context::executor_type>>(io_->get_executor());
  thread_ = std::thread([this] {
    for (;;) {
      try {
        io_->run();
        break;
      } catch (const std::exception& e) {
        spdlog::error("I/O thread: {}", e.what());
      }
    }
    finished_ = true;
  });
}

IoThread::~IoThread() {
  work_.reset();
  const auto deadline = std::chrono::steady_clock::now() + drain_;
  while (!finished_ && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  io_->stop();
  if (thread_.joinable()) thread_.join();
}

IoThread& control_plane_thread() {
  // OpenSSL first: its own cleanup at exit then runs after this thread's drain.
  static const bool ssl_ready = OPENSSL_init_ssl(0, nullptr) == 1;
  static IoThread thread(std::chrono::seconds(2));
  (void)ssl_ready;
  return thread;
}

}  // namespace taihu::transport
