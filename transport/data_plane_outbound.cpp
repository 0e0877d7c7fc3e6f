// Sending (transport/data_plane.hpp): frames written on a connection's
// socket, or descriptors through its same-host channel, and the
// acknowledgements that free the sender's memory.

#include "transport/data_plane_impl.hpp"

namespace taihu::transport {

using namespace data_plane_detail;

void DataPlane::Impl::lose_outbound(const std::shared_ptr<Outbound>& out, const std::string& why) {
  {
    std::lock_guard lock(out->channel_mutex);
    if (out->lost) return;
    out->lost = true;
    out->queue.clear();
    out->awaiting_ack.clear();
    out->overflow.clear();
    out->stream.close();
    out->overflow_timer.cancel();
  }
  if (out->channel) forget(out);
  sink->peer_lost(out->node, why);
}

void DataPlane::Impl::outbound_protocol_error(const std::shared_ptr<Outbound>& out, const std::string& why) {
  spdlog::warn("data plane node {}: protocol error from node {}: {}", options.node, out->node, why);
  lose_outbound(out, "protocol error: " + why);
}

std::string DataPlane::Impl::reap_acks(Outbound& out) {
  for (;;) {
    bool corrupt = false;
    const auto a = out.channel->pop_ack(&corrupt);
    if (corrupt) return "impossible indices in the channel's ack ring";
    if (!a) return {};
    auto it = out.awaiting_ack.find(*a);
    if (it == out.awaiting_ack.end()) return fmt::format("acknowledgement of unknown message {}", *a);
    stats.bytes_sent += it->second.second;
    ++stats.messages_sent;
    out.awaiting_ack.erase(it);
  }
}

std::string DataPlane::Impl::reap_and_flush(Outbound& out) {
  std::string error = reap_acks(out);
  if (error.empty()) flush_overflow(out);
  return error;
}

void DataPlane::Impl::flush_overflow(Outbound& out) {
  bool pushed = false;
  while (!out.overflow.empty()) {
    Outgoing& m = out.overflow.front();
    const MessageDescriptor d{m.chunk, reinterpret_cast<std::uint64_t>(m.data), m.bytes, out.remote_frames, 0};
    if (!out.channel->push_message(d)) break;
    out.awaiting_ack.emplace(out.remote_frames++, std::pair{std::move(m.keep_alive), m.bytes});
    out.overflow.pop_front();
    pushed = true;
  }
  if (pushed && needs_bell(out.channel->receiver_polling(), out.channel->message_bell())) {
    ring(out.stream.socket().native_handle());
    ++stats.doorbells_sent;
  }
}

void DataPlane::Impl::retry_overflow(const std::shared_ptr<Outbound>& out) {
  if (out->overflow_timer_armed || out->lost) return;
  out->overflow_timer_armed = true;
  out->overflow_timer.expires_after(std::chrono::milliseconds(1));
  out->overflow_timer.async_wait([this, out](const asio::error_code&) {
    out->overflow_timer_armed = false;
    bool waiting = false;
    {
      std::lock_guard lock(out->channel_mutex);
      if (out->lost) return;
      flush_overflow(*out);
      waiting = !out->overflow.empty();
    }
    if (waiting) retry_overflow(out);
  });
}

void DataPlane::Impl::watch_bells(const std::shared_ptr<Outbound>& out) {
  out->stream.async_read_some(asio::buffer(out->bells), [this, out](const asio::error_code& ec, std::size_t n) {
    if (out->lost) return;
    if (ec) return lose_outbound(out, ec == asio::error::eof ? std::string("connection closed") : ec.message());
    if (std::any_of(out->bells.begin(), out->bells.begin() + static_cast<std::ptrdiff_t>(n),
                    [](char b) { return b != 1; }))
      return lose_outbound(out, "unexpected bytes from the server");
    std::string error;
    {
      std::lock_guard lock(out->channel_mutex);
      out->channel->ack_bell().store(0, std::memory_order_seq_cst);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      error = reap_and_flush(*out);
    }
    if (!error.empty()) return outbound_protocol_error(out, error);
    watch_bells(out);
  });
}

void DataPlane::Impl::send_by_channel(const std::shared_ptr<Outbound>& out, Outgoing m) {
  std::string error;
  bool waiting = false;
  {
    std::lock_guard lock(out->channel_mutex);
    if (out->lost) return;
    out->overflow.push_back(std::move(m));
    error = reap_and_flush(*out);
    waiting = !out->overflow.empty();
  }
  if (!error.empty()) {
    asio::post(io, [this, out, error] { outbound_protocol_error(out, error); });
  } else if (waiting) {
    asio::post(io, [this, out] { retry_overflow(out); });
  }
}

std::size_t DataPlane::Impl::poll_channels(bool wait) {
  std::size_t taken = 0;
  for (const auto& in : inbound_channels) taken += drain(in, wait, !wait);
  for (const auto& out : outbound_channels) {
    std::unique_lock lock(out->channel_mutex, std::defer_lock);
    if (wait) {
      lock.lock();
    } else if (!lock.try_lock()) {
      continue;
    }
    if (out->lost) continue;
    if (std::string error = reap_and_flush(*out); !error.empty())
      asio::post(io, [this, out, error] { outbound_protocol_error(out, error); });
  }
  return taken;
}

void DataPlane::Impl::set_polling(std::uint32_t value) {
  for (const auto& in : inbound_channels) in->channel->receiver_polling().store(value, std::memory_order_seq_cst);
  for (const auto& out : outbound_channels) out->channel->sender_polling().store(value, std::memory_order_seq_cst);
}

void DataPlane::Impl::write_next(const std::shared_ptr<Outbound>& out) {
  if (out->lost || out->queue.empty()) {
    out->writing = false;
    return;
  }
  out->writing = true;
  Outgoing& m = out->queue.front();
  if (out->remote_reads && options.remote_read_min_bytes > 0 && m.bytes >= options.remote_read_min_bytes)
    return write_remote(out);
  const std::size_t part = std::min(options.part_bytes, m.bytes - m.sent);
  out->header = FrameHeader{};
  out->header.part_bytes = static_cast<std::uint32_t>(part);
  out->header.total_bytes = m.bytes;
  out->header.part_offset = m.sent;
  out->header.chunk = m.chunk;
  const BufferList<asio::const_buffer> buffers{asio::buffer(&out->header, sizeof(FrameHeader)),
                                               asio::buffer(m.data + m.sent, part)};
  out->stream.async_write(buffers, [this, out, part](const asio::error_code& ec, std::size_t) {
    if (out->lost) return;
    if (ec) return lose_outbound(out, ec.message());
    Outgoing& m = out->queue.front();
    m.sent += part;
    stats.bytes_sent += part;
    if (m.sent == m.bytes) {
      ++stats.messages_sent;
      out->queue.pop_front();
    }
    write_next(out);
  });
}

void DataPlane::Impl::write_remote(const std::shared_ptr<Outbound>& out) {
  Outgoing& m = out->queue.front();
  out->header = FrameHeader{};
  out->header.magic = remote_frame_magic;
  out->header.total_bytes = m.bytes;
  out->header.chunk = m.chunk;
  out->span = RemoteSpan{reinterpret_cast<std::uint64_t>(m.data), static_cast<std::uint32_t>(::getpid()), 0};
  // Awaited from now on: the server's ack may be handled before this
  // write's completion.
  out->awaiting_ack.emplace(out->remote_frames++, std::pair{std::move(m.keep_alive), m.bytes});
  const BufferList<asio::const_buffer> buffers{asio::buffer(&out->header, sizeof(FrameHeader)),
                                               asio::buffer(&out->span, sizeof(RemoteSpan))};
  out->stream.async_write(buffers, [this, out](const asio::error_code& ec, std::size_t) {
    if (out->lost) return;
    if (ec) return lose_outbound(out, ec.message());
    out->queue.pop_front();
    write_next(out);
  });
}

void DataPlane::Impl::watch(const std::shared_ptr<Outbound>& out) {
  out->stream.async_read(asio::buffer(&out->ack, sizeof out->ack), [this, out](const asio::error_code& ec, std::size_t) {
    if (out->lost) return;
    if (is_tls_error(ec)) return outbound_protocol_error(out, "TLS: " + ec.message());
    if (ec) return lose_outbound(out, ec == asio::error::eof ? std::string("connection closed") : ec.message());
    auto it = out->awaiting_ack.find(out->ack);
    if (it == out->awaiting_ack.end()) return lose_outbound(out, "unexpected bytes from the server");
    stats.bytes_sent += it->second.second;
    ++stats.messages_sent;
    out->awaiting_ack.erase(it);
    watch(out);
  });
}

}  // namespace taihu::transport
