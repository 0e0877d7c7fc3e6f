#pragma once
// A training run as its config describes it, decided before any actor runs:
// the replicas (how many, in this process or on nodes), the gradient buckets
// and each one's collective, compression, the epochs, checkpoints, outputs
// and the status endpoint. One run is one loop (coordinator.hpp) for every
// kind of replica and any number of them: single-replica training is
// workers = 1.
//
// Config (taihu-train; nets: core/train/train_setup.hpp, dynamic models with
// [model]: core/train/graph_replica.hpp):
//   net = nets/lenet.ini      # the net, relative to this file (or a [model] section)
//   epochs = 3
//   batch_size = 64           # per replica: the global batch is workers x batch_size
//   test_batch_size = 1000
//   seed = 1
//   display = 100             # iterations between plain progress lines and metrics records
//   iterations = 0            # stop after N training iterations in all (0: run the epochs)
//   device = cpu              # or sw26010: every replica is a simulated SW26010 (its own
//                             # core-group actors); the report has its simulated time
//   workers = 1               # replicas
//   nodes = 0                 # > 0: the replicas live in taihu-node processes (cluster.hpp)
//   [output]
//   dir = out/lenet-fashion   # metrics and checkpoints go here
//   metrics = metrics.jsonl   # or .csv; empty disables
//   checkpoint = lenet.ckpt   # written after every epoch (and every checkpoint_every iterations)
//   checkpoint_every = 0      # also every N iterations
//   keep_all = false          # also keep a copy per checkpoint: lenet-iter1000.ckpt
//   [sync]
//   bucket_mb = 25            # fusion bucket size; 0 = one bucket for all
//   algorithm = auto          # ring | rabenseifner | topology_aware | hierarchical | direct | auto
//   step_timeout = 60         # seconds a worker may take for one iteration
//   compute_slots = 0         # workers computing at once; 0 = cores / BLAS threads
//   scheduler_threads = 0     # CAF threads for the shard actors; 0 = min(2, cores)
//   scheduler = sharing       # CAF policy: sharing or stealing
//   [topology]                # optional (collectives/topology.hpp); ranks = workers
//   [compress]                # optional: RedSync's compression per layer (collectives/compression_plan.hpp)
//   [network]                 # device = sw26010 with workers > 1: the chips' interconnect
//                             # (simulator/network.hpp; e.g. config/topologies/taihulight.ini's);
//                             # it also decides the buckets' algorithms
//   [status]
//   port = -1                 # >= 0: serve /metrics and /status over HTTP (0: any free port)
//   listen = 127.0.0.1
//   port_file =               # the port, written once listening (for scripts)
//
// `auto` picks each bucket's algorithm with the α-β-γ cost model over the
// topology and logs the choice and the predicted time.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "actors/compute/cluster.hpp"
#include "actors/compute/worker_actor.hpp"
#include "collectives/algorithms.hpp"
#include "collectives/compression_plan.hpp"
#include "collectives/topology.hpp"
#include "core/config/config.hpp"
#include "core/train/replica.hpp"
#include "core/train/train_report.hpp"

namespace taihu::simulator {
class Network;
}

namespace taihu::compute {

// The [topology] section; or, for replicas on simulated chips (device other
// than cpu), the collectives' view of the [network] section; or else uniform
// in-process links. The coordinator and every node derive the same.
collectives::Topology training_topology(const config::Document& doc, int ranks);

struct StatusSettings {
  bool enabled = false;
  std::string listen = "127.0.0.1";
  std::uint16_t port = 0;
  std::string port_file;
};

struct RunPlan {
  config::Document doc;
  TrainSettings settings;
  int ranks = 1;
  ClusterSettings cluster;
  ReplicaData data;  // shared read-only by the in-process replicas
  ReplicaServices services;  // device executors and graph runners of this process
  // Rank 0's model, built to plan the buckets; the first in-process worker
  // takes it over.
  std::shared_ptr<WorkerModel> rank0;

  // What is trained (rank 0's replica says).
  std::string model_name;  // the net's name, or the dynamic model's type
  std::string sample_unit;
  int64_t parameters = 0;
  int64_t per_epoch = 0;
  std::string device = "cpu";
  struct GraphRun {
    std::string source;
    bool language_model = false;
    bool has_dev = false;
  };
  std::optional<GraphRun> graphs;  // a dynamic model ([model])

  // Gradient exchange: one bucket list for every rank (none with one rank).
  std::size_t bucket_bytes = 0;
  std::string algorithm = "auto";
  std::optional<collectives::Topology> topology;
  std::vector<std::size_t> bucket_elements;
  std::vector<collectives::Algorithm> bucket_algorithms;
  std::vector<BucketReport> bucket_reports;
  std::vector<collectives::BucketCompression> bucket_compression;  // empty segments: plain allreduce
  double dense_bytes = 0;  // all ranks, per iteration, with dense ring allreduce
  // device != cpu with several replicas: every replica is a simulated chip,
  // and the gradient's allreduce between them is timed on the simulated
  // network of the config's [network] section (simulator/network.hpp), per
  // iteration, over every bucket.
  double simulated_allreduce_seconds = 0;

  // Threads and timing.
  double step_timeout = 60.0;
  int compute_slots = 0;
  int scheduler_threads = 0;
  std::string scheduler = "sharing";

  // Epochs, checkpoints, outputs.
  int64_t max_iterations = 0;  // 0: no limit
  std::filesystem::path metrics_path;
  std::filesystem::path checkpoint_path;
  int64_t checkpoint_every = 0;
  bool keep_all = false;
  StatusSettings status;

  // Reads and checks the whole config (unknown keys are errors): throws
  // ConfigError naming file, line and key.
  // `memory`: the graphs of [data] source = memory, in-process runs only.
  static RunPlan read(config::Document doc, ReplicaServices services, WorkerFault fault = {},
                      std::shared_ptr<const GraphDataset> memory = nullptr);

  bool clustered() const { return cluster.nodes > 0; }
  bool compressed() const;
  bool exchanges_gradients() const { return ranks > 1; }
  int64_t global_batch() const { return settings.batch_size * ranks; }
  // Simulated chips: bucket b's exchange on `network` (its allreduce, or
  // RedSync's packed allgather and the sum of what arrives).
  double simulated_seconds(std::size_t b, simulator::Network& network) const;
  // Rank r's model for this plan (rank 0's is built already).
  std::shared_ptr<WorkerModel> build_model(int rank, WorkerFault fault = {}) const;
  // Each bucket's collective for the current ranks (from rank 0's model).
  void plan_buckets();
  // Elastic: the same run over `ranks` ranks, each worker taking a larger
  // share of the same global batch.
  void replan(int new_ranks);
  // The config as nodes get it: paths relative to the config file made absolute.
  std::string config_for_nodes() const;
};

// The checkpoint a run writes: [output] dir / checkpoint (empty: none).
std::filesystem::path checkpoint_path(const config::Section& output);

}  // namespace taihu::compute
