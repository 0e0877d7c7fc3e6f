#include "actors/chunk_link/chunk_link.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/common/check.hpp"
#include "messages/type_ids.hpp"

namespace taihu::transport {

ChunkLink::ChunkLink(int node, std::vector<int> rank_node, const OpenTransport& open,
                     std::function<void(int, const std::string&)> on_lost,
                     std::shared_ptr<const msg::PayloadAllocator> allocator, std::chrono::microseconds poll_budget)
    : node_(node),
      rank_node_(std::move(rank_node)),
      allocator_(std::move(allocator)),
      on_lost_(std::move(on_lost)),
      poll_budget_(poll_budget) {
  transport_ = open(this);
  plane_ = dynamic_cast<DataPlane*>(transport_.get());
}

ChunkLink::ChunkLink(DataPlaneOptions options, std::vector<int> rank_node,
                     std::function<void(int, const std::string&)> on_lost,
                     std::shared_ptr<const msg::PayloadAllocator> allocator)
    : ChunkLink(
          options.node, std::move(rank_node),
          [&options](FrameSink* sink) { return std::make_unique<DataPlane>(std::move(options), sink); },
          std::move(on_lost), std::move(allocator), options.poll_budget) {}

ChunkLink::~ChunkLink() { transport_.reset(); }

void ChunkLink::connect(const std::vector<std::string>& hosts, const std::vector<std::uint16_t>& ports) {
  if (plane_ == nullptr) return;
  for (std::size_t j = 0; j < hosts.size() && j < ports.size(); ++j)
    if (static_cast<int>(j) != node_ && ports[j] != 0) plane_->connect(static_cast<int>(j), hosts[j], ports[j]);
}

void ChunkLink::attach(std::uint32_t bucket, int rank, sync::shard_actor shard) {
  std::lock_guard lock(mutex_);
  shards_[{bucket, rank}] = std::move(shard);
}

void ChunkLink::detach_all() {
  std::lock_guard lock(mutex_);
  shards_.clear();
}

bool ChunkLink::remote(int rank) const {
  return rank >= 0 && static_cast<std::size_t>(rank) < rank_node_.size() &&
         rank_node_[static_cast<std::size_t>(rank)] != node_;
}

void ChunkLink::send(int rank, msg::Chunk chunk) {
  const int node = rank_node_.at(static_cast<std::size_t>(rank));
  ChunkHeader header{chunk.bucket, chunk.sender, rank, chunk.seq, chunk.iteration, chunk.offset};
  auto payload = std::make_shared<msg::TensorPayload>(std::move(chunk.payload));
  const float* data = payload->data();
  const std::size_t bytes = payload->size() * sizeof(float);
  transport_->send(node, header, data, bytes, std::move(payload));
}

std::chrono::microseconds ChunkLink::poll_budget() const {
  return transport_->channels() > 0 ? poll_budget_ : std::chrono::microseconds{0};
}

std::size_t ChunkLink::poll() { return transport_->poll(); }

void ChunkLink::hold_polling(bool hold) { transport_->hold_polling(hold); }

Landing ChunkLink::land(int, const ChunkHeader&, std::size_t bytes) {
  if (bytes % sizeof(float) != 0) return {};
  std::lock_guard lock(pool_mutex_);
  const std::size_t n = bytes / sizeof(float);
  constexpr std::size_t pool_limit = 64;
  std::shared_ptr<msg::TensorPayload> payload;
  // Free: no landing in progress holds it (use_count) and no chunk shares its floats (unique).
  auto free_buffer = [](const std::shared_ptr<msg::TensorPayload>& p) { return p.use_count() == 1 && p->unique(); };
  for (auto& p : pool_)
    if (p->size() == n && free_buffer(p)) {
      payload = p;
      break;
    }
  if (!payload) {
    payload = std::make_shared<msg::TensorPayload>(msg::TensorPayload::allocate(n));
    if (pool_.size() >= pool_limit) {
      // Replace a free buffer of another size, else do not pool this one.
      auto free = std::find_if(pool_.begin(), pool_.end(), free_buffer);
      if (free != pool_.end()) *free = payload;
    } else if (n > 0) {
      pool_.push_back(payload);
    }
  }
  void* data = payload->mutable_data();  // unique: no copy
  return {data, std::move(payload)};
}

sync::shard_actor ChunkLink::shard_for(int from, const ChunkHeader& h) const {
  {
    std::lock_guard lock(mutex_);
    auto it = shards_.find({h.bucket, h.receiver});
    if (it != shards_.end()) return it->second;
  }
  spdlog::warn("data plane node {}: chunk for bucket {} rank {} from node {} has no local shard; dropped", node_,
               h.bucket, h.receiver, from);
  return {};
}

namespace {

// A chunk's floats still in the sending process.
class RemoteChunkSource final : public msg::ChunkSource {
 public:
  explicit RemoteChunkSource(RemoteMessage message) : message_(std::move(message)) {}
  std::size_t size() const override { return message_.bytes() / sizeof(float); }
  void read(std::size_t first, std::size_t n, float* to) const override {
    message_.read(first * sizeof(float), n * sizeof(float), to);
  }
  const float* data() const override { return static_cast<const float*>(message_.data()); }

 private:
  RemoteMessage message_;
};

}  // namespace

bool ChunkLink::take_remote(int from, const ChunkHeader& h, RemoteMessage message) {
  if (message.bytes() % sizeof(float) != 0) return false;  // land() refuses it: a protocol error
  const sync::shard_actor shard = shard_for(from, h);
  if (!shard) return true;  // dropped (and so acknowledged)
  msg::Chunk chunk{h.bucket, h.iteration, h.sender, h.seq, h.offset, {}, nullptr};
  chunk.source = std::make_shared<RemoteChunkSource>(std::move(message));
  caf::anon_send(shard, std::move(chunk));
  return true;
}

void ChunkLink::deliver(int from, const ChunkHeader& h, Landing landing) {
  const sync::shard_actor shard = shard_for(from, h);
  if (!shard) return;
  auto payload = std::static_pointer_cast<msg::TensorPayload>(landing.owner);
  // A second reference to the pooled buffer: it is free again when the shard drops the chunk.
  msg::TensorPayload values = payload ? *payload : msg::TensorPayload{};
  caf::anon_send(shard, msg::Chunk{h.bucket, h.iteration, h.sender, h.seq, h.offset, std::move(values), nullptr});
}

void ChunkLink::peer_lost(int node, const std::string& reason) {
  if (on_lost_) on_lost_(node, reason);
}

}  // namespace taihu::transport
