#pragma once
// The shard actors' link to other processes: a ChunkRouter (outgoing chunks
// for ranks in other processes) and a FrameSink (incoming chunks, delivered
// to the local shard of their bucket and rank as ordinary msg::Chunk
// messages), over a ChunkTransport: taihu's data plane (described below) or
// MPI (transport/mpi_transport.hpp).
//
// Outgoing: the chunk's payload (a view of the shard's buffer or a snapshot)
// is written from its own memory; the link holds a reference until the write
// is done, so the shard may hand its buffer back meanwhile (copy on write
// protects it). Shards poll the data plane's same-host channels while they
// wait (ChunkRouter::poll). Incoming: each message lands in a TensorPayload
// that becomes the Chunk's payload, so the bytes are copied once, by the
// kernel. Landing buffers are recycled once the shard has dropped the chunk
// (the pool's reference is the only one left), so steady-state iterations
// allocate nothing and touch no fresh pages. A message from another process
// of this host is not copied here at all: its Chunk carries a ChunkSource,
// and the shard's step reads it straight into place
// (actors/sync/chunk_ops.hpp).

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/chunk_transport.hpp"
#include "transport/data_plane.hpp"
#include "actors/sync/shard_actor.hpp"
#include "messages/tensor_payload.hpp"

namespace taihu::transport {

class ChunkLink final : public sync::ChunkRouter, public FrameSink {
 public:
  // Opens the transport with this link as its sink.
  using OpenTransport = std::function<std::unique_ptr<ChunkTransport>(FrameSink* sink)>;

  // rank_node[r]: the node that hosts rank r; this is node `node`.
  // on_lost runs on the transport's thread when a peer is lost.
  // `allocator`: where the shards' outgoing copies live (the shared arena's,
  // so that peers on this host read them in place), or null for the heap.
  // A waiting shard polls the transport's channels for up to `poll_budget`.
  ChunkLink(int node, std::vector<int> rank_node, const OpenTransport& open,
            std::function<void(int node, const std::string& reason)> on_lost,
            std::shared_ptr<const msg::PayloadAllocator> allocator = nullptr,
            std::chrono::microseconds poll_budget = {});
  // Over taihu's data plane (node, poll budget: the options').
  ChunkLink(DataPlaneOptions options, std::vector<int> rank_node,
            std::function<void(int node, const std::string& reason)> on_lost,
            std::shared_ptr<const msg::PayloadAllocator> allocator = nullptr);
  ~ChunkLink() override;

  // The data plane, or null over another transport (its peers need no connect).
  DataPlane* data_plane() { return plane_; }
  std::uint16_t port() const { return plane_ != nullptr ? plane_->port() : 0; }
  DataPlane& plane() { return *plane_; }  // a link over the data plane only

  // Connects to the other nodes, node j at hosts[j]:ports[j] (port 0: a node
  // without ranks, not reached). A transport that needs no connects, as MPI,
  // has nothing to do.
  void connect(const std::vector<std::string>& hosts, const std::vector<std::uint16_t>& ports);

  // The local shard that receives chunks of (bucket, rank).
  void attach(std::uint32_t bucket, int rank, sync::shard_actor shard);
  // Stops delivering (chunks that arrive later are dropped).
  void detach_all();

  // ChunkRouter
  bool remote(int rank) const override;
  void send(int rank, msg::Chunk chunk) override;
  std::chrono::microseconds poll_budget() const override;
  std::size_t poll() override;
  void hold_polling(bool hold) override;
  const msg::PayloadAllocator* allocator() const override { return allocator_.get(); }

  // FrameSink
  Landing land(int from, const ChunkHeader& header, std::size_t bytes) override;
  void deliver(int from, const ChunkHeader& header, Landing landing) override;
  bool take_remote(int from, const ChunkHeader& header, RemoteMessage message) override;
  void peer_lost(int node, const std::string& reason) override;

 private:
  int node_;
  std::vector<int> rank_node_;
  std::shared_ptr<const msg::PayloadAllocator> allocator_;
  std::function<void(int, const std::string&)> on_lost_;
  mutable std::mutex mutex_;
  std::map<std::pair<std::uint32_t, int>, sync::shard_actor> shards_;
  sync::shard_actor shard_for(int from, const ChunkHeader& header) const;
  std::chrono::microseconds poll_budget_;
  std::mutex pool_mutex_;  // land() runs on the I/O thread and on pollers
  std::vector<std::shared_ptr<msg::TensorPayload>> pool_;
  std::unique_ptr<ChunkTransport> transport_;  // last: stopped first, before the maps go
  DataPlane* plane_ = nullptr;                 // transport_, when it is the data plane
};

}  // namespace taihu::transport
