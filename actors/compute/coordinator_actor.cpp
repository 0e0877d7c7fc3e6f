#include "actors/compute/coordinator.hpp"
#include "actors/exception_reason.hpp"

#include <caf/all.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>

#include "actors/compute/cluster.hpp"
#include "transport/status_server.hpp"
#include "collectives/algorithms.hpp"
#include "actors/sync/bucket_shards.hpp"
#include "collectives/buckets.hpp"
#include "collectives/cost_model.hpp"
#include "actors/sync/shard_actor.hpp"
#include "core/blas/blas.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/common/check.hpp"
#include "core/train/graph_trainer.hpp"
#include "core/train/metrics_log.hpp"
#include "core/train/replica.hpp"
#include "messages/type_ids.hpp"

namespace taihu::compute {

namespace {

using Clock = std::chrono::steady_clock;

// In-process links: a message costs a few microseconds, copies run near
// memcpy speed, and adding floats is a little slower than copying them.
collectives::Topology in_process_topology(int ranks) { return collectives::Topology::uniform(ranks, collectives::Link{3e-6, 8e9}, 6e9); }

// The config as the nodes get it: the paths that are relative to the config
// file made absolute, since the nodes parse it from a string.
std::string cluster_config(const config::Document& doc) {
  config::Document copy = doc;
  config::Section& root = copy.root();
  if (root.has("net"))
    root.set("net", std::filesystem::absolute(doc.resolve(root.get<std::string>("net"))).string(), root.where());
  if (config::Section* data = copy.find("data"); data != nullptr) {
    const auto dir = data->get_or<std::string>("dir", "");
    if (!dir.empty()) data->set("dir", std::filesystem::absolute(doc.resolve(dir)).string(), data->where());
  }
  return copy.dump();
}

struct Participant {
  int rank = 0;
  std::string role;   // "worker", "shard of bucket 3" or "node"
  std::string where;  // " on node 2 'name'" with nodes = K, else empty
  int node = -1;      // with nodes = K: the node it lives on
};

// Elastic clusters: the cluster re-forms at the next epoch boundary to take
// in nodes that joined (thrown and caught inside the coordinator's loop).
struct Regroup {};

}  // namespace

collectives::Topology training_topology(const config::Document& doc, int ranks) {
  if (const config::Section* t = doc.find("topology")) {
    auto topology = collectives::Topology::from_config(*t);
    if (topology.ranks() != ranks)
      throw t->error("ranks", fmt::format("the topology has {} ranks, but workers = {}", topology.ranks(), ranks));
    return topology;
  }
  return in_process_topology(ranks);
}

std::shared_ptr<WorkerModel> build_worker_model(const config::Document& d, const TrainSettings& settings,
                                                const ReplicaData& data, int r, int ranks, std::size_t bucket_bytes,
                                                WorkerFault fault) {
  auto m = std::make_shared<WorkerModel>();
  m->rank = r;
  m->ranks = ranks;
  m->fault = fault;
  m->replica = build_replica(d, settings, data, r, ranks);
  m->buckets = std::make_unique<collectives::Buckets>(m->replica->gradient_stages(), bucket_bytes);
  return m;
}

// What the status endpoint shows; written by the driver, read by the HTTP thread.
struct RunStatus {
  std::mutex mutex;
  std::string state = "starting";
  std::string net_name;
  int ranks = 0;
  int nodes = 0;
  std::uint64_t iterations = 0;  // completed
  std::int64_t epoch = 0;
  double loss = 0.0;
  double images_per_second = 0.0;
  struct Member {
    std::string name;
    std::string state;
    std::vector<int> ranks;
  };
  std::vector<Member> members;
  std::vector<int> rank_node;
  struct Bucket {
    std::size_t elements = 0;
    std::string algorithm;
    std::uint64_t bytes_per_iteration = 0;  // all ranks' sends, from the schedule
  };
  std::vector<Bucket> buckets;

  std::string metrics() {
    std::lock_guard lock(mutex);
    std::string out;
    out += "# HELP taihu_iteration Training iterations completed.\n# TYPE taihu_iteration counter\n";
    out += fmt::format("taihu_iteration {}\n", iterations);
    out += "# HELP taihu_epoch The epoch being trained (1-based).\n# TYPE taihu_epoch gauge\n";
    out += fmt::format("taihu_epoch {}\n", epoch);
    out += "# HELP taihu_loss Mean training loss of the last iteration.\n# TYPE taihu_loss gauge\n";
    out += fmt::format("taihu_loss {}\n", loss);
    out += "# HELP taihu_images_per_second Training throughput of the current epoch.\n"
           "# TYPE taihu_images_per_second gauge\n";
    out += fmt::format("taihu_images_per_second {}\n", images_per_second);
    out += "# HELP taihu_members Processes taking part, by state.\n# TYPE taihu_members gauge\n";
    std::map<std::string, int> states;
    for (const auto& m : members) ++states[m.state];
    for (const auto& [state, n] : states) out += fmt::format("taihu_members{{state=\"{}\"}} {}\n", state, n);
    out += "# HELP taihu_collective_bytes_sent_total Bytes sent by all ranks in each bucket's allreduce.\n"
           "# TYPE taihu_collective_bytes_sent_total counter\n";
    for (std::size_t b = 0; b < buckets.size(); ++b)
      out += fmt::format("taihu_collective_bytes_sent_total{{bucket=\"{}\",algorithm=\"{}\"}} {}\n", b,
                         buckets[b].algorithm, buckets[b].bytes_per_iteration * iterations);
    return out;
  }

  std::string status() {
    std::lock_guard lock(mutex);
    std::string members_json, buckets_json, ranks_json;
    for (const auto& m : members) {
      std::string r;
      for (int k : m.ranks) r += fmt::format("{}{}", r.empty() ? "" : ", ", k);
      members_json += fmt::format("{}\n    {{\"name\": \"{}\", \"state\": \"{}\", \"ranks\": [{}]}}",
                                  members_json.empty() ? "" : ",", transport::json_escape(m.name), m.state, r);
    }
    for (int n : rank_node) ranks_json += fmt::format("{}{}", ranks_json.empty() ? "" : ", ", n);
    for (const auto& b : buckets)
      buckets_json += fmt::format("{}\n      {{\"elements\": {}, \"algorithm\": \"{}\", \"bytes_per_iteration\": {}}}",
                                  buckets_json.empty() ? "" : ",", b.elements, b.algorithm, b.bytes_per_iteration);
    return fmt::format(
        "{{\n  \"state\": \"{}\",\n  \"net\": \"{}\",\n  \"iteration\": {},\n  \"epoch\": {},\n  \"loss\": {},\n"
        "  \"images_per_second\": {},\n  \"members\": [{}\n  ],\n  \"topology\": {{\n    \"ranks\": {},\n    \"nodes\": {},\n"
        "    \"rank_node\": [{}],\n    \"buckets\": [{}\n    ]\n  }}\n}}\n",
        transport::json_escape(state), transport::json_escape(net_name), iterations, epoch, loss, images_per_second, members_json,
        ranks, nodes, ranks_json, buckets_json);
  }
};

struct StatusSettings {
  bool enabled = false;
  std::string listen = "127.0.0.1";
  std::uint16_t port = 0;
  std::string port_file;
};

// What a run measured, before it becomes a net's or a dynamic model's report.
struct EpochRecord {
  int64_t epoch = 0;  // 1-based
  double train_loss = 0.0;  // mean of the iterations' losses (each the ranks' mean)
  double seconds = 0.0;
  uint64_t samples = 0;
  uint64_t vertices = 0;
  ReplicaEvaluation evaluation;
};

struct RunRecord {
  std::vector<EpochRecord> epochs;
  double seconds = 0.0;  // training time, all epochs
  uint64_t samples = 0;
  uint64_t vertices = 0;
  double exposed_comm_seconds = 0.0;
  double comm_hidden_fraction = 0.0;
  double bytes_sent = 0.0;  // payload all ranks' shards sent
  uint64_t iterations = 0;  // trained
};

struct DataParallelTrainer::Impl {
  config::Document doc;
  Progress::Mode progress_mode;
  WorkerFault fault;
  TrainSettings settings;
  int ranks = 1;
  std::size_t bucket_bytes = 0;
  std::string algorithm = "auto";
  double step_timeout = 60.0;
  int compute_slots = 0;
  int scheduler_threads = 0;
  std::string scheduler = "sharing";
  std::optional<collectives::Topology> topology;
  ClusterSettings cluster;
  StatusSettings status_settings;
  std::vector<std::shared_ptr<WorkerModel>> models;
  std::vector<std::size_t> bucket_elements;
  std::vector<collectives::Algorithm> bucket_algorithms;
  std::vector<BucketReport> bucket_reports;
  std::vector<collectives::BucketCompression> bucket_compression;  // [compress]; empty segments: allreduce
  double dense_bytes = 0;  // all ranks, per iteration, with dense ring allreduce
  int64_t per_epoch = 0;
  std::string net_name;  // or the dynamic model's type
  std::string sample_unit;
  // Set for a dynamic model ([model]).
  struct GraphRun {
    std::string source;
    bool language_model = false;
    bool has_dev = false;
  };
  std::optional<GraphRun> graphs;
  int64_t parameters = 0;
  MetricsLog metrics;
  std::filesystem::path checkpoint_path;
  std::filesystem::path resumed_from;  // resume()'s checkpoint: its compressor files load at the start
  // resume()'s checkpoint for replicas on nodes (encode_checkpoint), sent to
  // every rank once the cluster has formed; empty in process.
  std::string resumed_checkpoint;
  int64_t checkpoint_every = 0;
  bool keep_all = false;
  TrainPosition start;
  std::vector<std::vector<float>> final_parameters;

  ReplicaData data;  // shared by the in-process replicas, kept to re-plan

  RunRecord train();
  void log_epoch(const EpochRecord& e);
  // The figures both report types share: workers, buckets, communication, bytes.
  template <class Report>
  void add_data_parallel_figures(const RunRecord& record, Report& report) const {
    report.workers = ranks;
    report.buckets = bucket_reports;
    report.exposed_comm_seconds = record.exposed_comm_seconds;
    report.comm_hidden_fraction = record.comm_hidden_fraction;
    report.bytes_sent_per_iteration =
        record.iterations > 0 ? record.bytes_sent / static_cast<double>(record.iterations) : 0.0;
    report.dense_bytes_per_iteration = dense_bytes;
  }
  // Each bucket's collective for the current ranks (rank 0's model's buckets).
  void plan_buckets();
  // Elastic: rank 0's model, the topology and the buckets for `ranks` ranks.
  void replan(int new_ranks);
};

void DataParallelTrainer::Impl::plan_buckets() {
  const auto stages = models[0]->replica->gradient_stages();
  const collectives::Buckets& buckets = *models[0]->buckets;
  bucket_elements.clear();
  bucket_algorithms.clear();
  bucket_reports.clear();
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const std::size_t n = buckets[b].elements;
    const double bytes = static_cast<double>(n) * sizeof(float);
    collectives::Algorithm a;
    double predicted;
    if (algorithm == "auto") {
      const auto choice = collectives::choose_algorithm(*topology, bytes);
      a = choice.algorithm;
      predicted = choice.seconds;
    } else {
      a = collectives::parse_algorithm(algorithm);
      predicted = collectives::predict(collectives::make_allreduce(a, *topology, n), *topology).seconds;
    }
    bucket_elements.push_back(n);
    bucket_algorithms.push_back(a);
    bucket_reports.push_back(BucketReport{static_cast<int64_t>(n), std::string(collectives::name(a)), predicted});
    spdlog::info("bucket {}: {} floats ({:.2f} MB, layers from {}) -> {}{}, predicted {:.1f} us", b, n,
                 bytes / (1024.0 * 1024.0), stages[buckets[b].first_stage].name, collectives::name(a),
                 algorithm == "auto" ? " (auto)" : "", predicted * 1e6);
  }
  // RedSync's compression per bucket ([compress], collectives/compression_plan.hpp).
  bucket_compression = collectives::plan_compression(doc, buckets, ranks);
  dense_bytes = 0;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    dense_bytes += collectives::dense_ring_bytes_all_ranks(buckets[b].elements, ranks);
    if (!bucket_compression[b].compressed()) continue;
    if (bucket_compression[b].allgather()) bucket_reports[b].algorithm = "compressed ring allgather";
    spdlog::info("bucket {}: compressed: {}", b, bucket_compression[b].describe());
  }
}

void DataParallelTrainer::Impl::replan(int new_ranks) {
  ranks = new_ranks;
  topology.emplace(training_topology(doc, ranks));
  models.clear();
  models.push_back(build_worker_model(doc, settings, data, 0, ranks, bucket_bytes));
  per_epoch = models[0]->replica->batches_per_epoch();
  plan_buckets();
}

DataParallelTrainer::DataParallelTrainer(config::Document doc, Progress::Mode progress, WorkerFault fault)
    : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.doc = std::move(doc);
  im.progress_mode = progress;
  im.fault = fault;
  const config::Document& d = im.doc;
  const config::Section& root = d.root();
  im.settings = read_replica_settings(d);
  im.cluster = ClusterSettings::read(d);
  // With nodes = K, workers defaults to K (one replica per node).
  if (im.cluster.nodes > 0 && root.get_or<int64_t>("workers", 0) == 0) im.settings.workers = im.cluster.nodes;
  im.ranks = static_cast<int>(im.settings.workers);
  if (im.cluster.nodes > 0 && im.ranks % im.cluster.nodes != 0)
    throw root.error("workers", fmt::format("must be a multiple of nodes = {}", im.cluster.nodes));

  const config::Section& sync_section = d.section("sync");
  const double bucket_mb = sync_section.get_or<double>("bucket_mb", 25.0);
  if (!(bucket_mb >= 0)) throw sync_section.error("bucket_mb", "must not be negative");
  im.bucket_bytes = static_cast<std::size_t>(bucket_mb * 1024.0 * 1024.0);
  im.algorithm = sync_section.get_choice("algorithm", {"auto", "ring", "rabenseifner", "topology_aware", "hierarchical", "direct"},
                                         "auto");
  im.step_timeout = sync_section.get_or<double>("step_timeout", 60.0);
  if (!(im.step_timeout > 0)) throw sync_section.error("step_timeout", "must be positive");
  im.compute_slots = sync_section.get_or<int>("compute_slots", 0);
  if (im.compute_slots < 0) throw sync_section.error("compute_slots", "must not be negative");
  im.scheduler_threads = sync_section.get_or<int>("scheduler_threads", 0);
  if (im.scheduler_threads < 0) throw sync_section.error("scheduler_threads", "must not be negative");
  im.scheduler = sync_section.get_choice("scheduler", {"sharing", "stealing"}, "sharing");
  im.topology.emplace(training_topology(d, im.ranks));
  if (im.cluster.elastic && d.find("topology") != nullptr)
    throw d.section("topology").error("ranks", "elastic = true re-forms over any number of nodes; a fixed [topology] "
                                               "does not apply (leave it out)");

  // Data: one data set, shared read-only by all replicas. With nodes = K the
  // replicas live in the nodes; this process builds rank 0's only, for the
  // bucket layout and the epoch length.
  const ReplicaData data = ReplicaData::read(d, im.settings);
  const int built = im.cluster.nodes > 0 ? 1 : im.ranks;
  for (int r = 0; r < built; ++r) {
    auto m = build_worker_model(d, im.settings, data, r, im.ranks, im.bucket_bytes, fault);
    im.per_epoch = m->replica->batches_per_epoch();
    im.models.push_back(std::move(m));
  }
  Replica& replica0 = *im.models[0]->replica;
  im.net_name = replica0.name();
  im.parameters = replica0.learnable_parameters();
  im.sample_unit = replica0.sample_unit();
  if (data.graphs) {
    im.graphs.emplace(Impl::GraphRun{data.graphs->source, data.graphs->language_model, !data.graphs->dev.empty()});
  }
  im.data = data;
  im.plan_buckets();

  const int64_t global_batch = im.settings.batch_size * im.ranks;

  // Output, as the Trainer writes it.
  const config::Section& output = d.section("output");
  const std::filesystem::path dir = output.get_or<std::string>("dir", "out");
  const std::string metrics = output.get_or<std::string>("metrics", "metrics.jsonl");
  if (!metrics.empty()) im.metrics = MetricsLog(dir / metrics);
  const std::string checkpoint = output.get_or<std::string>("checkpoint", "checkpoint.ckpt");
  if (!checkpoint.empty()) im.checkpoint_path = dir / checkpoint;
  // Rank 0's node writes it, maybe from another working directory.
  if (im.cluster.nodes > 0 && !im.checkpoint_path.empty()) im.checkpoint_path = std::filesystem::absolute(im.checkpoint_path);
  im.checkpoint_every = output.get_or<int64_t>("checkpoint_every", 0);
  im.keep_all = output.get_or<bool>("keep_all", false);
  if (im.cluster.elastic && im.checkpoint_path.empty())
    throw output.error("checkpoint", "elastic = true continues from the last checkpoint after a node is lost: "
                                     "give a checkpoint file");

  // [status] port = N (0: any free port) serves /metrics and /status over HTTP.
  if (const config::Section* st = d.find("status")) {
    const int port = st->get_or<int>("port", -1);
    if (port > 65535) throw st->error("port", "must be in 0..65535 (or -1: off)");
    im.status_settings.enabled = port >= 0;
    im.status_settings.port = static_cast<std::uint16_t>(std::max(port, 0));
    im.status_settings.listen = st->get_or<std::string>("listen", im.status_settings.listen);
    im.status_settings.port_file = st->get_or<std::string>("port_file", "");
  }

  d.section("blas").mark_all_used();
  d.reject_unused();
  spdlog::info("{} '{}': {} learnable parameters; {} workers x batch {} = global batch {}; {} buckets",
               im.graphs ? "model" : "net", im.net_name, im.parameters, im.ranks, im.settings.batch_size, global_batch, im.bucket_elements.size());
}

DataParallelTrainer::~DataParallelTrainer() = default;

int DataParallelTrainer::workers() const { return impl_->ranks; }

void DataParallelTrainer::resume(const std::filesystem::path& checkpoint) {
  Impl& im = *impl_;
  require(!im.models.empty(), "DataParallelTrainer::resume() must come before run()");
  const Checkpoint c = load_checkpoint(checkpoint);
  for (auto& m : im.models) {
    im.start = m->replica->restore(c, m->rank == 0);
    m->replica->seek(im.start.epoch, im.start.batch);
  }
  // With nodes, the replicas that train are theirs: each gets the checkpoint.
  if (im.cluster.nodes > 0) im.resumed_checkpoint = encode_checkpoint(c);
  spdlog::info("resumed from '{}': epoch {} batch {} (iteration {})", checkpoint.string(), im.start.epoch + 1,
               im.start.batch, c.iteration);
  im.resumed_from = checkpoint;
}

const std::vector<std::vector<float>>& DataParallelTrainer::final_parameters() const {
  return impl_->final_parameters;
}

RunRecord DataParallelTrainer::Impl::train() {
  Impl& im = *this;
  require(!im.models.empty(), "DataParallelTrainer::run() runs once");
  const int cores = blas::available_cores();
  const int blas_threads = std::max(1, blas::threads());
  const int slots = im.compute_slots > 0 ? im.compute_slots : std::max(1, cores / blas_threads);
  const int scheduler_threads = im.scheduler_threads > 0 ? im.scheduler_threads : std::clamp(cores, 1, 2);
  spdlog::info("{} workers (detached threads), {} computing at once x {} BLAS threads, {} scheduler threads",
               im.ranks, std::min(slots, im.ranks), blas_threads, scheduler_threads);

  caf::actor_system_config cfg;
  cfg.add_message_types<caf::id_block::taihu>();
  cfg.set("scheduler.max-threads", scheduler_threads);
  cfg.set("scheduler.policy", im.scheduler == "sharing" ? caf::atom("sharing") : caf::atom("stealing"));
  cfg.set("work-stealing.aggressive-poll-attempts", 10);
  const bool clustered = im.cluster.nodes > 0;
  if (clustered) configure_control_plane(cfg, im.cluster.heartbeat, im.cluster.dead_after);
  caf::actor_system system{cfg};

  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(im.step_timeout));
  auto compute_slots = std::make_shared<ComputeSlots>(slots);
  RunRecord record;
  std::optional<WorkerFailure> failure;
  std::exception_ptr other;

  auto status = std::make_shared<RunStatus>();
  status->net_name = im.net_name;
  status->ranks = im.ranks;
  status->nodes = im.cluster.nodes;
  for (std::size_t b = 0; b < im.bucket_elements.size(); ++b) {
    const auto schedule = collectives::make_allreduce(im.bucket_algorithms[b], *im.topology, im.bucket_elements[b]);
    std::uint64_t elements = 0;
    for (int r = 0; r < im.ranks; ++r) elements += schedule.elements_sent(r);
    status->buckets.push_back({im.bucket_elements[b], std::string(collectives::name(im.bucket_algorithms[b])),
                               elements * sizeof(float)});
  }
  status->state = clustered ? "waiting for nodes" : "training";
  if (!clustered) {
    for (int r = 0; r < im.ranks; ++r) status->members.push_back({fmt::format("worker {} (in-process)", r), "training", {r}});
    status->rank_node.assign(static_cast<std::size_t>(im.ranks), 0);
  }
  std::unique_ptr<transport::StatusServer> status_server;
  if (im.status_settings.enabled) {
    status_server = std::make_unique<transport::StatusServer>(
        im.status_settings.listen, im.status_settings.port,
        std::map<std::string, transport::StatusPage>{
            {"/metrics", {"text/plain; version=0.0.4", [status] { return status->metrics(); }}},
            {"/status", {"application/json", [status] { return status->status(); }}}});
    spdlog::info("status endpoint: http://{}:{}/metrics and /status", im.status_settings.listen, status_server->port());
    if (!im.status_settings.port_file.empty()) {
      std::ofstream(im.status_settings.port_file + ".tmp") << status_server->port() << "\n";
      std::filesystem::rename(im.status_settings.port_file + ".tmp", im.status_settings.port_file);
    }
  }
  auto set_state = [&](const std::string& state) {
    std::lock_guard lock(status->mutex);
    status->state = state;
  };
  {
    caf::scoped_actor self{system};
    std::vector<caf::actor> workers;
    std::vector<std::vector<caf::actor>> shards(im.bucket_elements.size());
    std::map<caf::actor_addr, Participant> who;
    Cluster cluster;
    auto algorithm_names = [&] {
      std::vector<std::string> names;
      for (auto a : im.bucket_algorithms) names.emplace_back(collectives::name(a));
      return names;
    };
    // Wires the coordinator to the cluster's current generation.
    auto attach_cluster = [&] {
      workers = cluster.workers;
      who.clear();
      {
        std::lock_guard lock(status->mutex);
        status->state = "training";
        status->ranks = im.ranks;
        status->rank_node = cluster.rank_node;
        status->members.clear();
        for (std::size_t i = 0; i < cluster.nodes.size(); ++i) {
          RunStatus::Member m{fmt::format("node {} '{}'", i, cluster.nodes[i].name),
                              cluster.nodes[i].agent ? "training" : "lost", {}};
          for (int r = 0; r < im.ranks; ++r)
            if (cluster.rank_node[static_cast<std::size_t>(r)] == static_cast<int>(i)) m.ranks.push_back(r);
          status->members.push_back(std::move(m));
        }
      }
      for (int i : live_nodes(cluster)) {
        const auto& n = cluster.nodes[static_cast<std::size_t>(i)];
        who[n.agent.address()] = {-1, "node", fmt::format("node {} '{}'", i, n.name), i};
      }
      for (int r = 0; r < im.ranks; ++r) {
        const int node = cluster.rank_node[static_cast<std::size_t>(r)];
        who[workers[static_cast<std::size_t>(r)].address()] = {
            r, "worker", fmt::format(" on node {} '{}'", node, cluster.nodes[static_cast<std::size_t>(node)].name),
            node};
      }
      for (auto& w : workers) self->monitor(w);
    };
    if (clustered) {
      try {
        launch_cluster(system, self, im.cluster, cluster_config(im.doc), im.ranks, algorithm_names(), cluster);
      } catch (...) {
        stop_cluster(system, self, cluster);
        throw;
      }
      im.models.clear();
      attach_cluster();
    } else {
      for (std::size_t b = 0; b < shards.size(); ++b) {
        shards[b] = sync::spawn_bucket_shards(system, *im.topology,
                                              {static_cast<std::uint32_t>(b), im.bucket_elements[b],
                                               im.bucket_algorithms[b], im.bucket_compression[b]});
        for (int r = 0; r < im.ranks; ++r)
          who[shards[b][static_cast<std::size_t>(r)].address()] = {r, fmt::format("shard of bucket {}", b), ""};
      }
      for (int r = 0; r < im.ranks; ++r) {
        auto& m = im.models[static_cast<std::size_t>(r)];
        for (auto& bucket_shards : shards) m->shards.push_back(bucket_shards[static_cast<std::size_t>(r)]);
        m->compute_slots = compute_slots;
        workers.push_back(spawn_worker(system, std::move(m)));
        who[workers.back().address()] = {r, "worker", ""};
      }
      im.models.clear();
      for (auto& bucket_shards : shards)
        for (auto& s : bucket_shards) self->monitor(s);
      for (std::size_t b = 0; b < shards.size(); ++b)
        for (int r = 0; r < im.ranks; ++r)
          self->send(shards[b][static_cast<std::size_t>(r)],
                     msg::ShardInit{static_cast<std::uint32_t>(b), shards[b], workers[static_cast<std::size_t>(r)]});
      for (auto& w : workers) self->monitor(w);
    }

    std::uint64_t iteration = 0;  // the step being waited for, for messages
    int lost_node = -1;           // the node a failure was traced to (clusters)
    bool stale = false;           // a handler consumed a message of an earlier cluster generation
    auto on_down = [&](const caf::down_msg& dm) {
      auto it = who.find(dm.source);
      if (it == who.end() && im.cluster.elastic) {
        stale = true;  // an actor of an earlier generation
        return;
      }
      const Participant p = it != who.end() ? it->second : Participant{-1, "an actor", ""};
      lost_node = p.node;
      if (p.role == "node") {
        std::lock_guard lock(status->mutex);
        for (auto& m : status->members)
          if (m.name == p.where) m.state = "lost";
      }
      if (p.role == "node")
        throw WorkerFailure(-1, fmt::format("{} was lost at iteration {}: {}", p.where, iteration,
                                            dm.reason == caf::exit_reason::remote_link_unreachable
                                                ? fmt::format("its connection closed or it was silent for more than "
                                                              "dead_after = {} s (killed, hung or unreachable)",
                                                              im.cluster.dead_after)
                                                : reason_text(system, dm.reason)));
      throw WorkerFailure(p.rank, fmt::format("worker {}{} failed at iteration {}{}: {}", p.rank, p.where, iteration,
                                              p.role == "worker" ? "" : " (its " + p.role + ")",
                                              reason_text(system, dm.reason)));
    };
    // A node reports a failure it saw: a local actor, or a lost data-plane peer.
    auto on_node_failure = [&](msg::NodeFailure& f) {
      if (f.generation != cluster.generation) {
        stale = true;
        return;
      }
      lost_node = f.node;  // the failing node, or the peer whose connection was lost
      const std::string node =
          f.node >= 0 && static_cast<std::size_t>(f.node) < cluster.nodes.size()
              ? fmt::format("node {} '{}'", f.node, cluster.nodes[static_cast<std::size_t>(f.node)].name)
              : fmt::format("node {}", f.node);
      throw WorkerFailure(f.rank, fmt::format("{} failed at iteration {}: {}", node, iteration, f.reason));
    };
    // A request to one worker with the step timeout; a failure names it.
    auto ask = [&](int rank, const char* what, auto on_reply, auto... args) {
      if (clustered) {
        // A plain send, whose answer comes back as an ordinary message, so
        // that a lost node (down_msg, NodeFailure) ends the wait at once; a
        // request to a dead node would only time out (CAF 0.17).
        self->send(workers[static_cast<std::size_t>(rank)], args...);
        do {
          stale = false;
          self->receive(on_reply, on_down, on_node_failure, caf::after(timeout) >> [&] {
            throw WorkerFailure(rank, fmt::format("worker {}{} did not answer {} within {} s", rank,
                                                  who[workers[static_cast<std::size_t>(rank)].address()].where, what,
                                                  im.step_timeout));
          });
        } while (stale);
        return;
      }
      self->request(workers[static_cast<std::size_t>(rank)], timeout, args...)
          .receive(on_reply, [&](caf::error& e) {
            auto it = who.find(workers[static_cast<std::size_t>(rank)].address());
            throw WorkerFailure(rank, fmt::format("worker {}{} did not answer {} within {} s: {}", rank,
                                                  it != who.end() ? it->second.where : "", what, im.step_timeout,
                                                  reason_text(system, e)));
          });
    };

    double exposed = 0.0, comm = 0.0, hidden = 0.0;
    // The global batch the checkpoint on disk was written at (elastic runs
    // map its position to the next one).
    int64_t checkpoint_global_batch = im.settings.batch_size * im.ranks;
    const int64_t first_global_batch = checkpoint_global_batch;
    // Compressor residuals and momentum differ per rank: each rank writes its
    // own file next to the checkpoint, tagged with the iterations done.
    const bool compressed = std::any_of(im.bucket_compression.begin(), im.bucket_compression.end(),
                                        [](const collectives::BucketCompression& b) { return b.compressed(); });
    auto iterations_done = [&](int64_t epoch, int64_t batch) { return epoch * im.per_epoch + batch; };
    // Which node each rank ran on when the checkpoint on disk was written
    // (in one process: all on node 0), and its batches per epoch.
    auto current_rank_node = [&] {
      return im.cluster.nodes > 0 ? cluster.rank_node : std::vector<int>(static_cast<std::size_t>(im.ranks), 0);
    };
    std::vector<int> checkpoint_rank_node = current_rank_node();
    int64_t checkpoint_per_epoch = im.per_epoch;
    // A resumed run: each rank loads its own file.
    auto restore_compressors = [&](const std::filesystem::path& checkpoint, const TrainPosition& at) {
      if (!compressed) return;
      for (int r = 0; r < im.ranks; ++r)
        ask(r, "the compressor restore request", [](bool) {}, msg::restore_atom_v,
            msg::CompressorRestore{checkpoint.string(), iterations_done(at.epoch, at.batch), im.ranks, {r}, 1.0f});
    };
    // After an elastic regroup onto other ranks: each new rank takes the
    // states of the old ranks that ran on its node, weighted so that their
    // pending updates (residual sum / ranks) carry over (merge_states). Those
    // of a lost node are gone with it; a node that joined starts from zero.
    auto regroup_compressors = [&](const std::filesystem::path& checkpoint, int64_t epoch, int64_t batch) {
      if (!compressed) return;
      const int old_ranks = static_cast<int>(checkpoint_rank_node.size());
      for (int r = 0; r < im.ranks; ++r) {
        const int node = cluster.rank_node[static_cast<std::size_t>(r)];
        msg::CompressorRestore restore{checkpoint.string(), epoch * checkpoint_per_epoch + batch, old_ranks, {}, 1.0f};
        for (int q = 0; q < old_ranks; ++q)
          if (checkpoint_rank_node[static_cast<std::size_t>(q)] == node) restore.sources.push_back(q);
        const auto sharing = std::count(cluster.rank_node.begin(), cluster.rank_node.end(), node);
        restore.weight = static_cast<float>(static_cast<double>(im.ranks) / old_ranks / static_cast<double>(sharing));
        ask(r, "the compressor restore request", [](bool) {}, msg::restore_atom_v, std::move(restore));
      }
    };
    // Every rank writes its compressor state, then rank 0 the checkpoint (so
    // the checkpoint's iteration always has a file for each rank: the last
    // or the one before, core/train/compressor_checkpoint.hpp). A failure
    // reply stops the run like any other.
    auto save = [&](int64_t epoch, int64_t batch, double elapsed, double loss_sum) {
      if (im.checkpoint_path.empty()) return;
      if (compressed)
        for (int r = 0; r < im.ranks; ++r)
          ask(r, "the compressor checkpoint request", [](bool) {}, msg::save_atom_v, msg::compressor_atom_v,
              im.checkpoint_path.string(), iterations_done(epoch, batch));
      ask(0, "the checkpoint request", [](bool) {}, msg::save_atom_v, im.checkpoint_path.string(), im.keep_all,
          epoch, batch, elapsed, loss_sum);
      checkpoint_global_batch = im.settings.batch_size * im.ranks;
      checkpoint_rank_node = current_rank_node();
      checkpoint_per_epoch = im.per_epoch;
    };
    // Elastic: a new cluster generation over the live nodes (without those
    // that failed, with those that joined), continuing from the checkpoint.
    auto reform = [&](const std::string& why) {
      if (lost_node >= 0) node_lost(self, cluster, lost_node);
      for (auto& w : workers) self->demonitor(w);
      // A node that cannot drop its replicas within a step's time is as good
      // as lost (a hung one fails the request after dead_after already).
      const auto drop_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::duration<double>(std::max(im.step_timeout, im.cluster.dead_after + 2.0)));
      for (int i : live_nodes(cluster)) {
        auto& node = cluster.nodes[static_cast<std::size_t>(i)];
        self->request(node.agent, drop_timeout, msg::reform_atom_v)
            .receive([](bool) {},
                     [&](caf::error& e) {
                       spdlog::warn("elastic: node {} '{}' is gone too ({})", i, node.name, reason_text(system, e));
                       node_lost(self, cluster, i);
                     });
      }
      // Drop what the old generation still had in flight.
      for (bool more = true; more;) {
        more = false;
        self->receive([&](const caf::down_msg&) { more = true; }, [&](msg::NodeFailure&) { more = true; },
                      [&](msg::StepDone&) { more = true; }, caf::after(std::chrono::milliseconds(0)) >> [] {});
      }
      const auto live = live_nodes(cluster);
      const int per_node = static_cast<int>(im.settings.workers) / im.cluster.nodes;
      if (live.empty()) throw WorkerFailure(-1, fmt::format("{}; no node is left to continue with", why));
      const int64_t old_global = checkpoint_global_batch;
      const int new_ranks = per_node * static_cast<int>(live.size());
      // The global batch stays (as near as it divides), so the learning rate
      // and the epoch's length still fit: each worker takes a larger share.
      im.settings.batch_size = std::max<int64_t>(1, first_global_batch / new_ranks);
      im.doc.root().set("batch_size", std::to_string(im.settings.batch_size), im.doc.root().where());
      im.replan(new_ranks);
      form_cluster(system, self, im.cluster, cluster_config(im.doc), im.ranks, algorithm_names(), cluster);
      attach_cluster();
      const int64_t new_global = im.settings.batch_size * im.ranks;
      if (std::filesystem::exists(im.checkpoint_path)) {
        const Checkpoint c = load_checkpoint(im.checkpoint_path);
        // The same sample offset in the epoch's order, at the new global batch.
        TrainPosition position{c.epoch, c.batch * old_global / new_global, c.elapsed_seconds, 0.0};
        if (c.batch > 0) position.epoch_loss_sum = c.epoch_loss_sum * static_cast<double>(position.batch) /
                                                   static_cast<double>(c.batch);
        if (position.batch >= im.per_epoch) position = {position.epoch + 1, 0, position.elapsed_seconds, 0.0};
        for (int r = 0; r < im.ranks; ++r)
          ask(r, "the restore request", [](bool) {}, msg::restore_atom_v, im.checkpoint_path.string(), position.epoch,
              position.batch);
        regroup_compressors(im.checkpoint_path, c.epoch, c.batch);  // the files stay those of the checkpoint's ranks
        im.start = position;
        checkpoint_global_batch = new_global;
      } else {
        im.start = {};
      }
      spdlog::warn("elastic: {}; continuing on {} nodes with {} ranks x batch {} from epoch {} batch {} of {}", why,
                   live.size(), im.ranks, im.settings.batch_size, im.start.epoch + 1, im.start.batch, im.per_epoch);
      lost_node = -1;
    };

    for (bool training = true; training;) try {
      if (!im.resumed_checkpoint.empty()) {
        for (int r = 0; r < im.ranks; ++r)
          ask(r, "the checkpoint restore request", [](bool) {},
              msg::CheckpointRestore{im.resumed_checkpoint, fmt::format("'{}'", im.resumed_from.string())});
        im.resumed_checkpoint.clear();
      }
      // Every replica starts from rank 0's weights.
      msg::Parameters p0;
      ask(0, "the parameter request", [&](msg::Parameters& p) { p0 = std::move(p); }, caf::get_atom_v);
      for (int r = 1; r < im.ranks; ++r) self->send(workers[static_cast<std::size_t>(r)], p0);
      if (!im.resumed_from.empty()) {
        restore_compressors(im.resumed_from, im.start);
        im.resumed_from.clear();
      }

      const int64_t global_batch = im.settings.batch_size * im.ranks;
      double elapsed = im.start.elapsed_seconds;
      for (int64_t epoch = im.start.epoch; epoch < im.settings.epochs; ++epoch) {
        EpochRecord result;
        result.epoch = epoch + 1;
        Progress progress(fmt::format("epoch {}/{}", epoch + 1, im.settings.epochs), im.per_epoch, global_batch,
                          im.progress_mode, im.settings.display, im.sample_unit);
        const auto start = Clock::now();
        const int64_t first_batch = epoch == im.start.epoch ? im.start.batch : 0;
        double loss_sum = epoch == im.start.epoch ? im.start.epoch_loss_sum : 0.0;
        for (int64_t batch = first_batch; batch < im.per_epoch; ++batch) {
          iteration = static_cast<std::uint64_t>(epoch * im.per_epoch + batch);
          for (auto& w : workers) self->send(w, msg::Step{iteration});
          std::vector<bool> done(static_cast<std::size_t>(im.ranks), false);
          int got = 0;
          double loss = 0.0;
          const auto deadline = Clock::now() + timeout;
          while (got < im.ranks) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            bool timed_out = left.count() <= 0;
            if (!timed_out) {
              self->receive(
                  [&](msg::StepDone& d) {
                    if (d.iteration != iteration && im.cluster.elastic) return;  // an earlier generation's
                    require(d.iteration == iteration && d.rank >= 0 && d.rank < im.ranks &&
                                !done[static_cast<std::size_t>(d.rank)],
                            "unexpected StepDone of iteration {} from rank {}", d.iteration, d.rank);
                    done[static_cast<std::size_t>(d.rank)] = true;
                    ++got;
                    loss += d.loss;
                    result.samples += d.stats.samples;
                    result.vertices += d.stats.vertices;
                    exposed += d.stats.exposed_comm_seconds / im.ranks;
                    comm += d.stats.comm_seconds;
                    hidden += d.stats.hidden_comm_seconds;
                    record.bytes_sent += static_cast<double>(d.stats.bytes_sent);
                  },
                  on_down, on_node_failure, caf::after(left) >> [&] { timed_out = true; });
            }
            if (timed_out) {
              // Unfinished workers that wait for reductions answer a probe at
              // once; the one still computing (or hung) does not.
              int late = -1;
              const auto probe = std::min(timeout, std::chrono::milliseconds(500));
              for (int r = 0; r < im.ranks && late < 0; ++r) {
                if (done[static_cast<std::size_t>(r)]) continue;
                self->request(workers[static_cast<std::size_t>(r)], probe, msg::stats_atom_v)
                    .receive([](std::uint64_t, bool, std::uint64_t) {}, [&](caf::error&) { late = r; });
              }
              if (late < 0) {
                late = static_cast<int>(std::find(done.begin(), done.end(), false) - done.begin());
                throw WorkerFailure(late, fmt::format("iteration {} not done within step_timeout = {} s: worker {} "
                                                      "(and maybe others) still waits for its reductions",
                                                      iteration, im.step_timeout, late));
              }
              throw WorkerFailure(late, fmt::format("worker {} stalled: iteration {} not done within step_timeout = {} s",
                                                    late, iteration, im.step_timeout));
            }
          }
          loss /= im.ranks;
          ++record.iterations;
          if (!std::isfinite(loss))
            throw NumericError(fmt::format("loss became {} at iteration {} (epoch {}, batch {}); training stopped. "
                                           "Lower solver.base_lr or set solver.clip_gradients.",
                                           std::isnan(loss) ? "NaN" : "infinite", iteration + 1, epoch + 1, batch + 1));
          loss_sum += loss;
          progress.update(batch + 1, fmt::format("loss {:.4f}", loss_sum / static_cast<double>(batch + 1)));
          {
            std::lock_guard lock(status->mutex);
            status->iterations = iteration + 1;
            status->epoch = epoch + 1;
            status->loss = loss;
            status->images_per_second = progress.items_per_second();
          }
          if (im.settings.display > 0 && (iteration + 1) % static_cast<std::uint64_t>(im.settings.display) == 0)
            im.metrics.write({{"type", std::string("train")},
                              {"epoch", epoch + 1},
                              {"iteration", static_cast<int64_t>(iteration + 1)},
                              {"loss", loss},
                              {"images_per_second", progress.items_per_second()}});
          if (im.checkpoint_every > 0 && (iteration + 1) % static_cast<std::uint64_t>(im.checkpoint_every) == 0 &&
              batch + 1 < im.per_epoch)
            save(epoch, batch + 1, elapsed + std::chrono::duration<double>(Clock::now() - start).count(), loss_sum);
        }
        result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
        result.train_loss = loss_sum / static_cast<double>(std::max<int64_t>(im.per_epoch, 1));
        record.seconds += result.seconds;
        record.samples += result.samples;
        record.vertices += result.vertices;
        elapsed += result.seconds;
        progress.finish(fmt::format("train loss {:.4f}", result.train_loss));
        ask(0, "the evaluation request", [&](ReplicaEvaluation& e) { result.evaluation = e; }, msg::eval_atom_v);
        im.log_epoch(result);
        record.epochs.push_back(result);
        save(epoch + 1, 0, elapsed, 0.0);
        if (im.cluster.elastic && epoch + 1 < im.settings.epochs && admit_waiting_nodes(self, cluster) > 0) {
          for (int i : live_nodes(cluster))
            if (std::find(cluster.rank_node.begin(), cluster.rank_node.end(), i) == cluster.rank_node.end())
              who[cluster.nodes[static_cast<std::size_t>(i)].agent.address()] = {
                  -1, "node", fmt::format("node {} '{}'", i, cluster.nodes[static_cast<std::size_t>(i)].name), i};
          throw Regroup{};
        }
      }
      for (int r = 0; r < im.ranks; ++r) {
        ask(r, "the parameter request",
            [&](msg::Parameters& p) { im.final_parameters.push_back(p.values.to_vector()); }, caf::get_atom_v);
      }
      record.exposed_comm_seconds = exposed;
      record.comm_hidden_fraction = comm > 0 ? hidden / comm : 0.0;
      set_state("finished");
      training = false;
    } catch (const Regroup&) {
      try {
        reform("nodes joined");
      } catch (...) {
        other = std::current_exception();
        training = false;
      }
    } catch (const WorkerFailure& f) {
      if (clustered && im.cluster.elastic) {
        spdlog::warn("elastic: {}", f.what());
        try {
          reform(fmt::format("lost {}", lost_node >= 0 ? fmt::format("node {} '{}'", lost_node,
                                                                     cluster.nodes[static_cast<std::size_t>(lost_node)].name)
                                                       : std::string("a node")));
          continue;
        } catch (const WorkerFailure& g) {
          failure.emplace(g);
        } catch (const std::exception& e) {
          failure.emplace(f.rank(), fmt::format("{}; re-forming the cluster failed: {}", f.what(), e.what()));
        }
      } else {
        failure.emplace(f);
      }
      set_state(std::string("failed: ") + failure->what());
      training = false;
    } catch (...) {
      other = std::current_exception();
      training = false;
    }
    // Stop everything; the system's destructor waits for the actors to finish.
    for (auto& w : workers) {
      self->demonitor(w);
      self->send_exit(w, caf::exit_reason::user_shutdown);
    }
    if (clustered) stop_cluster(system, self, cluster);
    for (auto& bucket_shards : shards)
      for (auto& s : bucket_shards) {
        self->demonitor(s);
        self->send_exit(s, caf::exit_reason::user_shutdown);
      }
  }
  if (failure) {
    if (!im.checkpoint_path.empty() && std::filesystem::exists(im.checkpoint_path))
      failure.emplace(failure->rank(), fmt::format("{}. The last checkpoint '{}' is intact.", failure->what(),
                                                    im.checkpoint_path.string()));
    spdlog::error("{}", failure->what());
    throw *failure;
  }
  if (other) std::rethrow_exception(other);
  return record;
}

void DataParallelTrainer::Impl::log_epoch(const EpochRecord& e) {
  const int64_t iteration = e.epoch * per_epoch;
  const double rate = static_cast<double>(e.samples) / std::max(e.seconds, 1e-9);
  if (graphs) {
    GraphEpochResult g{e.epoch, e.train_loss, e.evaluation.dev, e.evaluation.test, e.seconds, rate,
                       static_cast<double>(e.vertices) / std::max(e.seconds, 1e-9)};
    log_graph_epoch(g, settings.epochs, graphs->has_dev, graphs->language_model, sample_unit.c_str(), iteration,
                    metrics);
    return;
  }
  spdlog::info("epoch {}/{}: train loss {:.4f}, test loss {:.4f}, test accuracy {:.2f}%", e.epoch, settings.epochs,
               e.train_loss, e.evaluation.test.loss, 100.0 * e.evaluation.test.accuracy);
  metrics.write({{"type", std::string("test")},
                 {"epoch", e.epoch},
                 {"iteration", iteration},
                 {"loss", e.evaluation.test.loss},
                 {"accuracy", e.evaluation.test.accuracy},
                 {"train_loss", e.train_loss},
                 {"images_per_second", rate}});
}

bool DataParallelTrainer::dynamic_model() const { return impl_->graphs.has_value(); }

TrainReport DataParallelTrainer::run() {
  Impl& im = *impl_;
  require(!im.graphs, "DataParallelTrainer::run() trains nets; a dynamic model ([model]) trains with run_graph()");
  const RunRecord record = im.train();
  TrainReport report;
  report.net = im.net_name;
  report.parameters = im.parameters;
  report.batch_size = im.settings.batch_size * im.ranks;
  report.blas_kernel = blas::kernel_name();
  report.epochs = im.settings.epochs;
  report.iterations = im.settings.epochs * im.per_epoch;
  for (const EpochRecord& e : record.epochs)
    report.history.push_back(EpochResult{e.epoch, e.train_loss, e.evaluation.test.loss, e.evaluation.test.accuracy,
                                         e.seconds, static_cast<double>(e.samples) / std::max(e.seconds, 1e-9)});
  if (!report.history.empty()) {
    report.train_loss = report.history.back().train_loss;
    report.test_loss = report.history.back().test_loss;
    report.test_accuracy = report.history.back().test_accuracy;
  }
  report.seconds = record.seconds;
  report.images_per_second = record.seconds > 0 ? static_cast<double>(record.samples) / record.seconds : 0.0;
  im.add_data_parallel_figures(record, report);
  return report;
}

GraphTrainReport DataParallelTrainer::run_graph() {
  Impl& im = *impl_;
  require(im.graphs.has_value(), "DataParallelTrainer::run_graph() trains dynamic models ([model]); a net trains "
          "with run()");
  const RunRecord record = im.train();
  GraphTrainReport report;
  report.model = im.net_name;
  report.data = im.graphs->source;
  report.language_model = im.graphs->language_model;
  report.has_dev = im.graphs->has_dev;
  report.parameters = im.parameters;
  report.epochs = im.settings.epochs;
  report.iterations = im.settings.epochs * im.per_epoch;
  report.batch_size = im.settings.batch_size * im.ranks;
  report.runner = "data-parallel";
  std::vector<GraphEpochResult> history;
  for (const EpochRecord& e : record.epochs)
    history.push_back(GraphEpochResult{e.epoch, e.train_loss, e.evaluation.dev, e.evaluation.test, e.seconds,
                                       static_cast<double>(e.samples) / std::max(e.seconds, 1e-9),
                                       static_cast<double>(e.vertices) / std::max(e.seconds, 1e-9)});
  report.set_history(std::move(history));
  report.seconds = record.seconds;
  report.samples_per_second = record.seconds > 0 ? static_cast<double>(record.samples) / record.seconds : 0.0;
  report.vertices_per_second = record.seconds > 0 ? static_cast<double>(record.vertices) / record.seconds : 0.0;
  im.add_data_parallel_figures(record, report);
  return report;
}

}  // namespace taihu::compute
