#include "transport/listener.hpp"

#include <fmt/format.h>

#include <utility>

#include "transport/addresses.hpp"
#include "transport/net_error.hpp"
#include "core/common/check.hpp"

namespace taihu::transport {

using asio::ip::tcp;

Listener::Listener(asio::io_context& io, ListenerOptions options, Handler handler)
    : io_(io), options_(std::move(options)), handler_(std::move(handler)), acceptor_(io), backoff_timer_(io) {
  try {
    const tcp::endpoint endpoint{asio::ip::make_address(options_.address), options_.port};
    acceptor_.open(endpoint.protocol());
    acceptor_.set_option(tcp::acceptor::reuse_address(true));
    acceptor_.bind(endpoint);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
  } catch (const std::system_error& e) {
    const std::string hint = listen_failure_hint(e.code(), options_.address);
    raise<NetError>("{}: cannot listen on {}:{}: {}{}{}", options_.what, options_.address, options_.port, e.what(),
                    hint.empty() ? "" : ": ", hint);
  }
}

void Listener::start() { accept_next(); }

void Listener::stop() {
  asio::error_code ignored;
  backoff_timer_.cancel();
  acceptor_.close(ignored);
  // And the connections that still hold a place (in their handshake).
  for (auto& weak : std::exchange(places_, {}))
    if (auto place = weak.lock(); place && place->evict) place->evict();
}

ListenerStats Listener::stats() const { return {accepted_.load(), over_limit_.load(), accept_errors_.load()}; }

void Listener::accept_next() {
  acceptor_.async_accept([self = shared_from_this()](const asio::error_code& ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !self->acceptor_.is_open()) return;
    if (ec) {
      // Out of descriptors (or another transient failure): the pending
      // connection stays queued; try again later rather than spin on it.
      ++self->accept_errors_;
      self->error_log_.warn("{}: cannot accept a connection: {}; retrying in {} ms", self->options_.what, ec.message(),
                            self->options_.backoff.count());
      self->backoff_timer_.expires_after(self->options_.backoff);
      self->backoff_timer_.async_wait([self](const asio::error_code& e) {
        if (!e) self->accept_next();
      });
      return;
    }
    self->make_room();
    ++self->accepted_;
    auto place = std::make_shared<Place>();
    asio::error_code ignored;
    const auto peer = socket.remote_endpoint(ignored);
    place->peer = ignored ? std::string("?") : fmt::format("{}:{}", peer.address().to_string(), peer.port());
    self->places_.push_back(place);
    self->handler_(std::move(socket), std::move(place));
    self->accept_next();
  });
}

void Listener::make_room() {
  std::size_t live = 0;
  for (auto it = places_.begin(); it != places_.end();) {
    if (it->expired()) {
      it = places_.erase(it);
    } else {
      ++live;
      ++it;
    }
  }
  if (live < options_.max_open) return;
  auto oldest = places_.front().lock();
  places_.pop_front();
  if (!oldest) return;
  ++over_limit_;
  const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - oldest->since);
  over_limit_log_.warn("{}: {} connections are open (the most it keeps): closed the oldest, from {} ({} ms old), to "
                       "make room",
                       options_.what, options_.max_open, oldest->peer, age.count());
  if (oldest->evict) oldest->evict();
}

}  // namespace taihu::transport
