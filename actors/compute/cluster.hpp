#pragma once
// Training across processes: `taihu-train nodes=K` is the coordinator and
// `taihu-node --coordinator=HOST:PORT` the nodes that host the replicas.
//
// Control plane (CAF's middleman, messages/cluster.hpp): the coordinator's
// control port on [cluster] listen:port (loopback by default) is a
// gatekeeper's (actors/compute/control_plane.hpp): a node and the
// coordinator first prove to each other that they hold the cluster secret
// (challenge-response, HMAC-SHA-256), and only then does CAF see the
// connection, which serves one gate actor; the gate admits up to K nodes and
// learns each one's agent. Nothing of CAF is reachable without the secret;
// strangers, wrong secrets and other cluster protocol versions are refused and
// logged (rate-limited), idle connections are closed after 5 s, and at most
// 32 connections may be in the handshake at once.
// Once K nodes joined (or join_timeout passed: a clear error naming who is
// missing), the coordinator places ranks on nodes in contiguous blocks (rank r
// on node r * K / workers), sends each node the merged config and its ranks;
// the nodes build their replicas and shard actors and report their data-plane
// ports, connect to each other, and hand back their workers' handles. From
// then on the coordinator drives training exactly as in-process (Iterate,
// IterationDone, evaluation, checkpoints by rank 0's node) through proxies
// (cluster_members.hpp is the coordinator's side, node_agent.hpp the node's).
//
// Data plane (transport/): the shard actors' chunks for ranks on other nodes
// go over direct, authenticated TCP connections between the nodes
// (ChunkLink); the collectives themselves are unchanged.
//
// Faults: CAF heartbeats every [cluster] heartbeat seconds; a node silent for
// dead_after seconds (SIGSTOP, a partition) is dropped like a killed one
// (whose TCP connections close at once). Either way the coordinator sees its
// agent's and workers' proxies go down (or a node reports a lost data-plane
// peer), stops training with a WorkerFailure that names the node, and the
// last checkpoint (written atomically by rank 0's node) stays intact.
//
// Elastic (`elastic = true`): instead of stopping, the coordinator drops the
// lost node, tells the others to drop their replicas (reform), places
// workers-per-node ranks on each remaining node (a new cluster generation:
// failures of older generations are ignored), and every new replica loads the
// last checkpoint; training goes on from its position with the same global
// batch (each worker takes global / ranks samples, rounded down; the position
// is mapped by sample offset when that changes the global batch). The gate keeps
// admitting authenticated nodes up to `nodes`: a restarted node joins and
// takes part from the next epoch boundary, where the cluster re-forms again.
// Needs [output] checkpoint on storage the nodes share with the coordinator
// (one machine, or a shared file system), and no fixed [topology].
//
// Config (taihu-train):
//   nodes = 3                 # 0 (default): in-process
//   workers = 3               # default: nodes; must be a multiple of nodes
//   elastic = false           # true: go on without a lost node (see above)
//   [cluster]
//   listen = 127.0.0.1        # the coordinator's control port address
//   port = 4750               # 0: any free port (logged, and see port_file)
//   port_file =               # write the port there once listening (for scripts)
//   secret_file = secret.txt  # the cluster secret (required), relative to the config
//   join_timeout = 60         # seconds to wait for the K nodes
//   heartbeat = 1             # seconds between CAF heartbeats
//   dead_after = 5            # seconds of silence after which a node is dead
//   same_host_copy = true     # nodes on one host copy large chunks straight from each other's
//                             # memory (transport/wire.hpp); false: always through the sockets
//                             # (e.g. to measure shaped links between namespaces of one host)
//   poll_us = 1000            # a shard waiting for a chunk from a node on its host polls the
//                             # shared-memory channel this long before it sleeps; 0: never polls
//   tls = between_hosts       # TLS 1.3 on both planes (transport/tls.hpp), keyed by the secret:
//                             # between_hosts (data plane: connections without a same-host
//                             # channel; control plane: connections not within one host),
//                             # always (every connection; same-host copies off), off (plaintext, warned)
//   transport = taihu         # what carries the chunks between nodes: taihu (its own data
//                             # plane, above) or mpi (MPI under mpirun or srun, node k = MPI
//                             # rank k; transport/mpi_transport.hpp)
//   certificate = node.pem    # optional: TLS authenticated by certificates instead of the
//   key = node.key            # pre-shared key, verified both ways against ca_file; every node
//   ca_file = ca.pem          # then needs its own (taihu-node --certificate --key --ca-file)

#include <caf/fwd.hpp>
#include <caf/actor.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "messages/cluster.hpp"
#include "core/config/config.hpp"
#include "core/common/error.hpp"
#include "transport/tls.hpp"

namespace taihu::compute {

struct RunPlan;
struct WorkerFault;
struct WorkerModel;

// 2: admission by the gatekeeper (transport/gatekeeper.hpp), before any CAF byte.
// 3: the typed worker protocol (actors/compute/worker_actor.hpp).
// 4: a run's end is RunEnded (finished or failed), not stop_atom.
// 5: TLS on the control plane; the gatekeeper's messages carry a detail.
// 6: a node names its build (version and git revision) when it joins.
// 7: a node may ask for its index (a launcher's rank) when it joins.
// 8: with certificates, the coordinator's verdict on the node's certificate follows TLS.
// 9: a launcher's rank names its own [cluster] tls in its hello (refused unless the coordinator's).
// 10: a worker's iteration figures carry when each bucket was ready.
// 11: typed handles in messages (messages/cluster.hpp); ClusterSetup names the coordinator.
// 12: a worker's probe says what its step awaits (a compute slot, an actor).
// 13: NodeStarted names the node's shard actors too (the coordinator monitors them).
// 14: a worker's iteration figures per bucket: ready, done, the CPU time around its collective.
inline constexpr int cluster_protocol_version = 14;

class ClusterError : public Error {
 public:
  using Error::Error;
};

// What carries the shard actors' chunks between nodes ([cluster] transport).
enum class ChunkTransportKind : std::uint8_t {
  taihu,  // taihu's data plane: TCP, same-host channels, TLS (transport/data_plane.hpp)
  mpi,    // MPI, under a cluster launcher (transport/mpi_transport.hpp)
};

// A node (taihu-node, or a launcher's rank).
struct NodeOptions {
  std::string coordinator_host = "127.0.0.1";
  std::uint16_t coordinator_port = 0;
  std::string secret;
  std::string name;                       // default: host:pid
  // The data plane's address (others connect to it). Empty: the address this node reaches the
  // coordinator from (127.0.0.1 for a coordinator on this host), which is an address the other
  // nodes can reach too wherever the coordinator's network is theirs; loopback would not be.
  std::string data_listen;
  // The data-plane address peers are told. Empty: data_listen, unless that is
  // a wildcard (0.0.0.0, ::), which no peer can connect to: then this node's
  // address on its connection to the coordinator.
  std::string data_advertise;
  double join_timeout = 60.0;             // to reach the coordinator
  double heartbeat = 1.0;
  double dead_after = 5.0;
  // Node processes that share this host's cores (a launcher's ranks on one
  // host): [blas] threads = 0 divides the cores among them.
  int processes_on_host = 1;
  int protocol_version = cluster_protocol_version;  // tests speak others
  std::string build;  // this node's taihu version and git revision (the app's), told when joining
  // This node's certificates, used where the cluster uses certificates (the
  // coordinator's [cluster] certificate); no node shares another's key.
  transport::TlsCertificates certificates;
  // The node index it asks the gate for: a cluster launcher's rank (so that
  // node k is rank k, in logs and to the MPI transport); -1: the next free one.
  std::int32_t place = -1;
  // A cluster launcher's rank's own [cluster] tls: a coordinator of another
  // mode refuses it, naming both (taihu-node has none: it takes the
  // coordinator's, with the rest of its config).
  std::optional<transport::TlsMode> tls;
};

struct ClusterSettings {
  int nodes = 0;
  bool elastic = false;
  std::string listen = "127.0.0.1";
  std::uint16_t port = 0;
  std::string port_file;
  std::string secret;
  double join_timeout = 60.0;
  double heartbeat = 1.0;
  double dead_after = 5.0;
  bool same_host_copy = true;  // the nodes' data planes may copy across processes of one host
  int poll_us = 1000;          // a waiting shard polls same-host channels this long (0: never)
  transport::TlsMode tls = transport::TlsMode::between_hosts;  // which connections run TLS
  transport::TlsCertificates certificates;  // given: TLS authenticates by certificates (transport/tls.hpp)
  // This coordinator's taihu version and git revision, set by the app: a node
  // of another build is refused, naming both (its results could differ).
  std::string build;
  // A node of this process beside the coordinator (a cluster launcher's rank
  // 0, apps/launched_cluster.hpp): it joins through the gate directly and
  // takes node index 0, so that rank 0 trains as well as coordinates.
  std::optional<NodeOptions> own_node;
  // taihu's data plane, or MPI (needs own_node: every node is a launcher's rank).
  ChunkTransportKind transport = ChunkTransportKind::taihu;

  // Reads the root key `nodes` and (when nodes > 0) the [cluster] section.
  static ClusterSettings read(const config::Document& doc);
};

// [cluster] tls (ClusterSettings::tls, `fallback` when absent); a ConfigError
// naming the key for any other value than the modes' names.
transport::TlsMode read_tls_mode(const config::Section& cluster, transport::TlsMode fallback);

// [cluster] transport: `taihu` (the default) or `mpi`; a ConfigError naming
// the key for any other value, and for mpi with tls = always (MPI does not
// encrypt) or in a build without MPI.
ChunkTransportKind read_chunk_transport(const config::Section& cluster);

// In `system` (the app's, apps/actor_system.hpp, with the control plane
// timed by `options`): joins, hosts its replicas until the run ends, and
// returns taihu-node's exit code: 0 when the run finished, non-zero
// (taihu-node --help) when it failed, the coordinator was lost or dropped
// this node, or refused it. Logs why.
int run_node(caf::actor_system& system, const NodeOptions& options);

// A node in `system` beside its coordinator, joining at `gate` (the gate actor
// itself: no control port between them). Its exit code is the run's, which
// the coordinator reports.
void spawn_own_node(caf::actor_system& system, const NodeOptions& options, msg::gate_actor gate);

// The node of an in-process run (nodes = 0), beside its coordinator and
// joining at `gate` like spawn_own_node's: it hosts every rank, with models
// built in this process from `plan` (no config travels; graphs in memory
// stay where they are). Rank 0 takes `rank0` over, the model that planned
// the buckets; `fault` is a test's.
void spawn_in_process_node(caf::actor_system& system, std::shared_ptr<const RunPlan> plan,
                           std::shared_ptr<WorkerModel> rank0, WorkerFault fault, msg::gate_actor gate);

}  // namespace taihu::compute
