#include "actors/compute/run_plan.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>

#include "collectives/buckets.hpp"
#include "collectives/cost_model.hpp"
#include "collectives/sparse_allgather.hpp"
#include "core/common/check.hpp"
#include "core/graph/graph_dataset.hpp"
#include "messages/type_ids.hpp"
#include "simulator/engine.hpp"
#include "simulator/network.hpp"

namespace taihu::compute {

namespace {

// In-process links: a message costs a few microseconds, copies run near
// memcpy speed, and adding floats is a little slower than copying them.
collectives::Topology in_process_topology(int ranks) {
  return collectives::Topology::uniform(ranks, collectives::Link{3e-6, 8e9}, 6e9);
}

StatusSettings read_status(const config::Document& d) {
  StatusSettings s;
  if (const config::Section* st = d.find("status")) {
    const int port = st->get_or<int>("port", -1);
    if (port > 65535) throw st->error("port", "must be in 0..65535 (or -1: off)");
    s.enabled = port >= 0;
    s.port = static_cast<std::uint16_t>(std::max(port, 0));
    s.listen = st->get_or<std::string>("listen", s.listen);
    s.port_file = st->get_or<std::string>("port_file", "");
  }
  return s;
}

}  // namespace

collectives::Topology training_topology(const config::Document& doc, int ranks) {
  if (const config::Section* t = doc.find("topology")) {
    auto topology = collectives::Topology::from_config(*t);
    if (topology.ranks() != ranks)
      throw t->error("ranks", fmt::format("the topology has {} ranks, but workers = {}", topology.ranks(), ranks));
    return topology;
  }
  // Simulated chips: the collectives' view of the chips' network.
  if (ranks > 1 && doc.root().get_or<std::string>("device", "cpu") != "cpu")
    if (const config::Section* n = doc.find("network")) return simulator::Network::from_config(*n, ranks)->topology();
  return in_process_topology(ranks);
}

std::filesystem::path checkpoint_path(const config::Section& output) {
  const std::string checkpoint = output.get_or<std::string>("checkpoint", "checkpoint.ckpt");
  if (checkpoint.empty()) return {};
  return std::filesystem::path(output.get_or<std::string>("dir", "out")) / checkpoint;
}

namespace {

// [sync]: buckets, the collective, step timeout, compute slots, scheduler.
void read_sync(RunPlan& p, const config::Section& section) {
  const double bucket_mb = section.get_or<double>("bucket_mb", 25.0);
  if (!(bucket_mb >= 0)) throw section.error("bucket_mb", "must not be negative");
  p.bucket_bytes = static_cast<std::size_t>(bucket_mb * 1024.0 * 1024.0);
  p.algorithm = section.get_choice(
      "algorithm", {"auto", "ring", "rabenseifner", "topology_aware", "hierarchical", "direct", "pipelined_ring",
                  "reduce_broadcast"},
      "auto");
  p.step_timeout = section.get_or<double>("step_timeout", 60.0);
  if (!(p.step_timeout > 0)) throw section.error("step_timeout", "must be positive");
  p.compute_slots = section.get_or<int>("compute_slots", 0);
  if (p.compute_slots < 0) throw section.error("compute_slots", "must not be negative");
  p.scheduler_threads = section.get_or<int>("scheduler_threads", 0);
  if (p.scheduler_threads < 0) throw section.error("scheduler_threads", "must not be negative");
  p.scheduler = section.get_choice("scheduler", {"sharing", "stealing"}, "sharing");
}

// [output]: metrics, checkpoints.
void read_outputs(RunPlan& p, const config::Section& output) {
  const std::filesystem::path dir = output.get_or<std::string>("dir", "out");
  const std::string metrics = output.get_or<std::string>("metrics", "metrics.jsonl");
  if (!metrics.empty()) p.metrics_path = dir / metrics;
  p.checkpoint_path = compute::checkpoint_path(output);
  // Rank 0's node writes it, maybe from another working directory.
  if (p.clustered() && !p.checkpoint_path.empty()) p.checkpoint_path = std::filesystem::absolute(p.checkpoint_path);
  p.checkpoint_every = output.get_or<int64_t>("checkpoint_every", 0);
  if (p.checkpoint_every < 0) throw output.error("checkpoint_every", "must be >= 0 (0: after every epoch only)");
  p.keep_all = output.get_or<bool>("keep_all", false);
  if (p.cluster.elastic && p.checkpoint_path.empty())
    throw output.error("checkpoint", "elastic = true continues from the last checkpoint after a node is lost: "
                                     "give a checkpoint file");
}

// What the run trains, and on how many workers.
void log_plan(const RunPlan& p) {
  if (p.graphs) {
    const GraphDataset& g = *p.data.graphs;
    spdlog::info("model '{}' on {} data: {} parameters, vocabulary {}, {} classes; {} training graphs ({} vertices), "
                 "{} dev, {} test",
                 p.model_name, g.source, p.parameters, g.vocabulary_size, g.num_classes, g.train.size(),
                 g.train_vertices(), g.dev.size(), g.test.size());
  } else {
    spdlog::info("net '{}': {} learnable parameters; {} training and {} test samples", p.model_name, p.parameters,
                 p.data.train->size(), p.data.test->size());
  }
  if (p.ranks > 1)
    spdlog::info("{} workers x batch {} = global batch {}; {} buckets", p.ranks, p.settings.batch_size,
                 p.global_batch(), p.bucket_elements.size());
}

}  // namespace

RunPlan RunPlan::read(config::Document doc, ReplicaServices services, WorkerFault fault,
                      std::shared_ptr<const GraphDataset> memory) {
  RunPlan p;
  p.doc = std::move(doc);
  p.services = std::move(services);
  const config::Document& d = p.doc;
  const config::Section& root = d.root();
  p.settings = read_replica_settings(d);
  p.cluster = ClusterSettings::read(d);
  // With nodes = K, workers defaults to K (one replica per node).
  if (p.cluster.nodes > 0 && root.get_or<int64_t>("workers", 0) == 0) p.settings.workers = p.cluster.nodes;
  p.ranks = static_cast<int>(p.settings.workers);
  if (p.ranks < 1) throw root.error("workers", "must be at least 1");
  if (p.cluster.nodes > 0 && p.ranks % p.cluster.nodes != 0)
    throw root.error("workers", fmt::format("must be a multiple of nodes = {}", p.cluster.nodes));
  p.max_iterations = root.get_or<int64_t>("iterations", 0);
  if (p.max_iterations < 0) throw root.error("iterations", "must be >= 0 (0: run every epoch)");
  if (p.cluster.elastic && p.max_iterations > 0)
    throw root.error("iterations", "elastic runs re-form at epoch boundaries; run whole epochs (iterations = 0)");
  p.device = root.get_choice("device", {"cpu", "sw26010"}, "cpu");

  read_sync(p, d.section("sync"));
  p.topology.emplace(training_topology(d, p.ranks));
  if (p.device != "cpu" && p.ranks == 1) d.section("network").mark_all_used();  // one chip: no network
  if (p.cluster.elastic && d.find("topology") != nullptr)
    throw d.section("topology").error("ranks", "elastic = true re-forms over any number of nodes; a fixed [topology] "
                                               "does not apply (leave it out)");

  // Data: one data set, shared read-only by all replicas of this process.
  // Rank 0's model plans the buckets; with nodes = K the replicas live in
  // the nodes and this one only plans.
  if (memory && p.clustered())
    throw d.root().error("nodes", "graphs in memory train in this process only (workers = N), not on nodes");
  p.data = ReplicaData::read(d, p.settings, memory.get());
  p.rank0 = p.build_model(0, fault);
  const Replica& replica0 = *p.rank0->replica;
  p.per_epoch = replica0.batches_per_epoch();
  p.model_name = replica0.name();
  p.parameters = replica0.learnable_parameters();
  p.sample_unit = replica0.sample_unit();
  if (p.data.graphs)
    p.graphs.emplace(GraphRun{p.data.graphs->source, p.data.graphs->language_model, !p.data.graphs->dev.empty()});
  p.plan_buckets();

  read_outputs(p, d.section("output"));
  p.status = read_status(d);

  d.section("blas").mark_all_used();  // read by the app before the run
  d.section("conv").mark_all_used();
  if (p.ranks == 1) {
    d.section("sync").mark_all_used();  // one replica exchanges nothing
    d.section("topology").mark_all_used();
    d.section("compress").mark_all_used();
  }
  d.reject_unused();
  log_plan(p);
  return p;
}

std::shared_ptr<WorkerModel> RunPlan::build_model(int rank, WorkerFault fault) const {
  return build_worker_model(doc, settings, data, rank, ranks, bucket_bytes, services, fault);
}

bool RunPlan::compressed() const {
  return std::any_of(bucket_compression.begin(), bucket_compression.end(),
                     [](const collectives::BucketCompression& b) { return b.compressed(); });
}

void RunPlan::plan_buckets() {
  bucket_elements.clear();
  bucket_algorithms.clear();
  bucket_reports.clear();
  bucket_compression.clear();
  dense_bytes = 0;
  simulated_allreduce_seconds = 0;
  if (ranks == 1) return;  // one replica's gradient is the gradient
  // Simulated chips: their network decides the algorithms and times them.
  std::unique_ptr<simulator::Network> network;
  if (device != "cpu") {
    const config::Section* section = doc.find("network");
    if (section == nullptr)
      throw doc.root().error("device", fmt::format("device = {} with workers = {} needs a [network] section: the "
                                                   "chips' interconnect (e.g. config/topologies/taihulight.ini's)",
                                                   device, ranks));
    network = simulator::Network::from_config(*section, ranks);
  }
  const auto stages = rank0->replica->gradient_stages();
  const collectives::Buckets& buckets = *rank0->buckets;
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
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    dense_bytes += collectives::dense_ring_bytes_all_ranks(buckets[b].elements, ranks);
    if (network) simulated_allreduce_seconds += simulated_seconds(b, *network);
    if (!bucket_compression[b].compressed()) continue;
    if (bucket_compression[b].allgather()) bucket_reports[b].algorithm = "compressed ring allgather";
    spdlog::info("bucket {}: compressed: {}", b, bucket_compression[b].describe());
  }
  if (network)
    spdlog::info("{} simulated chips: the gradient's exchange takes {:.2f} ms per iteration on [network]", ranks,
                 1e3 * simulated_allreduce_seconds);
}

double RunPlan::simulated_seconds(std::size_t b, simulator::Network& network) const {
  const collectives::BucketCompression& c = bucket_compression[b];
  if (!c.allgather())
    return simulator::time_without_actors(collectives::make_allreduce(bucket_algorithms[b], *topology,
                                                                      bucket_elements[b]),
                                          network)
        .seconds;
  // RedSync's packed messages [len, indices, values] of every rank to every
  // rank, then each rank adds the P vectors into its gradient.
  const auto words = static_cast<std::size_t>(1 + 2 * std::llround(c.expected_entries()));
  const std::vector<std::size_t> counts(static_cast<std::size_t>(ranks), words);
  return simulator::time_without_actors(collectives::sparse_allgather(counts), network).seconds +
         network.reduce_time(collectives::sparse_decompress_bytes(counts));
}

void RunPlan::replan(int new_ranks) {
  const int64_t global = global_batch();
  ranks = new_ranks;
  // The global batch stays (as near as it divides), so the learning rate and
  // the epoch's length still fit: each worker takes a larger share.
  settings.batch_size = std::max<int64_t>(1, global / new_ranks);
  doc.root().set("batch_size", std::to_string(settings.batch_size), doc.root().where());
  topology.emplace(training_topology(doc, ranks));
  rank0 = build_model(0);
  per_epoch = rank0->replica->batches_per_epoch();
  plan_buckets();
}

std::string RunPlan::config_for_nodes() const {
  config::Document copy = doc;
  config::Section& root = copy.root();
  if (root.has("net"))
    root.set("net", std::filesystem::absolute(doc.resolve(root.get<std::string>("net"))).string(), root.where());
  if (config::Section* data_section = copy.find("data"); data_section != nullptr) {
    const auto dir = data_section->get_or<std::string>("dir", "");
    if (!dir.empty()) data_section->set("dir", std::filesystem::absolute(doc.resolve(dir)).string(), data_section->where());
  }
  return copy.dump();
}

}  // namespace taihu::compute
