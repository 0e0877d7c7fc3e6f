#include "actors/net/chunk_link.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "core/common/check.hpp"
#include "messages/type_ids.hpp"

namespace taihu::net {

ChunkLink::ChunkLink(DataPlaneOptions options, std::vector<int> rank_node,
                     std::function<void(int, const std::string&)> on_lost)
    : node_(options.node), rank_node_(std::move(rank_node)), on_lost_(std::move(on_lost)) {
  plane_ = std::make_unique<DataPlane>(std::move(options), this);
}

ChunkLink::~ChunkLink() { plane_.reset(); }

void ChunkLink::attach(std::uint32_t bucket, int rank, caf::actor shard) {
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
  plane_->send(node, header, data, bytes, std::move(payload));
}

Landing ChunkLink::land(int, const ChunkHeader&, std::size_t bytes) {
  if (bytes % sizeof(float) != 0) return {};
  auto payload = std::make_shared<msg::TensorPayload>(msg::TensorPayload::allocate(bytes / sizeof(float)));
  void* data = payload->mutable_data();
  return {data, std::move(payload)};
}

void ChunkLink::deliver(int from, const ChunkHeader& h, Landing landing) {
  caf::actor shard;
  {
    std::lock_guard lock(mutex_);
    auto it = shards_.find({h.bucket, h.receiver});
    if (it != shards_.end()) shard = it->second;
  }
  if (!shard) {
    spdlog::warn("data plane node {}: chunk for bucket {} rank {} from node {} has no local shard; dropped", node_,
                 h.bucket, h.receiver, from);
    return;
  }
  auto payload = std::static_pointer_cast<msg::TensorPayload>(landing.owner);
  msg::TensorPayload values = payload ? std::move(*payload) : msg::TensorPayload{};
  caf::anon_send(shard, msg::Chunk{h.bucket, h.iteration, h.sender, h.seq, h.offset, std::move(values)});
}

void ChunkLink::peer_lost(int node, const std::string& reason) {
  if (on_lost_) on_lost_(node, reason);
}

}  // namespace taihu::net
