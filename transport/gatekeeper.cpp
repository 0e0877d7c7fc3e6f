#include "transport/gatekeeper.hpp"

#include <asio.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include "transport/gate_handshake.hpp"
#include "transport/listener.hpp"
#include "transport/stream.hpp"
#include "transport/tls_relay.hpp"
#include "transport/log_limiter.hpp"
#include "transport/crypto.hpp"
#include "core/common/check.hpp"

namespace taihu::transport {
namespace {

using asio::ip::tcp;
using Proof = GateProof;
using gate_handshake::gate_message;
using gate_handshake::peer_on_this_host;

// The coordinator's decision for one connection (gatekeeper.hpp).
bool use_tls(TlsMode mode, bool client_sees_this_host, bool server_sees_this_host) {
  switch (mode) {
    case TlsMode::always: return true;
    case TlsMode::off: return false;
    case TlsMode::between_hosts: return !(client_sees_this_host && server_sees_this_host);
  }
  return true;
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

GateProof gate_proof(std::string_view secret, std::string_view role, const GateMessage& hello, std::uint32_t detail,
                     const GateProof& first, const GateProof& second) {
  return hmac_sha256(bytes_of(secret), {bytes_of(role), field_bytes(hello.version), field_bytes(hello.name),
                                        field_bytes(detail), first, second});
}

struct Gatekeeper::Impl : std::enable_shared_from_this<Gatekeeper::Impl> {
  GatekeeperOptions options;
  std::function<void(Admitted)> admit;
  asio::io_context* io = nullptr;  // the I/O thread's (control_plane_thread())
  std::shared_ptr<Listener> listener;
  bool closed = false;  // the Gatekeeper is gone: nothing more is admitted (io thread)
  std::unique_ptr<TlsContext> tls_context;  // the server's side; none with tls = off
  std::atomic<std::uint64_t> admitted{0}, refused_version{0}, refused_secret{0}, refused_garbage{0}, refused_tls{0},
      admitted_tls{0}, refused_tls_mode{0};
  // Separate limits, so that a flood of garbage cannot hide a wrong secret.
  LogLimiter garbage_log, secret_log, version_log, tls_log, certificate_log, rejected_log, mode_log;

  struct Pending {
    explicit Pending(tcp::socket s) : socket(std::move(s)), timer(socket.get_executor()) {}
    std::shared_ptr<Impl> gatekeeper;  // its handlers use it, also after ~Gatekeeper
    tcp::socket socket;
    asio::steady_timer timer;
    Listener::Ticket ticket;  // a place among the max_pending
    std::string peer;
    GateMessage hello, answer, proof;
    Proof server_nonce{};
    std::unique_ptr<Stream> secure;  // the socket once TLS starts on it
    bool done = false;
    bool lingering = false;  // refused through TLS: waiting for the client to close (give_verdict)
  };

  void on_connection(tcp::socket socket, Listener::Ticket ticket) {
    auto p = std::make_shared<Pending>(std::move(socket));
    p->gatekeeper = shared_from_this();
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
      if (p->lingering) return close(p);
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
    const Proof expected =
        gate_proof(options.secret, "taihu-cp client", p->hello, p->hello.detail, p->hello.nonce, p->server_nonce);
    if (p->proof.magic != gate_magic || p->proof.kind != static_cast<std::uint32_t>(GateKind::proof) ||
        !equal_constant_time(expected, p->proof.proof)) {
      ++refused_secret;
      secret_log.warn("{}: refused node '{}' ({}): it does not hold the cluster secret", options.what,
                      name_of(p->hello), p->peer);
      return refuse(p, RefuseReason::authentication);
    }
    const bool certificates = options.certificates.given();
    if (certificates && (p->hello.detail & GateDetail::certificates) == 0) {
      ++refused_tls;
      certificate_log.warn("{}: refused node '{}' ({}): this cluster uses certificates, and it has none",
                           options.what, name_of(p->hello), p->peer);
      return refuse(p, RefuseReason::certificate);
    }
    // A cluster launcher's rank names its own mode (under the client's
    // proof): it must be this side's, never silently become it.
    if (const std::uint32_t mode = (p->hello.detail & GateDetail::tls_mode_mask) >> GateDetail::tls_mode_shift;
        mode != 0 && mode != static_cast<std::uint32_t>(options.tls)) {
      ++refused_tls_mode;
      const auto named = tls_mode_of(mode);
      mode_log.warn("{}: refused node '{}' ({}): it uses [cluster] tls = {}, this side tls = {} (every node needs the "
                    "same [cluster] tls)",
                    options.what, name_of(p->hello), p->peer, named ? tls_mode_name(*named) : "unknown",
                    tls_mode_name(options.tls));
      return refuse(p, RefuseReason::tls_mode, static_cast<std::uint32_t>(options.tls));
    }
    const bool with_tls =
        use_tls(options.tls, (p->hello.detail & GateDetail::same_host) != 0, peer_on_this_host(p->socket));
    p->answer = gate_message(options.version, GateKind::welcome);
    p->answer.detail = (with_tls ? GateDetail::tls : 0) | (certificates ? GateDetail::certificates : 0);
    p->answer.proof =
        gate_proof(options.secret, "taihu-cp server", p->hello, p->answer.detail, p->server_nonce, p->hello.nonce);
    const auto welcome = asio::buffer(&p->answer, sizeof(GateMessage));
    asio::async_write(p->socket, welcome, [this, p, with_tls](const asio::error_code& ec, std::size_t) {
      if (ec || p->done) return close(p);
      if (!with_tls) return hand_on(p, p->socket.release(), false);
      // Still within the handshake's time and place: a client that proved the
      // secret but cannot finish TLS is refused like any other.
      p->secure = std::make_unique<Stream>(std::move(p->socket));
      const TlsKey key = tls_key(Plane::control, options.secret, p->hello.nonce, p->server_nonce);
      p->secure->start_tls(*tls_context, key, [this, p](const asio::error_code& ec) {
        if (p->done) return;
        if (ec) {
          ++refused_tls;
          tls_log.warn("{}: refused node '{}' ({}): it proved the secret but failed the TLS handshake ({})",
                       options.what, name_of(p->hello), p->peer, ec.message());
          return close(p);
        }
        if (tls_context->with_certificates()) return give_verdict(p);
        relay(p);
      });
    });
  }

  // With certificates, the handshake completed whatever the client's
  // certificate (TlsContext::Verification::after_handshake): this side's
  // verdict on it goes first, through TLS (gatekeeper.hpp). A rejected client
  // is told why, and the connection closes once it has read that.
  void give_verdict(const std::shared_ptr<Pending>& p) {
    const long verdict = p->secure->certificate_verdict();
    p->answer = gate_message(options.version, verdict == 0 ? GateKind::welcome : GateKind::refuse);
    if (verdict != 0) {
      ++refused_tls;
      rejected_log.warn("{}: refused node '{}' ({}): its certificate failed verification: {}", options.what,
                        name_of(p->hello), p->peer, certificate_error_text(verdict));
      p->answer.reason = static_cast<std::uint32_t>(RefuseReason::certificate);
      p->answer.detail = static_cast<std::uint32_t>(verdict);
    }
    p->secure->async_write(asio::buffer(&p->answer, sizeof(GateMessage)),
                           [this, p, verdict](const asio::error_code& ec, std::size_t) {
                             if (ec || p->done) return close(p);
                             if (verdict == 0) return relay(p);
                             // Closed by the client once it has read the verdict (else by the handshake's
                             // timer): closing first could reset the connection before the verdict arrives.
                             p->lingering = true;
                             p->secure->async_read_some(asio::buffer(p->proof.proof),
                                                        [this, p](const asio::error_code&, std::size_t) { close(p); });
                           });
  }

  // Hands the TLS connection on, as the plaintext end of its relay.
  void relay(const std::shared_ptr<Pending>& p) {
    const std::string what = fmt::format("{}: node '{}' ({})", options.what, name_of(p->hello), p->peer);
    int plain = -1;
    try {
      plain = relay_over_tls(std::move(p->secure), what);
    } catch (const NetError& e) {  // no socket pair: out of descriptors
      spdlog::error("{}", e.what());
      return close(p);
    }
    ++admitted_tls;
    hand_on(p, plain, true);
  }

  // The peer is authenticated (and its TLS up): `fd` is what CAF speaks on.
  void hand_on(const std::shared_ptr<Pending>& p, int fd, bool tls) {
    if (closed) {
      ::close(fd);
      return close(p);
    }
    p->done = true;
    p->timer.cancel();
    ++admitted;
    Admitted a{fd, name_of(p->hello), p->peer, tls};
    p->ticket.reset();  // authenticated: no longer a pending stranger
    admit(std::move(a));
  }

  void garbage(const std::shared_ptr<Pending>& p, const std::string& why) {
    if (p->done) return;
    ++refused_garbage;
    garbage_log.warn("{}: closed a connection from {}: {}", options.what, p->peer, why);
    close(p);
  }

  void refuse(const std::shared_ptr<Pending>& p, RefuseReason reason, std::uint32_t detail = 0) {
    p->answer = gate_message(options.version, GateKind::refuse);
    p->answer.reason = static_cast<std::uint32_t>(reason);
    p->answer.detail = detail;
    asio::async_write(p->socket, asio::buffer(&p->answer, sizeof(GateMessage)),
                      [this, p](const asio::error_code&, std::size_t) { close(p); });
  }

  void close(const std::shared_ptr<Pending>& p) {
    p->done = true;
    p->timer.cancel();
    asio::error_code ignored;
    if (p->secure) p->secure->close();
    p->socket.shutdown(tcp::socket::shutdown_both, ignored);
    p->socket.close(ignored);
    p->ticket.reset();
  }
};

Gatekeeper::Gatekeeper(GatekeeperOptions options, std::function<void(Admitted)> admit, IoThread& thread)
    : impl_(std::make_shared<Impl>()) {
  impl_->options = std::move(options);
  impl_->admit = std::move(admit);
  impl_->io = &thread.io();
  if (impl_->options.tls != TlsMode::off)
    impl_->tls_context = std::make_unique<TlsContext>(TlsContext::Role::server, impl_->options.certificates,
                                                      TlsContext::Verification::after_handshake);
  ListenerOptions lo;
  lo.what = impl_->options.what;
  lo.address = impl_->options.listen_address;
  lo.port = impl_->options.port;
  lo.max_open = impl_->options.max_pending;
  impl_->listener = std::make_shared<Listener>(*impl_->io, lo, [impl = impl_.get()](tcp::socket s, Listener::Ticket t) {
    impl->on_connection(std::move(s), std::move(t));
  });
  asio::post(*impl_->io, [listener = impl_->listener] { listener->start(); });
}

Gatekeeper::~Gatekeeper() {
  // On the I/O thread: no more accepts, every handshake closed, nothing more
  // admitted. Admitted connections and their relays go on there.
  std::promise<void> shut;
  asio::post(*impl_->io, [impl = impl_, &shut] {
    impl->closed = true;
    impl->listener->stop();
    shut.set_value();
  });
  if (shut.get_future().wait_for(std::chrono::seconds(10)) != std::future_status::ready)
    spdlog::error("{}: the control-plane I/O thread did not answer within 10 s", impl_->options.what);
}

std::uint16_t Gatekeeper::port() const { return impl_->listener->port(); }

GatekeeperStats Gatekeeper::stats() const {
  return {impl_->admitted.load(), impl_->refused_version.load(), impl_->refused_secret.load(),
          impl_->refused_garbage.load(), impl_->listener->stats().over_limit, impl_->refused_tls.load(),
          impl_->admitted_tls.load(), impl_->refused_tls_mode.load()};
}

}  // namespace taihu::transport
