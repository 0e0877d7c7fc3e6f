// The server's side of a connection's handshake (transport/data_plane.hpp):
// hello, proof of the secret, the same-host probe, TLS; refusals.

#include "transport/data_plane_impl.hpp"

namespace taihu::transport {

using namespace data_plane_detail;

void DataPlane::Impl::refuse(const std::shared_ptr<Inbound>& in, const std::string& why) {
  refusal_log.warn("data plane node {}: refused connection from {}: {}", options.node, in->peer, why);
  close(in);
}

void DataPlane::Impl::close(const std::shared_ptr<Inbound>& in) {
  in->timer.cancel();
  std::lock_guard lock(in->ack_mutex);  // no doorbell write on a closed descriptor
  in->closed = true;
  in->stream.close();
}

void DataPlane::Impl::send_refusal(const std::shared_ptr<Inbound>& in, RefuseReason reason, const std::string& why) {
  auto refusal = std::make_shared<Hello>();
  refusal->version = options.version;
  refusal->kind = 1;
  refusal->detail = static_cast<std::uint32_t>(reason);
  refusal_log.warn("data plane node {}: refused connection from {}: {}", options.node, in->peer, why);
  in->stream.async_write(asio::buffer(refusal.get(), sizeof(Hello)),
                         [this, in, refusal](const asio::error_code&, std::size_t) { close(in); });
}

void DataPlane::Impl::begin_handshake(const std::shared_ptr<Inbound>& in) {
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

void DataPlane::Impl::on_hello(const std::shared_ptr<Inbound>& in) {
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

void DataPlane::Impl::on_proof(const std::shared_ptr<Inbound>& in) {
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

void DataPlane::Impl::read_probe(const std::shared_ptr<Inbound>& in) {
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

void DataPlane::Impl::answer_probe(const std::shared_ptr<Inbound>& in) {
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

void DataPlane::Impl::start_tls(const std::shared_ptr<Inbound>& in) {
  const TlsKey key = tls_key(Plane::data, options.secret, in->hello.nonce, in->server_nonce);
  in->stream.start_tls(*tls_server, key, [this, in](const asio::error_code& ec) {
    if (!ec) return ready(in);
    if (!in->stream.socket().is_open()) return;  // timed out, and refused for that
    ++stats.refused_tls;
    refuse(in, fmt::format("node {}: TLS handshake failed: {}", in->node, ec.message()));
  });
}

void DataPlane::Impl::ready(const std::shared_ptr<Inbound>& in) {
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

void DataPlane::Impl::probe_same_host(const std::shared_ptr<Inbound>& in) {
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

}  // namespace taihu::transport
