// The node's side of the control port's handshake (transport/gatekeeper.hpp):
// admit_through_gate() proves the secret, checks the coordinator's proof and
// starts TLS where the welcome says so.

#include <asio.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <future>
#include <memory>
#include <string>

#include "core/common/check.hpp"
#include "transport/crypto.hpp"
#include "transport/gate_handshake.hpp"
#include "transport/gatekeeper.hpp"
#include "transport/stream.hpp"
#include "transport/tls_relay.hpp"

namespace taihu::transport {

namespace {

using asio::ip::tcp;
using Proof = GateProof;
using gate_handshake::gate_message;
using gate_handshake::peer_on_this_host;

// The client's side of a control-plane TLS connection: one for every
// pre-shared-key connection of this process, or one with these certificates.
std::shared_ptr<const TlsContext> client_tls_context(const TlsCertificates& certificates) {
  static const auto with_psk = std::make_shared<const TlsContext>(TlsContext::Role::client);
  if (!certificates.given()) return with_psk;
  return std::make_shared<const TlsContext>(TlsContext::Role::client, certificates);
}

// What the coordinator's verdict on this node's certificate says (gatekeeper.hpp).
std::string certificate_refusal(long error) {
  return fmt::format("rejected this node's certificate: {}; give this node a certificate that the cluster's CA "
                     "(the coordinator's ca_file) signed and that is valid now",
                     certificate_error_text(error));
}

// The client's TLS handshake on the relay's thread, the coordinator's verdict
// on this node's certificate where the cluster uses them, and then its relay;
// the caller waits at most `timeout` for it.
int start_client_tls(const GateClientOptions& o, IoThread& relay, tcp::socket::native_handle_type fd,
                     const tcp& protocol, const TlsKey& key, const TlsCertificates& certificates) {
  struct Attempt {
    std::shared_ptr<const TlsContext> context;  // as long as the handshake runs
    std::unique_ptr<Stream> stream;
    GateMessage verdict;
    std::promise<int> fd;
    std::string error;
    bool final = false;  // TLS's or the coordinator's verdict: trying again will not help

    void fail(std::string why, bool is_final) {
      error = std::move(why);
      final = is_final;
      stream->close();
      fd.set_value(-1);
    }
    void relay(const std::string& what) {
      try {
        fd.set_value(relay_over_tls(std::move(stream), what));
      } catch (...) {
        fd.set_exception(std::current_exception());
      }
    }
  };
  auto attempt = std::make_shared<Attempt>();
  attempt->context = client_tls_context(certificates);
  tcp::socket socket(relay.io());
  socket.assign(protocol, fd);
  attempt->stream = std::make_unique<Stream>(std::move(socket));
  std::future<int> done = attempt->fd.get_future();
  const std::string what = fmt::format("control plane to {}:{}", o.host, o.port);
  asio::post(relay.io(), [attempt, key, what] {
    attempt->stream->start_tls(*attempt->context, key, [attempt, what](const asio::error_code& ec) {
      if (ec) {
        // TLS's verdict (an alert, this node rejecting the coordinator's
        // certificate) is final; a connection that closed may not be.
        std::string why = "TLS failed: " + ec.message();
        if (const long rejected = attempt->stream->certificate_verdict(); rejected != 0)
          why += fmt::format("; the coordinator's certificate: {}; this node's CA file must hold the CA that signed it",
                             certificate_error_text(rejected));
        return attempt->fail(why, is_tls_error(ec));
      }
      if (!attempt->context->with_certificates()) return attempt->relay(what);
      attempt->stream->async_read(
          asio::buffer(&attempt->verdict, sizeof(GateMessage)), [attempt, what](const asio::error_code& ec, std::size_t) {
            const GateMessage& v = attempt->verdict;
            if (ec)
              return attempt->fail(fmt::format("closed the connection before its verdict on this node's certificate "
                                               "({})",
                                               ec.message()),
                                   is_tls_error(ec));
            if (v.magic == gate_magic && v.kind == static_cast<std::uint32_t>(GateKind::welcome))
              return attempt->relay(what);
            if (v.magic == gate_magic && v.kind == static_cast<std::uint32_t>(GateKind::refuse) &&
                v.reason == static_cast<std::uint32_t>(RefuseReason::certificate))
              return attempt->fail(certificate_refusal(v.detail), true);
            attempt->fail("malformed verdict on this node's certificate", true);
          });
    });
  });
  const bool timed_out = done.wait_for(o.timeout) != std::future_status::ready;
  if (timed_out) {
    // Closing the socket ends the handshake, which then answers with its error.
    asio::post(relay.io(), [attempt] {
      if (attempt->stream) attempt->stream->close();
    });
    done.wait();
    attempt->error = fmt::format("no TLS handshake within {} ms", o.timeout.count());
    attempt->final = false;  // a handshake that did not finish in time may next time
  }
  const int plain = done.get();
  if (plain < 0 && attempt->final) raise<GateRefused>("the coordinator proved the secret, but {}", attempt->error);
  if (plain < 0) raise<NetError>("the coordinator proved the secret, but {}", attempt->error);
  return plain;
}

// Why the coordinator refused this node, from its refusal message.
std::string refusal(const GateClientOptions& o, const GateMessage& m) {
  switch (static_cast<RefuseReason>(m.reason)) {
    case RefuseReason::version:
      return fmt::format("refused: protocol version {} (the coordinator speaks {})", o.version, m.version);
    case RefuseReason::authentication: return std::string("refused: wrong cluster secret");
    case RefuseReason::certificate:
      return std::string("refused: the cluster uses certificates; give this node its own "
                         "(taihu-node --certificate, --key, --ca-file)");
    case RefuseReason::tls_mode: {
      const auto theirs = tls_mode_of(m.detail);
      return fmt::format("refused: this node uses [cluster] tls = {}, the coordinator tls = {}; nodes of different "
                         "modes refuse each other: give every rank the same [cluster] tls",
                         o.tls ? tls_mode_name(*o.tls) : "?", theirs ? tls_mode_name(*theirs) : "unknown");
    }
    default: return std::string("refused: malformed handshake");
  }
}

// The handshake succeeded: the connection as the coordinator's welcome
// says, in TLS (keyed by the secret and both nonces) or plain.
GateConnection admitted(const GateClientOptions& o, IoThread& relay, tcp::socket& socket, const GateMessage& hello,
                        const GateMessage& answer, const GateMessage& welcome) {
  const bool certificates = (welcome.detail & GateDetail::certificates) != 0;
  if (certificates && !o.certificates.given()) {
    asio::error_code ignored;
    socket.close(ignored);
    raise<GateRefused>("the cluster uses certificates; give this node its own (taihu-node --certificate, --key, "
                       "--ca-file)");
  }
  asio::error_code local_error;
  const tcp::endpoint local = socket.local_endpoint(local_error);
  const std::string local_address = local_error ? std::string() : local.address().to_string();
  if ((welcome.detail & GateDetail::tls) == 0) return {socket.release(), false, certificates, local_address};
  const TlsKey key = tls_key(Plane::control, o.secret, hello.nonce, answer.nonce);
  const TlsCertificates none;
  return {start_client_tls(o, relay, socket.release(), local.protocol(), key, certificates ? o.certificates : none),
          true, certificates, local_address};
}

}  // namespace

GateConnection admit_through_gate(const GateClientOptions& o, IoThread& relay) {
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
  asio::async_connect(socket, endpoints, [&](const asio::error_code& ec, const tcp::endpoint&) {
    if (ec) return finish(ec.message());
    socket.set_option(tcp::no_delay(true));
    hello.detail = (peer_on_this_host(socket) ? GateDetail::same_host : 0) |
                   (o.certificates.given() ? GateDetail::certificates : 0) |
                   (o.tls ? static_cast<std::uint32_t>(*o.tls) << GateDetail::tls_mode_shift : 0);
    asio::async_write(socket, asio::buffer(&hello, sizeof hello), [&](const asio::error_code& ec, std::size_t) {
      if (ec) return finish(ec.message());
      asio::async_read(socket, asio::buffer(&answer, sizeof answer), [&](const asio::error_code& ec, std::size_t) {
        if (ec) return finish(fmt::format("closed during the handshake ({})", ec.message()));
        if (answer.magic != gate_magic) return finish("the server is not a taihu coordinator");
        if (answer.kind == static_cast<std::uint32_t>(GateKind::refuse)) return finish(refusal(o, answer), true);
        if (answer.kind != static_cast<std::uint32_t>(GateKind::challenge)) return finish("malformed challenge");
        proof = gate_message(o.version, GateKind::proof);
        proof.proof = gate_proof(o.secret, "taihu-cp client", hello, hello.detail, hello.nonce, answer.nonce);
        asio::async_write(socket, asio::buffer(&proof, sizeof proof), [&](const asio::error_code& ec, std::size_t) {
          if (ec) return finish(ec.message());
          asio::async_read(socket, asio::buffer(&welcome, sizeof welcome), [&](const asio::error_code& ec, std::size_t) {
            if (ec) return finish(fmt::format("closed during the handshake ({})", ec.message()));
            if (welcome.magic == gate_magic && welcome.kind == static_cast<std::uint32_t>(GateKind::refuse))
              return finish(refusal(o, welcome), true);
            const Proof expected =
                gate_proof(o.secret, "taihu-cp server", hello, welcome.detail, answer.nonce, hello.nonce);
            if (welcome.kind != static_cast<std::uint32_t>(GateKind::welcome) ||
                welcome.detail > (GateDetail::tls | GateDetail::certificates) ||
                !equal_constant_time(expected, welcome.proof))
              return finish("the server does not hold the cluster secret, or its welcome was altered on the way", true);
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
  return admitted(o, relay, socket, hello, answer, welcome);
}

}  // namespace taihu::transport
