#include "transport/gatekeeper.hpp"

#include <asio.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include "transport/listener.hpp"
#include "transport/log_limiter.hpp"
#include "transport/crypto.hpp"
#include "core/common/check.hpp"

namespace taihu::transport {
namespace {

using asio::ip::tcp;
using Proof = std::array<std::uint8_t, 32>;

// One side's proof: the role, the version, the client's name and both nonces
// (own first), so a proof is good for this handshake and this side only.
Proof gate_proof(const std::string& secret, std::string_view role, const GateMessage& hello, const Proof& first,
                 const Proof& second) {
  return hmac_sha256(bytes_of(secret), {bytes_of(role), field_bytes(hello.version), field_bytes(hello.name), first, second});
}

GateMessage gate_message(std::uint32_t version, GateKind kind) {
  GateMessage m;
  m.version = version;
  m.kind = static_cast<std::uint32_t>(kind);
  return m;
}

// The name as sent: printable ASCII up to the first NUL, for logs.
std::string name_of(const GateMessage& m) {
  std::string name;
  for (char c : m.name) {
    if (c == '\0') break;
    name += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return name;
}

std::string endpoint_text(const tcp::socket& socket) {
  asio::error_code ec;
  const auto ep = socket.remote_endpoint(ec);
  return ec ? std::string("?") : fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

}  // namespace

struct Gatekeeper::Impl : std::enable_shared_from_this<Gatekeeper::Impl> {
  GatekeeperOptions options;
  std::function<void(Admitted)> admit;
  asio::io_context io;
  std::shared_ptr<Listener> listener;
  std::thread thread;
  std::atomic<std::uint64_t> admitted{0}, refused_version{0}, refused_secret{0}, refused_garbage{0};
  // Separate limits, so that a flood of garbage cannot hide a wrong secret.
  LogLimiter garbage_log, secret_log, version_log;

  struct Pending {
    explicit Pending(tcp::socket s) : socket(std::move(s)), timer(socket.get_executor()) {}
    tcp::socket socket;
    asio::steady_timer timer;
    Listener::Ticket ticket;  // a place among the max_pending
    std::string peer;
    GateMessage hello, answer, proof;
    Proof server_nonce{};
    bool done = false;
  };

  void on_connection(tcp::socket socket, Listener::Ticket ticket) {
    auto p = std::make_shared<Pending>(std::move(socket));
    p->ticket = std::move(ticket);
    p->ticket->evict = [this, weak = std::weak_ptr<Pending>(p)] {
      if (auto q = weak.lock()) close(q);
    };
    p->peer = endpoint_text(p->socket);
    asio::error_code ignored;
    p->socket.set_option(tcp::no_delay(true), ignored);
    p->timer.expires_after(options.handshake_timeout);
    p->timer.async_wait([this, p](const asio::error_code& ec) {
      if (ec || p->done) return;
      ++refused_garbage;
      garbage_log.warn("{}: closed a connection from {}: no complete handshake within {} ms", options.what, p->peer,
                       options.handshake_timeout.count());
      close(p);
    });
    // The magic first, so that a stranger (an HTTP request, a CAF node) is told off at once.
    auto* bytes = reinterpret_cast<char*>(&p->hello);
    asio::async_read(p->socket, asio::buffer(bytes, gate_magic.size()), [this, p, bytes](const asio::error_code& ec, std::size_t) {
      if (ec) return garbage(p, fmt::format("closed during the handshake ({})", ec.message()));
      if (p->hello.magic != gate_magic) return garbage(p, "not a taihu node (garbage bytes)");
      asio::async_read(p->socket, asio::buffer(bytes + gate_magic.size(), sizeof(GateMessage) - gate_magic.size()),
                       [this, p](const asio::error_code& ec, std::size_t) {
                         if (ec) return garbage(p, fmt::format("closed during the handshake ({})", ec.message()));
                         on_hello(p);
                       });
    });
  }

  void on_hello(const std::shared_ptr<Pending>& p) {
    const GateMessage& h = p->hello;
    if (h.kind != static_cast<std::uint32_t>(GateKind::hello)) return garbage(p, "not a taihu node (no hello)");
    if (h.version != options.version) {
      ++refused_version;
      version_log.warn("{}: refused node '{}' ({}): it speaks cluster protocol version {}, this side {}", options.what,
                       name_of(h), p->peer, h.version, options.version);
      return refuse(p, RefuseReason::version);
    }
    random_bytes(p->server_nonce);
    p->answer = gate_message(options.version, GateKind::challenge);
    p->answer.nonce = p->server_nonce;
    asio::async_write(p->socket, asio::buffer(&p->answer, sizeof(GateMessage)), [this, p](const asio::error_code& ec, std::size_t) {
      if (ec) return close(p);
      asio::async_read(p->socket, asio::buffer(&p->proof, sizeof(GateMessage)), [this, p](const asio::error_code& ec, std::size_t) {
        if (ec) return garbage(p, "closed before proving the secret");
        on_proof(p);
      });
    });
  }

  void on_proof(const std::shared_ptr<Pending>& p) {
    const Proof expected = gate_proof(options.secret, "taihu-cp client", p->hello, p->hello.nonce, p->server_nonce);
    if (p->proof.magic != gate_magic || p->proof.kind != static_cast<std::uint32_t>(GateKind::proof) ||
        !equal_constant_time(expected, p->proof.proof)) {
      ++refused_secret;
      secret_log.warn("{}: refused node '{}' ({}): it does not hold the cluster secret", options.what,
                      name_of(p->hello), p->peer);
      return refuse(p, RefuseReason::authentication);
    }
    p->answer = gate_message(options.version, GateKind::welcome);
    p->answer.proof = gate_proof(options.secret, "taihu-cp server", p->hello, p->server_nonce, p->hello.nonce);
    asio::async_write(p->socket, asio::buffer(&p->answer, sizeof(GateMessage)), [this, p](const asio::error_code& ec, std::size_t) {
      if (ec || p->done) return close(p);
      p->done = true;
      p->timer.cancel();
      ++admitted;
      Admitted a{p->socket.release(), name_of(p->hello), p->peer};
      p->ticket.reset();  // authenticated: no longer a pending stranger
      admit(std::move(a));
    });
  }

  void garbage(const std::shared_ptr<Pending>& p, const std::string& why) {
    if (p->done) return;
    ++refused_garbage;
    garbage_log.warn("{}: closed a connection from {}: {}", options.what, p->peer, why);
    close(p);
  }

  void refuse(const std::shared_ptr<Pending>& p, RefuseReason reason) {
    p->answer = gate_message(options.version, GateKind::refuse);
    p->answer.reason = static_cast<std::uint32_t>(reason);
    asio::async_write(p->socket, asio::buffer(&p->answer, sizeof(GateMessage)),
                      [this, p](const asio::error_code&, std::size_t) { close(p); });
  }

  void close(const std::shared_ptr<Pending>& p) {
    p->done = true;
    p->timer.cancel();
    asio::error_code ignored;
    p->socket.shutdown(tcp::socket::shutdown_both, ignored);
    p->socket.close(ignored);
    p->ticket.reset();
  }
};

Gatekeeper::Gatekeeper(GatekeeperOptions options, std::function<void(Admitted)> admit)
    : impl_(std::make_shared<Impl>()) {
  impl_->options = std::move(options);
  impl_->admit = std::move(admit);
  ListenerOptions lo;
  lo.what = impl_->options.what;
  lo.address = impl_->options.listen_address;
  lo.port = impl_->options.port;
  lo.max_open = impl_->options.max_pending;
  impl_->listener = std::make_shared<Listener>(impl_->io, lo, [impl = impl_.get()](tcp::socket s, Listener::Ticket t) {
    impl->on_connection(std::move(s), std::move(t));
  });
  impl_->listener->start();
  impl_->thread = std::thread([impl = impl_] {
    for (;;) {
      try {
        impl->io.run();
        return;
      } catch (const std::exception& e) {
        spdlog::error("{}: I/O thread: {}", impl->options.what, e.what());
      }
    }
  });
}

Gatekeeper::~Gatekeeper() {
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::uint16_t Gatekeeper::port() const { return impl_->listener->port(); }

GatekeeperStats Gatekeeper::stats() const {
  return {impl_->admitted.load(), impl_->refused_version.load(), impl_->refused_secret.load(),
          impl_->refused_garbage.load(), impl_->listener->stats().over_limit};
}

// --- client ------------------------------------------------------------------

int admit_through_gate(const GateClientOptions& o) {
  asio::io_context io;
  tcp::socket socket(io);
  asio::steady_timer timer(io);
  std::string error;
  bool refused = false;
  bool done = false;
  auto finish = [&](std::string why, bool was_refused = false) {
    if (done) return;
    done = true;
    error = std::move(why);
    refused = was_refused;
    timer.cancel();
    if (!error.empty()) {
      asio::error_code ignored;
      socket.close(ignored);
    }
  };
  GateMessage hello = gate_message(o.version, GateKind::hello), answer, proof, welcome;
  std::memcpy(hello.name.data(), o.name.data(), std::min(o.name.size(), hello.name.size() - 1));
  random_bytes(hello.nonce);

  timer.expires_after(o.timeout);
  timer.async_wait([&](const asio::error_code& ec) {
    if (!ec) finish(fmt::format("no answer within {} ms", o.timeout.count()));
  });
  asio::error_code ec;
  tcp::resolver resolver(io);
  const auto endpoints = resolver.resolve(o.host, std::to_string(o.port), ec);
  if (ec) raise<NetError>("cannot resolve '{}': {}", o.host, ec.message());
  auto refusal = [&](const GateMessage& m) {
    switch (static_cast<RefuseReason>(m.reason)) {
      case RefuseReason::version:
        return fmt::format("refused: protocol version {} (the coordinator speaks {})", o.version, m.version);
      case RefuseReason::authentication: return std::string("refused: wrong cluster secret");
      default: return std::string("refused: malformed handshake");
    }
  };
  asio::async_connect(socket, endpoints, [&](const asio::error_code& ec, const tcp::endpoint&) {
    if (ec) return finish(ec.message());
    socket.set_option(tcp::no_delay(true));
    asio::async_write(socket, asio::buffer(&hello, sizeof hello), [&](const asio::error_code& ec, std::size_t) {
      if (ec) return finish(ec.message());
      asio::async_read(socket, asio::buffer(&answer, sizeof answer), [&](const asio::error_code& ec, std::size_t) {
        if (ec) return finish(fmt::format("closed during the handshake ({})", ec.message()));
        if (answer.magic != gate_magic) return finish("the server is not a taihu coordinator");
        if (answer.kind == static_cast<std::uint32_t>(GateKind::refuse)) return finish(refusal(answer), true);
        if (answer.kind != static_cast<std::uint32_t>(GateKind::challenge)) return finish("malformed challenge");
        proof = gate_message(o.version, GateKind::proof);
        proof.proof = gate_proof(o.secret, "taihu-cp client", hello, hello.nonce, answer.nonce);
        asio::async_write(socket, asio::buffer(&proof, sizeof proof), [&](const asio::error_code& ec, std::size_t) {
          if (ec) return finish(ec.message());
          asio::async_read(socket, asio::buffer(&welcome, sizeof welcome), [&](const asio::error_code& ec, std::size_t) {
            if (ec) return finish(fmt::format("closed during the handshake ({})", ec.message()));
            if (welcome.magic == gate_magic && welcome.kind == static_cast<std::uint32_t>(GateKind::refuse))
              return finish(refusal(welcome), true);
            const Proof expected = gate_proof(o.secret, "taihu-cp server", hello, answer.nonce, hello.nonce);
            if (welcome.kind != static_cast<std::uint32_t>(GateKind::welcome) ||
                !equal_constant_time(expected, welcome.proof))
              return finish("the server does not hold the cluster secret", true);
            finish({});
          });
        });
      });
    });
  });
  io.run();
  if (!error.empty()) {
    if (refused) raise<GateRefused>("{}", error);
    raise<NetError>("{}", error);
  }
  return socket.release();
}

}  // namespace taihu::transport
