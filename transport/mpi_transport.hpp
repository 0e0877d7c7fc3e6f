#pragma once
// The shard actors' chunks over MPI ([cluster] transport = mpi): for clusters
// whose fabric MPI reaches and taihu's TCP data plane does not (InfiniBand,
// RoCE, Omni-Path through Open MPI's UCX or OFI), and to compare the two.
//
// One MPI session per process (MpiSession), started before the run by the
// app when the config asks for MPI under a cluster launcher: node k of the
// cluster is MPI rank k (the launcher's rank, apps/launched_cluster.hpp).
// The session's progress thread makes every MPI call (MPI_THREAD_FUNNELED),
// so no actor thread ever blocks in MPI:
//  - send() queues the chunk and returns; the thread posts MPI_Isend of a
//    40-byte header and then of the payload straight from the shard's buffer
//    (no copy: keep_alive holds it until MPI_Test says the send is done);
//  - it matches incoming headers (MPI_Improbe, MPI_Mrecv), asks the sink
//    where the payload lands (FrameSink::land) and posts MPI_Irecv straight
//    into that buffer; MPI's order between two ranks pairs each payload with
//    its header; when it completes, the sink delivers the chunk;
//  - it tests its requests in a loop while there is traffic, and idles in
//    short sleeps (woken at once by a send) once there has been none for a
//    while, so that it does not take a core from compute between collectives.
// Errors return (MPI_ERRORS_RETURN on the session's own communicator): a
// failed call is reported to the sink as a lost peer, naming the rank. A rank
// that dies ends the job through the launcher (mpirun and srun stop the
// others); the last checkpoint, written whole or not at all, stays intact.
//
// Plain C++; the implementation is built where Open MPI's development files
// are (libopenmpi-dev). Without them MpiSession throws ConfigError, naming
// the package.

#include <functional>
#include <memory>
#include <string>

#include "transport/chunk_transport.hpp"
#include "transport/data_plane.hpp"

namespace taihu::transport {

// Whether this build has the MPI transport.
bool mpi_built();
// "Open MPI v4.1.4, ..." (MPI_Get_library_version), or "no MPI" (for --version).
std::string mpi_library_version();

// The process's MPI: MPI_Init_thread on the progress thread when constructed
// (collective: every rank of the launch constructs one), MPI_Finalize when
// destroyed, unless by an exception: a rank that fails alone exits without
// waiting for the others there, and its launcher ends the job. At most one
// at a time, and one per process life (MPI cannot be initialised twice).
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const;
  int size() const;

  // Runs `f` on the progress thread, the one thread that may call MPI, and
  // waits for it (f's exception is rethrown here). For collectives of the
  // caller's own, such as a benchmark's barriers and its MPI_Allreduce
  // baseline; f blocks the transport meanwhile.
  void call(const std::function<void()>& f);

  // The session of this process; null when none was started.
  static MpiSession* current();

  struct Engine;

 private:
  friend class MpiTransport;
  std::unique_ptr<Engine> engine_;
};

// One node's transport over the current session: node index = MPI rank.
// Throws ConfigError when there is no session, or `node`/`nodes` are not
// this process's rank and the session's size.
class MpiTransport final : public ChunkTransport {
 public:
  MpiTransport(int node, int nodes, FrameSink* sink);
  // Waits until the progress thread no longer calls the sink.
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  void send(int node, const ChunkHeader& header, const void* data, std::size_t bytes,
            std::shared_ptr<const void> keep_alive) override;

 private:
  MpiSession::Engine* engine_;
  int nodes_;
};

}  // namespace taihu::transport
