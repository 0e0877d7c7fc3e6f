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
#include "actors/net/status_server.hpp"
#include "actors/sync/algorithms.hpp"
#include "actors/sync/bucket_shards.hpp"
#include "actors/sync/buckets.hpp"
#include "actors/sync/cost_model.hpp"
#include "actors/sync/shard_actor.hpp"
#include "core/blas/blas.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/common/check.hpp"
#include "core/data/batch_source.hpp"
#include "core/data/dataset.hpp"
#include "core/net/net.hpp"
#include "core/solver/solver.hpp"
#include "core/train/metrics_log.hpp"
#include "messages/type_ids.hpp"

namespace taihu::compute {

namespace {

using Clock = std::chrono::steady_clock;

// In-process links: a message costs a few microseconds, copies run near
// memcpy speed, and adding floats is a little slower than copying them.
sync::Topology in_process_topology(int ranks) { return sync::Topology::uniform(ranks, sync::Link{3e-6, 8e9}, 6e9); }

// The config as the nodes get it: the paths that are relative to the config
// file made absolute, since the nodes parse it from a string.
std::string cluster_config(const config::Document& doc) {
  config::Document copy = doc;
  config::Section& root = copy.root();
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
};

}  // namespace

sync::Topology training_topology(const config::Document& doc, int ranks) {
  if (const config::Section* t = doc.find("topology")) {
    auto topology = sync::Topology::from_config(*t);
    if (topology.ranks() != ranks)
      throw t->error("ranks", fmt::format("the topology has {} ranks, but workers = {}", topology.ranks(), ranks));
    return topology;
  }
  return in_process_topology(ranks);
}

ReplicaData ReplicaData::read(const config::Document& doc) {
  ReplicaData data;
  data.config = DataConfig::read(doc, doc.section("data"));
  data.train = make_dataset(data.config, Split::train);
  data.test = make_dataset(data.config, Split::test);
  return data;
}

std::shared_ptr<WorkerModel> build_worker_model(const config::Document& d, const TrainSettings& settings,
                                                const ReplicaData& data, int r, int ranks, std::size_t bucket_bytes,
                                                WorkerFault fault) {
  const config::Section& root = d.root();
  const int64_t global_batch = settings.batch_size * ranks;
  auto m = std::make_shared<WorkerModel>();
  m->rank = r;
  m->ranks = ranks;
  m->settings = settings;
  m->fault = fault;
  // Seeds differ per rank (dropout); weights come from rank 0's broadcast.
  m->net = build_net(d, settings, settings.batch_size, settings.seed + static_cast<uint64_t>(r));
  if (r == 0) check_sample_shape(d, *m->net, *data.train, settings);
  BatchOptions train_options;
  train_options.batch_size = global_batch;
  train_options.seed = settings.seed;
  train_options.shuffle = data.config.shuffle;
  train_options.drop_last = true;
  train_options.prefetch = data.config.prefetch;
  train_options.shard_count = ranks;
  train_options.shard_index = r;
  require<ConfigError>(data.train->size() >= global_batch,
                       "{}: the training set has {} samples, fewer than workers x batch_size = {}",
                       root.where().str(), data.train->size(), global_batch);
  m->train = std::make_unique<BatchSource>(data.train, train_options);
  if (r == 0) {
    BatchOptions test_options = train_options;
    test_options.batch_size = settings.test_batch_size;
    test_options.shuffle = false;
    test_options.drop_last = false;
    test_options.shard_count = 1;
    test_options.shard_index = 0;
    m->test = std::make_unique<BatchSource>(data.test, test_options);
  }
  const int64_t per_epoch = m->train->batches_per_epoch();
  m->solver = Solver::create(d.section("solver"), m->net->learnable_params(), settings.epochs * per_epoch);
  m->buckets = std::make_unique<sync::Buckets>(*m->net, bucket_bytes);
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
                                  members_json.empty() ? "" : ",", net::json_escape(m.name), m.state, r);
    }
    for (int n : rank_node) ranks_json += fmt::format("{}{}", ranks_json.empty() ? "" : ", ", n);
    for (const auto& b : buckets)
      buckets_json += fmt::format("{}\n      {{\"elements\": {}, \"algorithm\": \"{}\", \"bytes_per_iteration\": {}}}",
                                  buckets_json.empty() ? "" : ",", b.elements, b.algorithm, b.bytes_per_iteration);
    return fmt::format(
        "{{\n  \"state\": \"{}\",\n  \"net\": \"{}\",\n  \"iteration\": {},\n  \"epoch\": {},\n  \"loss\": {},\n"
        "  \"images_per_second\": {},\n  \"members\": [{}\n  ],\n  \"topology\": {{\n    \"ranks\": {},\n    \"nodes\": {},\n"
        "    \"rank_node\": [{}],\n    \"buckets\": [{}\n    ]\n  }}\n}}\n",
        net::json_escape(state), net::json_escape(net_name), iterations, epoch, loss, images_per_second, members_json,
        ranks, nodes, ranks_json, buckets_json);
  }
};

struct StatusSettings {
  bool enabled = false;
  std::string listen = "127.0.0.1";
  std::uint16_t port = 0;
  std::string port_file;
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
  std::optional<sync::Topology> topology;
  ClusterSettings cluster;
  StatusSettings status_settings;
  std::vector<std::shared_ptr<WorkerModel>> models;
  std::vector<std::size_t> bucket_elements;
  std::vector<sync::Algorithm> bucket_algorithms;
  std::vector<BucketReport> bucket_reports;
  std::vector<sync::BucketCompression> bucket_compression;  // [compress]; empty segments: allreduce
  double dense_bytes = 0;  // all ranks, per iteration, with dense ring allreduce
  int64_t per_epoch = 0;
  std::string net_name;
  int64_t parameters = 0;
  MetricsLog metrics;
  std::filesystem::path checkpoint_path;
  int64_t checkpoint_every = 0;
  bool keep_all = false;
  TrainPosition start;
  std::vector<std::vector<float>> final_parameters;
};

DataParallelTrainer::DataParallelTrainer(config::Document doc, Progress::Mode progress, WorkerFault fault)
    : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.doc = std::move(doc);
  im.progress_mode = progress;
  im.fault = fault;
  const config::Document& d = im.doc;
  const config::Section& root = d.root();
  im.settings = TrainSettings::read(root);
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
  im.algorithm = sync_section.get_choice("algorithm", {"auto", "ring", "rabenseifner", "topology_aware", "hierarchical"},
                                         "auto");
  im.step_timeout = sync_section.get_or<double>("step_timeout", 60.0);
  if (!(im.step_timeout > 0)) throw sync_section.error("step_timeout", "must be positive");
  im.compute_slots = sync_section.get_or<int>("compute_slots", 0);
  if (im.compute_slots < 0) throw sync_section.error("compute_slots", "must not be negative");
  im.scheduler_threads = sync_section.get_or<int>("scheduler_threads", 0);
  if (im.scheduler_threads < 0) throw sync_section.error("scheduler_threads", "must not be negative");
  im.scheduler = sync_section.get_choice("scheduler", {"sharing", "stealing"}, "sharing");
  im.topology.emplace(training_topology(d, im.ranks));

  // Data: one data set, shared read-only by all replicas. With nodes = K the
  // replicas live in the nodes; this process builds rank 0's only, for the
  // bucket layout and the epoch length.
  const ReplicaData data = ReplicaData::read(d);
  const int built = im.cluster.nodes > 0 ? 1 : im.ranks;
  for (int r = 0; r < built; ++r) {
    auto m = build_worker_model(d, im.settings, data, r, im.ranks, im.bucket_bytes, fault);
    im.per_epoch = m->train->batches_per_epoch();
    im.models.push_back(std::move(m));
  }
  const Net& net0 = *im.models[0]->net;
  im.net_name = net0.name();
  im.parameters = net0.num_learnable_parameters();

  // One collective per bucket.
  const sync::Buckets& buckets = *im.models[0]->buckets;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const std::size_t n = buckets[b].elements;
    const double bytes = static_cast<double>(n) * sizeof(float);
    sync::Algorithm a;
    double predicted;
    if (im.algorithm == "auto") {
      const auto choice = sync::choose_algorithm(*im.topology, bytes);
      a = choice.algorithm;
      predicted = choice.seconds;
    } else {
      a = sync::parse_algorithm(im.algorithm);
      predicted = sync::predict(sync::make_allreduce(a, *im.topology, n), *im.topology).seconds;
    }
    im.bucket_elements.push_back(n);
    im.bucket_algorithms.push_back(a);
    im.bucket_reports.push_back(BucketReport{static_cast<int64_t>(n), std::string(sync::name(a)), predicted});
    spdlog::info("bucket {}: {} floats ({:.2f} MB, layers from {}) -> {}{}, predicted {:.1f} us", b, n,
                 bytes / (1024.0 * 1024.0), net0.layer(buckets[b].first_layer).name(), sync::name(a),
                 im.algorithm == "auto" ? " (auto)" : "", predicted * 1e6);
  }

  // RedSync's compression per bucket ([compress], actors/sync/compression_plan.hpp).
  im.bucket_compression = sync::plan_compression(d, buckets, im.ranks);
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    im.dense_bytes += sync::dense_ring_bytes_all_ranks(buckets[b].elements, im.ranks);
    if (!im.bucket_compression[b].compressed()) continue;
    if (im.bucket_compression[b].allgather()) im.bucket_reports[b].algorithm = "compressed ring allgather";
    spdlog::info("bucket {}: compressed: {}", b, im.bucket_compression[b].describe());
  }

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
  spdlog::info("net '{}': {} learnable parameters; {} workers x batch {} = global batch {}; {} buckets",
               im.net_name, im.parameters, im.ranks, im.settings.batch_size, global_batch, buckets.size());
}

DataParallelTrainer::~DataParallelTrainer() = default;

int DataParallelTrainer::workers() const { return impl_->ranks; }

void DataParallelTrainer::resume(const std::filesystem::path& checkpoint) {
  Impl& im = *impl_;
  require(!im.models.empty(), "DataParallelTrainer::resume() must come before run()");
  const Checkpoint c = load_checkpoint(checkpoint);
  for (auto& m : im.models) {
    im.start = restore_checkpoint(c, *m->net, *m->solver, im.settings.seed, m->rank == 0);
    m->train->seek(im.start.epoch, im.start.batch);
  }
  spdlog::info("resumed from '{}': epoch {} batch {} (iteration {})", checkpoint.string(), im.start.epoch + 1,
               im.start.batch, c.iteration);
  for (const auto& b : im.bucket_compression)
    if (b.compressed()) {
      spdlog::warn("[compress]: checkpoints hold no compressor state; residuals and compressor momentum restart "
                   "from zero");
      break;
    }
}

const std::vector<std::vector<float>>& DataParallelTrainer::final_parameters() const {
  return impl_->final_parameters;
}

TrainReport DataParallelTrainer::run() {
  Impl& im = *impl_;
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
  TrainReport report;
  report.net = im.net_name;
  report.parameters = im.parameters;
  report.batch_size = im.settings.batch_size * im.ranks;
  report.blas_kernel = blas::kernel_name();
  report.workers = im.ranks;
  report.buckets = im.bucket_reports;
  std::optional<WorkerFailure> failure;
  std::exception_ptr other;

  auto status = std::make_shared<RunStatus>();
  status->net_name = im.net_name;
  status->ranks = im.ranks;
  status->nodes = im.cluster.nodes;
  for (std::size_t b = 0; b < im.bucket_elements.size(); ++b) {
    const auto schedule = sync::make_allreduce(im.bucket_algorithms[b], *im.topology, im.bucket_elements[b]);
    std::uint64_t elements = 0;
    for (int r = 0; r < im.ranks; ++r) elements += schedule.elements_sent(r);
    status->buckets.push_back({im.bucket_elements[b], std::string(sync::name(im.bucket_algorithms[b])),
                               elements * sizeof(float)});
  }
  status->state = clustered ? "waiting for nodes" : "training";
  if (!clustered) {
    for (int r = 0; r < im.ranks; ++r) status->members.push_back({fmt::format("worker {} (in-process)", r), "training", {r}});
    status->rank_node.assign(static_cast<std::size_t>(im.ranks), 0);
  }
  std::unique_ptr<net::StatusServer> status_server;
  if (im.status_settings.enabled) {
    status_server = std::make_unique<net::StatusServer>(
        im.status_settings.listen, im.status_settings.port,
        std::map<std::string, net::StatusPage>{
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
    if (clustered) {
      std::vector<std::string> algorithms;
      for (auto a : im.bucket_algorithms) algorithms.emplace_back(sync::name(a));
      try {
        launch_cluster(system, self, im.cluster, cluster_config(im.doc), im.ranks, algorithms, cluster);
      } catch (...) {
        stop_cluster(system, self, cluster);
        throw;
      }
      im.models.clear();
      workers = cluster.workers;
      {
        std::lock_guard lock(status->mutex);
        status->state = "training";
        status->rank_node = cluster.rank_node;
        for (std::size_t i = 0; i < cluster.nodes.size(); ++i) {
          RunStatus::Member m{fmt::format("node {} '{}'", i, cluster.nodes[i].name), "training", {}};
          for (int r = 0; r < im.ranks; ++r)
            if (cluster.rank_node[static_cast<std::size_t>(r)] == static_cast<int>(i)) m.ranks.push_back(r);
          status->members.push_back(std::move(m));
        }
      }
      for (std::size_t i = 0; i < cluster.nodes.size(); ++i)
        who[cluster.nodes[i].agent.address()] = {-1, "node", fmt::format("node {} '{}'", i, cluster.nodes[i].name)};
      for (int r = 0; r < im.ranks; ++r) {
        const auto node = static_cast<std::size_t>(cluster.rank_node[static_cast<std::size_t>(r)]);
        who[workers[static_cast<std::size_t>(r)].address()] = {
            r, "worker", fmt::format(" on node {} '{}'", node, cluster.nodes[node].name)};
      }
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

    }
    for (auto& w : workers) self->monitor(w);

    std::uint64_t iteration = 0;  // the step being waited for, for messages
    auto on_down = [&](const caf::down_msg& dm) {
      auto it = who.find(dm.source);
      const Participant p = it != who.end() ? it->second : Participant{-1, "an actor", ""};
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
        self->receive(on_reply, on_down, on_node_failure, caf::after(timeout) >> [&] {
          throw WorkerFailure(rank, fmt::format("worker {}{} did not answer {} within {} s", rank,
                                                who[workers[static_cast<std::size_t>(rank)].address()].where, what,
                                                im.step_timeout));
        });
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

    try {
      // Every replica starts from rank 0's weights.
      msg::Parameters p0;
      ask(0, "the parameter request", [&](msg::Parameters& p) { p0 = std::move(p); }, caf::get_atom_v);
      for (int r = 1; r < im.ranks; ++r) self->send(workers[static_cast<std::size_t>(r)], p0);

      std::vector<EpochResult> history;
      double train_seconds = 0.0, exposed = 0.0, comm = 0.0, hidden = 0.0, bytes_sent = 0.0;
      int64_t trained = 0;
      // Rank 0 writes the checkpoint; a failure reply stops the run like any other.
      auto save = [&](int64_t epoch, int64_t batch, double elapsed, double loss_sum) {
        if (im.checkpoint_path.empty()) return;
        ask(0, "the checkpoint request", [](bool) {}, msg::save_atom_v, im.checkpoint_path.string(), im.keep_all,
            epoch, batch, elapsed, loss_sum);
      };
      double elapsed = im.start.elapsed_seconds;
      for (int64_t epoch = im.start.epoch; epoch < im.settings.epochs; ++epoch) {
        EpochResult result;
        result.epoch = epoch + 1;
        Progress progress(fmt::format("epoch {}/{}", epoch + 1, im.settings.epochs), im.per_epoch, report.batch_size,
                          im.progress_mode, im.settings.display);
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
                    require(d.iteration == iteration && d.rank >= 0 && d.rank < im.ranks &&
                                !done[static_cast<std::size_t>(d.rank)],
                            "unexpected StepDone of iteration {} from rank {}", d.iteration, d.rank);
                    done[static_cast<std::size_t>(d.rank)] = true;
                    ++got;
                    loss += d.loss;
                    exposed += d.stats.exposed_comm_seconds / im.ranks;
                    comm += d.stats.comm_seconds;
                    hidden += d.stats.hidden_comm_seconds;
                    bytes_sent += static_cast<double>(d.stats.bytes_sent);
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
        result.images_per_second =
            static_cast<double>((im.per_epoch - first_batch) * report.batch_size) / std::max(result.seconds, 1e-9);
        train_seconds += result.seconds;
        trained += im.per_epoch - first_batch;
        elapsed += result.seconds;
        progress.finish(fmt::format("train loss {:.4f}", result.train_loss));
        ask(0, "the evaluation request",
            [&](double loss, double accuracy) {
              result.test_loss = loss;
              result.test_accuracy = accuracy;
            },
            msg::eval_atom_v);
        spdlog::info("epoch {}/{}: train loss {:.4f}, test loss {:.4f}, test accuracy {:.2f}%", result.epoch,
                     im.settings.epochs, result.train_loss, result.test_loss, 100.0 * result.test_accuracy);
        im.metrics.write({{"type", std::string("test")},
                          {"epoch", result.epoch},
                          {"iteration", static_cast<int64_t>((epoch + 1) * im.per_epoch)},
                          {"loss", result.test_loss},
                          {"accuracy", result.test_accuracy},
                          {"train_loss", result.train_loss},
                          {"images_per_second", result.images_per_second}});
        history.push_back(result);
        save(epoch + 1, 0, elapsed, 0.0);
      }
      for (int r = 0; r < im.ranks; ++r) {
        ask(r, "the parameter request",
            [&](msg::Parameters& p) { im.final_parameters.push_back(p.values.to_vector()); }, caf::get_atom_v);
      }
      report.epochs = im.settings.epochs;
      report.iterations = im.settings.epochs * im.per_epoch;
      report.history = history;
      if (!history.empty()) {
        report.train_loss = history.back().train_loss;
        report.test_loss = history.back().test_loss;
        report.test_accuracy = history.back().test_accuracy;
      }
      report.seconds = train_seconds;
      report.images_per_second =
          train_seconds > 0 ? static_cast<double>(trained * report.batch_size) / train_seconds : 0.0;
      report.exposed_comm_seconds = exposed;
      report.comm_hidden_fraction = comm > 0 ? hidden / comm : 0.0;
      report.bytes_sent_per_iteration = trained > 0 ? bytes_sent / static_cast<double>(trained) : 0.0;
      report.dense_bytes_per_iteration = im.dense_bytes;
      set_state("finished");
    } catch (const WorkerFailure& f) {
      set_state(std::string("failed: ") + f.what());
      failure.emplace(f);
    } catch (...) {
      other = std::current_exception();
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
  return report;
}

}  // namespace taihu::compute
