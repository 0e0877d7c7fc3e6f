#include "transport/data_plane.hpp"

#include "transport/data_plane_impl.hpp"

#include "transport/addresses.hpp"
#include "core/common/check.hpp"

namespace taihu::transport {

using namespace data_plane_detail;

void DataPlane::Impl::start() {
  if (options.tls != TlsMode::off) {
    tls_client = std::make_unique<TlsContext>(TlsContext::Role::client, options.certificates);
    tls_server = std::make_unique<TlsContext>(TlsContext::Role::server, options.certificates);
  }
  ListenerOptions lo;
  lo.what = fmt::format("data plane node {}", options.node);
  lo.address = options.listen_address;
  lo.port = options.port;
  lo.max_open = options.max_pending;
  listener = std::make_shared<Listener>(io, lo, [this](tcp::socket socket, Listener::Ticket ticket) {
    auto in = std::make_shared<Inbound>(std::move(socket));
    in->ticket = std::move(ticket);
    in->ticket->evict = [this, weak = std::weak_ptr<Inbound>(in)] {
      if (auto i = weak.lock()) close(i);
    };
    in->peer = endpoint_text(in->stream.socket());
    asio::error_code ignored;
    in->stream.socket().set_option(tcp::no_delay(true), ignored);
    begin_handshake(in);
  });
  listener->start();
  thread = std::thread([self = shared_from_this()] {
    for (;;) {
      try {
        self->io.run();
        return;
      } catch (const std::exception& e) {
        spdlog::error("data plane node {}: I/O thread: {}", self->options.node, e.what());
      }
    }
  });
}

void DataPlane::Impl::stop() {
  io.stop();
  if (thread.joinable()) thread.join();
  std::lock_guard lock(sink_mutex);
  sink_open = false;
}

void DataPlane::Impl::report_unreadable(int node, const std::string& why) {
  std::lock_guard lock(sink_mutex);
  if (sink_open) sink->peer_lost(node, why);
}

void DataPlane::Impl::remember(const std::shared_ptr<Inbound>& in) {
  remember_in(inbound_channels, in, in->channel->receiver_polling());
}

void DataPlane::Impl::remember(const std::shared_ptr<Outbound>& out) {
  remember_in(outbound_channels, out, out->channel->sender_polling());
}

std::size_t RemoteMessage::bytes() const { return state_->bytes; }

const void* RemoteMessage::data() const { return state_->mapped; }

void RemoteMessage::read(std::size_t offset, std::size_t n, void* to) const {
  const State& s = *state_;
  require<NetError>(offset <= s.bytes && n <= s.bytes - offset, "remote message of {} bytes: read of [{}, +{})",
                    s.bytes, offset, n);
  if (s.mapped != nullptr) {
    if (n > 0) std::memcpy(to, s.mapped + offset, n);
    return;
  }
  const std::string error = read_remote(s.pid, s.address + offset, to, n);
  if (error.empty()) return;
  const std::string why = fmt::format("cannot read node {}'s memory (process {}): {}", s.sender, s.pid, error);
  if (s.unreadable) s.unreadable(why);
  raise<NetError>("{}", why);
}

DataPlane::DataPlane(DataPlaneOptions options, FrameSink* sink)
    : impl_(std::make_shared<Impl>(std::move(options), sink)) {
  require<NetError>(sink != nullptr, "DataPlane: a sink is required");
  require<NetError>(!impl_->options.secret.empty(), "DataPlane: the cluster secret is empty");
  require<NetError>(tls_mode_of(static_cast<std::uint32_t>(impl_->options.tls)).has_value(),
                    "DataPlane: unknown TLS mode {}", static_cast<std::uint32_t>(impl_->options.tls));
  if (impl_->options.tls == TlsMode::off)
    spdlog::warn("data plane node {}: tls = off: chunks travel in plaintext, and whoever can reach the network "
                 "between hosts can read and alter them",
                 impl_->options.node);
  if (impl_->options.same_host_channel && impl_->options.remote_read_min_bytes > 0 &&
      impl_->options.tls != TlsMode::always) {
    try {
      SharedArena::install();  // large buffers allocated from now on can be read in place by peers here
    } catch (const std::exception& e) {
      spdlog::warn("data plane node {}: no shared arena ({}); peers on this host read through the kernel",
                   impl_->options.node, e.what());
    }
  }
  try {
    impl_->start();
  } catch (const std::system_error& e) {
    const std::string hint = listen_failure_hint(e.code(), impl_->options.listen_address);
    raise<NetError>("data plane: cannot listen on {}:{}: {}{}{}", impl_->options.listen_address, impl_->options.port,
                    e.what(), hint.empty() ? "" : ": ", hint);
  }
}

DataPlane::~DataPlane() { impl_->stop(); }

std::uint16_t DataPlane::port() const { return impl_->listener->port(); }
int DataPlane::node() const { return impl_->options.node; }

bool DataPlane::connected(int node) const {
  std::lock_guard lock(impl_->mutex);
  return impl_->outbound.contains(node);
}

void DataPlane::send(int node, const ChunkHeader& header, const void* data, std::size_t bytes,
                     std::shared_ptr<const void> keep_alive) {
  Impl& im = *impl_;
  std::shared_ptr<Impl::Outbound> out;
  {
    std::lock_guard lock(im.mutex);
    auto it = im.outbound.find(node);
    if (it != im.outbound.end()) out = it->second;
  }
  require<NetError>(out != nullptr, "data plane node {}: no connection to node {}", im.options.node, node);
  Outgoing m{header, static_cast<const char*>(data), bytes, 0, std::move(keep_alive)};
  if (out->channel) return im.send_by_channel(out, std::move(m));
  asio::post(im.io, [&im, out, m = std::move(m)]() mutable {
    if (out->lost) return;
    out->queue.push_back(std::move(m));
    if (!out->writing) im.write_next(out);
  });
}

DataPlaneStats DataPlane::stats() const {
  const auto& s = impl_->stats;
  return {s.bytes_sent,      s.bytes_received, s.messages_sent,   s.messages_received, s.messages_read_remotely,
          s.messages_polled, s.doorbells_sent, s.accepted,        s.tls_connections,   s.refused_version,
          s.refused_secret,  s.refused_garbage, s.refused_tls};
}

int DataPlane::channels() const { return impl_->channel_count.load(); }

std::size_t DataPlane::poll() {
  Impl& im = *impl_;
  std::unique_lock lock(im.channels_mutex, std::try_to_lock);
  if (!lock.owns_lock()) return 0;
  return im.poll_channels(false);
}

void DataPlane::hold_polling(bool hold) {
  Impl& im = *impl_;
  std::lock_guard lock(im.channels_mutex);
  if (hold) {
    if (im.holds++ == 0) im.set_polling(1);
    return;
  }
  require<NetError>(im.holds > 0, "data plane node {}: hold_polling(false) without a hold", im.options.node);
  if (--im.holds > 0) return;
  im.set_polling(0);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  im.poll_channels(true);  // what came while peers thought we were looking
}

}  // namespace taihu::transport
