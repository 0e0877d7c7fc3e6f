#pragma once
// What carries a node's chunks to the other nodes: taihu's own data plane
// (TCP and same-host channels, transport/data_plane.hpp) or MPI
// (transport/mpi_transport.hpp). Each hands what arrives to the FrameSink it
// was opened with; the shard actors see neither (actors/chunk_link/).

#include <cstddef>
#include <memory>

#include "transport/wire.hpp"

namespace taihu::transport {

class ChunkTransport {
 public:
  virtual ~ChunkTransport() = default;

  // Queues one message to `node`; returns at once. The bytes are read from
  // `data` until the send completes: `keep_alive` keeps them alive and
  // unchanged until then. Messages to one node arrive in the order sent.
  // Throws NetError when `node` cannot be reached.
  virtual void send(int node, const ChunkHeader& header, const void* data, std::size_t bytes,
                    std::shared_ptr<const void> keep_alive) = 0;

  // Polling by a waiting thread (DataPlane's same-host channels): how many
  // channels can be polled (0: none, a shard never polls), take what they
  // hold, and promise to poll soon (see DataPlane::hold_polling).
  virtual int channels() const { return 0; }
  virtual std::size_t poll() { return 0; }
  virtual void hold_polling(bool hold) {}
};

}  // namespace taihu::transport
