// What an inbound connection brings (transport/data_plane.hpp): frame
// headers and parts, messages read from a same-host sender's memory, the
// doorbells and the channel's descriptors, and the acknowledgements back.

#include "transport/data_plane_impl.hpp"

namespace taihu::transport {

using namespace data_plane_detail;

void DataPlane::Impl::lose_inbound(const std::shared_ptr<Inbound>& in, const std::string& why) {
  if (in->closed) return;
  close(in);
  if (in->channel) forget(in);
  sink->peer_lost(in->node, why);
}

void DataPlane::Impl::read_header(const std::shared_ptr<Inbound>& in) {
  in->stream.async_read(asio::buffer(&in->header, sizeof(FrameHeader)),
                        [this, in](const asio::error_code& ec, std::size_t) {
                          if (ec) return read_failed(in, ec, "connection closed");
                          on_header(in);
                        });
}

void DataPlane::Impl::read_failed(const std::shared_ptr<Inbound>& in, const asio::error_code& ec, const char* closed) {
  if (is_tls_error(ec)) return protocol_error(in, "TLS: " + ec.message());
  lose_inbound(in, ec == asio::error::eof ? std::string(closed) : ec.message());
}

void DataPlane::Impl::protocol_error(const std::shared_ptr<Inbound>& in, const std::string& why) {
  spdlog::warn("data plane node {}: protocol error from node {} ({}): {}", options.node, in->node, in->peer, why);
  lose_inbound(in, "protocol error: " + why);
}

void DataPlane::Impl::on_header(const std::shared_ptr<Inbound>& in) {
  const FrameHeader& f = in->header;
  if (f.magic == remote_frame_magic) return on_remote_header(in);
  if (f.magic == probe_frame_magic) return protocol_error(in, "a second same-host probe");
  if (f.magic != frame_magic) return protocol_error(in, "bad frame magic");
  if (f.part_bytes > options.max_part_bytes) return protocol_error(in, fmt::format("frame of {} bytes", f.part_bytes));
  if (f.total_bytes > options.max_message_bytes)
    return protocol_error(in, fmt::format("message of {} bytes", f.total_bytes));
  if (f.part_offset > f.total_bytes || f.part_bytes > f.total_bytes - f.part_offset)
    return protocol_error(in, "frame outside its message");
  if (f.part_offset == 0) {
    if (in->received != in->total) return protocol_error(in, "new message before the last one ended");
    in->message = f.chunk;
    in->total = f.total_bytes;
    in->received = 0;
    in->landing = sink->land(in->node, f.chunk, f.total_bytes);
    if (in->landing.data == nullptr && f.total_bytes > 0) return protocol_error(in, "message refused by the receiver");
  } else if (f.part_offset != in->received || f.total_bytes != in->total ||
             std::memcmp(&f.chunk, &in->message, sizeof(ChunkHeader)) != 0) {
    return protocol_error(in, "frame does not continue its message");
  }
  if (f.part_bytes == 0) return on_part(in);
  in->stream.async_read(asio::buffer(static_cast<char*>(in->landing.data) + f.part_offset, f.part_bytes),
                        [this, in](const asio::error_code& ec, std::size_t) {
                          if (ec) return read_failed(in, ec, "connection closed mid-message");
                          on_part(in);
                        });
}

void DataPlane::Impl::on_part(const std::shared_ptr<Inbound>& in) {
  in->received += in->header.part_bytes;
  stats.bytes_received += in->header.part_bytes;
  if (in->received == in->total) {
    ++stats.messages_received;
    Landing landing = std::move(in->landing);
    in->landing = {};
    sink->deliver(in->node, in->message, std::move(landing));
  }
  read_header(in);
}

void DataPlane::Impl::on_remote_header(const std::shared_ptr<Inbound>& in) {
  const FrameHeader& f = in->header;
  if (f.part_bytes != 0 || f.part_offset != 0) return protocol_error(in, "malformed remote frame");
  if (f.total_bytes > options.max_message_bytes)
    return protocol_error(in, fmt::format("message of {} bytes", f.total_bytes));
  if (in->received != in->total) return protocol_error(in, "new message before the last one ended");
  in->stream.async_read(asio::buffer(&in->span, sizeof(RemoteSpan)),
                   [this, in](const asio::error_code& ec, std::size_t) {
                     if (ec) return read_failed(in, ec, "connection closed mid-message");
                     const FrameHeader& f = in->header;
                     // The pid in the frame is the peer's word; only the one its
                     // probe proved (a process holding the probe's random bytes) is read.
                     if (in->probed_pid == 0)
                       return protocol_error(in, "a same-host frame on a connection without a successful probe");
                     if (in->span.pid != in->probed_pid)
                       return protocol_error(in, fmt::format("a same-host frame names process {}, the probe "
                                                             "established process {}",
                                                             in->span.pid, in->probed_pid));
                     const std::uint64_t number = in->remote_frames++;
                     const std::string error = take_remote_message(
                         in, f.chunk, in->probed_pid, in->span.address, f.total_bytes,
                         [plane = weak_from_this(), in, number] {
                           if (auto p = plane.lock()) p->acknowledge(in, number);
                         });
                     if (!error.empty()) return protocol_error(in, error);
                     read_header(in);
                   });
}

std::string DataPlane::Impl::take_remote_message(const std::shared_ptr<Inbound>& in, const ChunkHeader& chunk, std::uint32_t pid,
                                std::uint64_t address, std::uint64_t bytes, std::function<void()> acknowledge) {
  auto state = std::make_shared<RemoteMessage::State>();
  state->pid = pid;
  state->address = address;
  state->bytes = static_cast<std::size_t>(bytes);
  state->sender = in->node;
  if (in->arena) {
    state->mapped = static_cast<const char*>(in->arena->at(address, bytes));
    if (state->mapped) state->arena = in->arena;
  }
  state->release = std::move(acknowledge);
  state->unreadable = [plane = weak_from_this(), node = in->node](const std::string& why) {
    if (auto p = plane.lock()) p->report_unreadable(node, why);
  };
  stats.bytes_received += bytes;
  ++stats.messages_received;
  ++stats.messages_read_remotely;
  if (sink->take_remote(in->node, chunk, RemoteMessage(state))) return {};
  // The sink wants the bytes now, in its own buffer (a failure is a
  // protocol error of this connection, reported as such).
  state->unreadable = nullptr;
  Landing landing = sink->land(in->node, chunk, bytes);
  if (landing.data == nullptr && bytes > 0) return "message refused by the receiver";
  try {
    RemoteMessage(state).read(0, state->bytes, landing.data);
  } catch (const NetError& e) {
    return e.what();
  }
  state.reset();  // acknowledged here, before the sink hears of it
  sink->deliver(in->node, chunk, std::move(landing));
  return {};
}

void DataPlane::Impl::read_bells(const std::shared_ptr<Inbound>& in) {
  in->stream.async_read_some(asio::buffer(in->bells), [this, in](const asio::error_code& ec, std::size_t n) {
    if (ec) return lose_inbound(in, ec == asio::error::eof ? std::string("connection closed") : ec.message());
    if (std::any_of(in->bells.begin(), in->bells.begin() + static_cast<std::ptrdiff_t>(n),
                    [](char b) { return b != 1; }))
      return protocol_error(in, "bytes other than doorbells on a channel connection");
    in->channel->message_bell().store(0, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    drain(in, true, false);
    read_bells(in);
  });
}

std::size_t DataPlane::Impl::drain(const std::shared_ptr<Inbound>& in, bool wait, bool polled) {
  std::unique_lock lock(in->consume_mutex, std::defer_lock);
  if (wait) {
    lock.lock();
  } else if (!lock.try_lock()) {
    return 0;
  }
  std::size_t taken = 0;
  while (!in->broken) {
    bool corrupt = false;
    const auto m = in->channel->pop_message(&corrupt);
    std::string error;
    if (corrupt) {
      error = "impossible indices in the channel's message ring";
    } else if (!m) {
      break;
    } else if (m->number != in->remote_frames) {
      error = fmt::format("channel message number {}, expected {}", m->number, in->remote_frames);
    } else if (m->bytes > options.max_message_bytes) {
      error = fmt::format("message of {} bytes", m->bytes);
    } else {
      ++in->remote_frames;
      error = take_remote_message(in, m->chunk, in->probed_pid, m->address, m->bytes,
                                  [plane = weak_from_this(), in, number = m->number] {
                                    if (auto p = plane.lock()) p->channel_ack(in, number);
                                  });
      ++taken;
    }
    if (!error.empty()) {
      in->broken = true;
      asio::post(io, [this, in, error] { protocol_error(in, error); });
    }
  }
  if (polled) stats.messages_polled += taken;
  return taken;
}

void DataPlane::Impl::channel_ack(const std::shared_ptr<Inbound>& in, std::uint64_t number) {
  std::lock_guard lock(in->ack_mutex);
  if (in->closed) return;
  if (!in->channel->push_ack(number)) {
    // 16384 unreaped acks: the sender has stopped reading its ring.
    asio::post(io, [this, in] { protocol_error(in, "the sender does not take its acknowledgements"); });
    return;
  }
  if (needs_bell(in->channel->sender_polling(), in->channel->ack_bell())) {
    ring(in->stream.socket().native_handle());
    ++stats.doorbells_sent;
  }
}

void DataPlane::Impl::acknowledge(const std::shared_ptr<Inbound>& in, std::uint64_t number) {
  asio::post(io, [this, in, number] {
    if (!in->stream.socket().is_open()) return;
    in->acks_due.push_back(number);
    write_acks(in);
  });
}

void DataPlane::Impl::write_acks(const std::shared_ptr<Inbound>& in) {
  if (in->writing_acks || in->acks_due.empty()) return;
  in->writing_acks = true;
  in->acks_writing.swap(in->acks_due);
  in->acks_due.clear();
  in->stream.async_write(asio::buffer(in->acks_writing), [this, in](const asio::error_code& ec, std::size_t) {
    in->writing_acks = false;
    if (ec) return;  // the read side sees the connection go
    write_acks(in);
  });
}

}  // namespace taihu::transport
