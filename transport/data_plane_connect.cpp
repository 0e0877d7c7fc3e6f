// The client's side of a connection (transport/data_plane.hpp): connect,
// hello, the server's answer, the proof of the secret and the server's
// Welcome, the same-host probe and its authenticated answer, then TLS unless
// the connection skips it (wire.hpp has the frames).

#include "transport/data_plane_impl.hpp"

#include <future>

#include "core/common/check.hpp"

namespace taihu::transport {

using namespace data_plane_detail;

// One connection's handshake, a step per member, on the I/O thread. It keeps
// itself alive through its callbacks and settles its result once: empty on
// success, else why the connection failed (and the socket is closed).
class DataPlane::Impl::ClientHandshake : public std::enable_shared_from_this<ClientHandshake> {
 public:
  ClientHandshake(DataPlane::Impl& im, std::shared_ptr<DataPlane::Impl::Outbound> out)
      : im_(im), o_(im.options), out_(std::move(out)), timer_(im.io) {
    hello_.version = o_.version;
    hello_.node = o_.node;
    hello_.detail = static_cast<std::uint32_t>(o_.tls);
    hello_.nonce = fresh_nonce();
  }

  std::future<std::string> result() { return done_.get_future(); }

  void start(const std::string& host, std::uint16_t port) {
    timer_.expires_after(o_.handshake_timeout);
    timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
      if (!ec) self->finish(fmt::format("no answer within {} ms", self->o_.handshake_timeout.count()));
    });
    asio::error_code ec;
    tcp::resolver resolver(im_.io);
    auto endpoints = resolver.resolve(host, std::to_string(port), ec);
    if (ec) return finish("cannot resolve: " + ec.message());
    asio::async_connect(out_->stream.socket(), endpoints,
                        [self = shared_from_this()](const asio::error_code& ec, const tcp::endpoint&) {
                          if (ec) return self->finish(ec.message());
                          self->out_->stream.socket().set_option(tcp::no_delay(true));
                          self->send_hello();
                        });
  }

 private:
  void send_hello() {
    out_->stream.async_write(asio::buffer(&hello_, sizeof(Hello)),
                             [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
                               if (ec) return self->finish(ec.message());
                               self->read_answer();
                             });
  }

  void read_answer() {
    out_->stream.async_read(asio::buffer(&answer_, sizeof(Hello)),
                            [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
                              if (ec) return self->finish("closed during the handshake (" + ec.message() + ")");
                              self->check_answer();
                            });
  }

  void check_answer() {
    const Hello& a = answer_;
    if (a.magic != hello_magic) return finish("the server does not speak the taihu data-plane protocol");
    if (a.kind == 1 && a.detail == static_cast<std::uint32_t>(RefuseReason::tls_mode))
      return finish(fmt::format("refused by the server: it uses another TLS mode than this node's tls = {} "
                                "(every node needs the same [cluster] tls)", tls_mode_name(o_.tls)));
    if (a.kind == 1) {
      return finish(fmt::format("refused by the server: {} (server speaks version {}, this node {})",
                                reason_text(a.detail), a.version, o_.version));
    }
    if (a.detail != static_cast<std::uint32_t>(o_.tls))
      return finish(fmt::format("the server uses tls = {}, this node tls = {} (every node needs the same "
                                "[cluster] tls)", mode_text(a.detail), tls_mode_name(o_.tls)));
    client_proof_ = handshake_proof(o_.secret, "taihu-dp client", o_.version, o_.node, hello_.nonce, a.nonce);
    out_->stream.async_write(asio::buffer(client_proof_), [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
      if (ec) return self->finish(ec.message());
      self->read_welcome();
    });
  }

  // A Welcome digest, or (on a wrong secret) the first 32 bytes of a Refuse.
  void read_welcome() {
    out_->stream.async_read(asio::buffer(welcome_), [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
      if (ec) return self->finish("closed during the handshake (" + ec.message() + ")");
      self->check_welcome();
    });
  }

  void check_welcome() {
    const Digest expected = handshake_proof(o_.secret, "taihu-dp server", o_.version, o_.node, answer_.nonce, hello_.nonce);
    if (!equal_constant_time(expected, welcome_)) {
      if (std::memcmp(welcome_.data(), hello_magic.data(), hello_magic.size()) == 0)
        return finish("refused by the server: wrong cluster secret");
      return finish("the server does not hold the cluster secret");
    }
    send_probe();
  }

  // Same host and user? The server tries to read our token (and, where this
  // node offers one, takes the shared-memory channel).
  void send_probe() {
    probe_.magic = probe_frame_magic;
    probe_.total_bytes = token_.size();
    if (o_.remote_read_min_bytes > 0 && o_.tls != TlsMode::always) {
      const Nonce token = fresh_nonce();
      std::copy(token.begin(), token.end(), token_.begin());
      span_ = RemoteSpan{reinterpret_cast<std::uint64_t>(token_.data()), static_cast<std::uint32_t>(::getpid()), 0};
      if (o_.same_host_channel) {
        try {
          channel_ = ShmChannel::create();
          span_.reserved = static_cast<std::uint32_t>(channel_->fd()) + 1;
          if (SharedArena* arena = SharedArena::installed()) channel_->announce_arena(arena->fd(), arena->base());
        } catch (const NetError& e) {
          spdlog::warn("data plane node {}: {}; same-host messages go through the socket", o_.node, e.what());
        }
      }
    }
    probe_mac_ = probe_mac(o_.secret, o_.version, o_.node, span_, token_, hello_.nonce, answer_.nonce);
    const BufferList<asio::const_buffer> buffers{asio::buffer(&probe_, sizeof(FrameHeader)),
                                                 asio::buffer(&span_, sizeof(RemoteSpan)), asio::buffer(token_),
                                                 asio::buffer(probe_mac_)};
    out_->stream.async_write(buffers, [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
      if (ec) return self->finish(ec.message());
      self->read_probe_answer();
    });
  }

  void read_probe_answer() {
    const BufferList<asio::mutable_buffer> answer{asio::buffer(&readable_, 1), asio::buffer(answer_mac_)};
    out_->stream.async_read(answer, [self = shared_from_this()](const asio::error_code& ec, std::size_t) {
      if (ec) return self->finish("closed during the same-host probe (" + ec.message() + ")");
      self->check_probe_answer();
    });
  }

  void check_probe_answer() {
    const Digest expected = answer_mac(o_.secret, o_.version, o_.node, readable_, answer_.nonce, hello_.nonce);
    if (!equal_constant_time(expected, answer_mac_))
      return finish("the server's answer to the same-host probe is not authentic");
    if (readable_ > 2 || (readable_ > 0 && span_.pid == 0) || (readable_ == 2 && !channel_))
      return finish(fmt::format("the server answered {} to a same-host probe that did not offer it", readable_));
    out_->remote_reads = readable_ == 1 || readable_ == 2;
    if (readable_ == 2) out_->channel = std::move(channel_);
    if (!im_.uses_tls(out_->channel != nullptr)) return finish({});
    out_->stream.start_tls(*im_.tls_client, tls_key(Plane::data, o_.secret, hello_.nonce, answer_.nonce),
                           [self = shared_from_this()](const asio::error_code& ec) {
                             self->finish(ec ? "TLS handshake failed: " + ec.message() : std::string());
                           });
  }

  void finish(std::string error) {
    if (finished_) return;
    finished_ = true;
    timer_.cancel();
    if (!error.empty()) out_->stream.close();
    done_.set_value(std::move(error));
  }

  DataPlane::Impl& im_;
  const DataPlaneOptions& o_;
  std::shared_ptr<DataPlane::Impl::Outbound> out_;
  Hello hello_, answer_;
  Digest client_proof_{}, welcome_{};
  FrameHeader probe_;
  RemoteSpan span_{};                     // pid 0: no same-host reads offered
  std::array<std::uint8_t, 32> token_{};  // the probe reads these from this process
  Digest probe_mac_{}, answer_mac_{};
  std::uint8_t readable_ = 0;
  std::unique_ptr<ShmChannel> channel_;  // offered in the probe
  asio::steady_timer timer_;
  std::promise<std::string> done_;
  bool finished_ = false;
};

void DataPlane::connect(int node, const std::string& host, std::uint16_t port) {
  Impl& im = *impl_;
  auto out = std::make_shared<Impl::Outbound>(im.io);
  out->node = node;
  auto handshake = std::make_shared<Impl::ClientHandshake>(im, out);
  auto result = handshake->result();
  asio::post(im.io, [handshake, host, port] { handshake->start(host, port); });
  const std::string error = result.get();
  if (!error.empty())
    raise<NetError>("data plane node {}: cannot connect to node {} at {}:{}: {}", im.options.node, node, host, port,
                    error);
  {
    std::lock_guard lock(im.mutex);
    im.outbound[node] = out;
  }
  if (out->channel) im.remember(out);
  if (out->stream.secure()) ++im.stats.tls_connections;
  asio::post(im.io, [&im, out] {
    if (out->channel) {
      im.watch_bells(out);
    } else {
      im.watch(out);
    }
  });
}

}  // namespace taihu::transport
