// taihu-sim: the shard actors' collectives on a simulated cluster
// (actors/sim/): one allreduce of a given size, or the synchronisation of a
// training iteration, on 2 … N nodes for each algorithm.
//
//   taihu-sim --config-file=config/topologies/taihulight.ini [--report=FILE] [--svg=FILE] [key=value ...]
//
// Prints tables of simulated time, effective bandwidth, speedup and
// communication share; writes a plot of speedup against nodes (SVG).

#include <spdlog/spdlog.h>

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "simulator/engine.hpp"
#include "simulator/network.hpp"
#include "actors/sim/simulation.hpp"
#include "collectives/sparse_allgather.hpp"
#include "collectives/algorithms.hpp"
#include "apps/actor_system.hpp"
#include "apps/app_support.hpp"
#include "apps/sim_output.hpp"
#include "apps/version.hpp"
#include "core/common/error.hpp"
#include "core/net/net.hpp"
#include "devices/sw26010/layer_timing.hpp"
#include "devices/sw26010/lockstep_range.hpp"
#include "devices/sw26010/params.hpp"
#include "messages/type_ids.hpp"

namespace {

using namespace taihu;

constexpr const char* usage = R"(usage: taihu-sim --config-file=FILE [options] [key=value ...]

Simulates the shard actors' collectives on the cluster described in [network]
(see simulator/network.hpp and config/topologies/*.ini) for every node count
and algorithm of [simulation]:

  [simulation]
  nodes = 2 4 8 … 1024       node counts (one rank per node)
  algorithms = ring rabenseifner topology_aware hierarchical sparse_allgather
  size_mb = 100              gradient bytes per iteration, in MB (10^6 bytes, fp32)
  compute_seconds = 0        > 0: training; time per iteration of one node's
                             forward + backward (synchronisation follows it)
  buckets = E@T[:ALG] ...    training as taihu-train runs it: the gradient in
                             buckets of E elements, each handed to its collective
                             T seconds into the iteration (while backward goes
                             on), ALG its algorithm (default: the row's); from
                             taihu-train's report (buckets: elements, algorithm,
                             ready_seconds). Needs compute_seconds >= every T;
                             the gradient's size is theirs (size_mb is not used).
  update_seconds = 0         with buckets: the solver step after the last bucket
  net = FILE                 training of this net (config/nets/*.ini): compute time
                             per iteration from the SW26010 model, gradient size
                             from its parameters (size_mb, if given, wins); the
                             speedups also across the model's lock-step ranges
                             (a table; speedup_low/high in the report)
  batch = 32                 with net: samples per node (split over the 4 core groups)
  device_config = FILE       with net: SW26010 parameters (default: the model's own)
  density = 0.001            sparse_allgather: fraction of entries each node sends
  spread = 0.1               sparse_allgather: per-node variation of that fraction
  compress_rate = 0          sparse_allgather: gradient elements per second of one core
                             for RedSync's compressor step before it (accumulate into the
                             residual, select, pack); on the host CPUs where the network
                             models them; 0 = free
  mode = timing              timing: messages carry sizes only; data: they carry
                             the gradients and the sums are checked (small runs)
  executor = actors          actors: the shard actors; engine: the clock alone
  threads = 1                actor scheduler threads
  svg = FILE                 plot of speedup against nodes (or --svg=FILE)

options:
  --report=FILE   JSON rows {algorithm, nodes, seconds, speedup, comm_share, ...}
  --svg=FILE      the plot
  --log-level=L   trace, debug, info, warn, error
  --version       taihu's version, git revision, build and libraries
)";

using sim_app::Row;

// A bucket of a training iteration's gradient (simulation.buckets).
struct Bucket {
  std::size_t elements = 0;
  double ready = 0;       // seconds into the iteration when backward hands it over
  std::string algorithm;  // empty: the row's
};

struct Settings {
  std::vector<int> nodes;
  std::vector<std::string> algorithms;
  double bytes = 0;
  std::size_t elements = 0;
  double compute = 0;
  double compute_low = 0, compute_high = 0;  // a net on the SW26010 model: across the lock-step range
  double density = 0.001, spread = 0.1;
  double compress_rate = 0;
  bool data = false;
  bool actors = true;
  int threads = 1;
  std::string svg;
  std::string net;  // the net whose training is simulated, if any
  std::vector<Bucket> buckets;  // in ready order; empty: one collective after compute
  double update = 0;            // with buckets: the solver step
  bool training() const { return compute > 0; }
};

void check_algorithm(const config::Section& s, const char* key, const std::string& algorithm) {
  if (algorithm == "sparse_allgather") return;
  try {
    (void)collectives::parse_algorithm(algorithm);
  } catch (const Error& e) {
    throw s.error(key, e.what());
  }
}

// "E@T[:ALG]" tokens of simulation.buckets.
std::vector<Bucket> read_buckets(const config::Section& s) {
  std::vector<Bucket> out;
  for (const auto& token : s.get_list<std::string>("buckets")) {
    const auto at = token.find('@');
    const auto colon = token.find(':', at == std::string::npos ? 0 : at);
    Bucket b;
    const auto elements = at == std::string::npos ? std::nullopt
                                                  : config::parse_value<std::int64_t>(token.substr(0, at));
    const auto ready = at == std::string::npos ? std::nullopt
                                               : config::parse_value<double>(token.substr(at + 1, colon - at - 1));
    if (!elements || *elements < 1 || !ready || !(*ready >= 0))
      throw s.error("buckets", fmt::format("'{}' is not ELEMENTS@SECONDS[:ALGORITHM] (elements >= 1, seconds >= 0)",
                                           token));
    b.elements = static_cast<std::size_t>(*elements);
    b.ready = *ready;
    if (colon != std::string::npos) {
      b.algorithm = token.substr(colon + 1);
      check_algorithm(s, "buckets", b.algorithm);
    }
    out.push_back(std::move(b));
  }
  std::stable_sort(out.begin(), out.end(), [](const Bucket& x, const Bucket& y) { return x.ready < y.ready; });
  return out;
}

// One training iteration of `net_path` on one SW26010 node (the model of
// devices/sw26010/, as bench_sw26010_nets runs it), at the model's central
// lock-step parameters and across their range (lockstep_range.hpp).
// Returns seconds and learnable parameters.
std::pair<sw26010::OutputRange, std::int64_t> sw26010_iteration(const std::filesystem::path& net_path,
                                                                std::int64_t batch, const sw26010::Params& params) {
  auto doc = std::make_shared<config::Document>(config::Document::parse_file(net_path));
  Net net(doc, 1, 1);
  net.set_phase(Phase::train);
  const std::int64_t q = (batch + 3) / 4;  // the largest quarter
  std::int64_t parameters = 0;
  for (std::size_t i = 0; i < net.num_layers(); ++i)
    for (const auto& p : net.layer(i).params()) parameters += p.blob->count();
  const auto seconds = sw26010::across_lockstep_range(
      params, [&](const sw26010::Params& p) { return sw26010::iteration_seconds(net, q, p); });
  return {seconds, parameters};
}

Settings read_settings(const config::Document& doc, const config::Section& s) {
  Settings out;
  out.nodes = s.get_list_or<int>("nodes", {2, 4, 8, 16, 32, 64, 128, 256, 512, 1024});
  for (int n : out.nodes) {
    if (n < 1) throw s.error("nodes", "node counts must be at least 1");
  }
  out.algorithms = s.get_list_or<std::string>(
      "algorithms", {"ring", "rabenseifner", "topology_aware", "hierarchical", "sparse_allgather"});
  for (const auto& a : out.algorithms) check_algorithm(s, "algorithms", a);
  const double mb = s.get_or<double>("size_mb", 100.0);
  if (!(mb > 0)) throw s.error("size_mb", "must be positive");
  out.elements = static_cast<std::size_t>(std::llround(mb * 1e6 / 4));
  out.bytes = 4.0 * static_cast<double>(out.elements);
  out.compute = s.get_or<double>("compute_seconds", 0.0);
  if (!(out.compute >= 0)) throw s.error("compute_seconds", "must not be negative");
  if (s.has("net")) {
    if (out.compute > 0) throw s.error("compute_seconds", "give either net or compute_seconds > 0");
    const auto path = doc.resolve(s.get<std::string>("net"));
    const auto batch = s.get_or<std::int64_t>("batch", 32);
    if (batch < 1) throw s.error("batch", "must be at least 1");
    const auto params = s.has("device_config")
                            ? sw26010::Params::load(doc.resolve(s.get<std::string>("device_config")))
                            : sw26010::Params::defaults();
    spdlog::info("timing one iteration of {} (batch {}) on the SW26010 model ...", path.string(), batch);
    const auto [seconds, parameters] = sw26010_iteration(path, batch, params);
    out.compute = seconds.central;
    out.compute_low = seconds.low;
    out.compute_high = seconds.high;
    if (!s.has("size_mb")) {
      out.elements = static_cast<std::size_t>(parameters);
      out.bytes = 4.0 * static_cast<double>(out.elements);
    }
    out.net = fmt::format("{} (batch {}/node: {:.1f} ms per iteration on SW26010 ({:.1f}-{:.1f} across the "
                          "lock-step range), {:.1f} MB of gradients)",
                          path.filename().string(), batch, 1e3 * seconds.central, 1e3 * seconds.low,
                          1e3 * seconds.high, out.bytes / 1e6);
  } else if (s.has("batch") || s.has("device_config")) {
    throw s.error(s.has("batch") ? "batch" : "device_config", "only with net");
  }
  if (s.has("buckets")) {
    if (s.has("net")) throw s.error("buckets", "give compute_seconds (a measured iteration's), not net");
    if (!(out.compute > 0)) throw s.error("buckets", "need compute_seconds > 0 (forward + backward)");
    out.buckets = read_buckets(s);
    if (out.buckets.empty()) throw s.error("buckets", "lists no bucket");
    out.elements = 0;
    for (const auto& b : out.buckets) out.elements += b.elements;
    out.bytes = 4.0 * static_cast<double>(out.elements);
    if (!(out.compute >= out.buckets.back().ready))
      throw s.error("compute_seconds", fmt::format("a bucket is ready at {} s, after backward ended ({} s)",
                                                   out.buckets.back().ready, out.compute));
    out.update = s.get_or<double>("update_seconds", 0.0);
    if (!(out.update >= 0)) throw s.error("update_seconds", "must not be negative");
  } else if (s.has("update_seconds")) {
    throw s.error("update_seconds", "only with buckets");
  }
  out.density = s.get_or<double>("density", 0.001);
  if (!(out.density > 0 && out.density <= 1)) throw s.error("density", "must be in (0, 1]");
  out.spread = s.get_or<double>("spread", 0.1);
  if (!(out.spread >= 0 && out.spread < 1)) throw s.error("spread", "must be in [0, 1)");
  out.compress_rate = s.get_or<double>("compress_rate", 0.0);
  if (!(out.compress_rate >= 0)) throw s.error("compress_rate", "must not be negative");
  out.data = s.get_choice("mode", {"timing", "data"}, "timing") == "data";
  out.actors = s.get_choice("executor", {"actors", "engine"}, "actors") == "actors";
  out.threads = s.get_or<int>("threads", 1);
  if (out.threads < 1) throw s.error("threads", "must be at least 1");
  out.svg = s.get_or<std::string>("svg", "");
  if (out.data && !out.actors) throw s.error("executor", "mode = data needs the actors");
  return out;
}

// Integer-valued gradients: every summation order gives the exact sum.
std::vector<msg::TensorPayload> integer_inputs(int p, std::size_t n) {
  std::vector<msg::TensorPayload> out;
  for (int r = 0; r < p; ++r) {
    auto buffer = msg::TensorPayload::allocate(n);
    float* d = buffer.mutable_data();
    for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<float>((static_cast<std::size_t>(r) * 7 + i * 3) % 11) - 5;
    out.push_back(std::move(buffer));
  }
  return out;
}

void check_sums(const sim::SimResult& result, const std::vector<msg::TensorPayload>& inputs, const std::string& what) {
  const std::size_t n = inputs.empty() ? 0 : inputs[0].size();
  std::vector<float> expected(n, 0.0f);
  for (const auto& x : inputs) {
    for (std::size_t i = 0; i < n; ++i) expected[i] += x[i];
  }
  for (const auto& out : result.outputs) {
    if (out.size() != n || !std::equal(expected.begin(), expected.end(), out.begin())) {
      throw Error(what + ": the simulated shards' sums are wrong");
    }
  }
}

// One collective of a row: its schedule and, for RedSync's sparse allgather,
// each rank's packed size.
struct Collective {
  collectives::Schedule schedule;
  std::vector<std::size_t> packed;  // sparse only
  bool sparse() const { return !packed.empty(); }
};

Collective make_collective(const std::string& algorithm, const simulator::Network& network, std::size_t elements,
                           const Settings& s) {
  Collective c;
  if (algorithm == "sparse_allgather") {
    c.packed = collectives::packed_sizes(network.ranks(), elements, s.density, s.spread);
    c.schedule = collectives::sparse_allgather(c.packed);
  } else {
    c.schedule = collectives::make_allreduce(collectives::parse_algorithm(algorithm), network.topology(), elements);
  }
  return c;
}

struct Run {
  double finish = 0;  // simulated: the last rank's result, RedSync's decompression included
  std::uint64_t messages = 0, probes = 0;
  double bytes = 0, host_seconds = 0;
};

// Runs one collective whose inputs are ready at `ready` on every rank, on the
// network as it is (fresh_network) or as earlier runs left it.
Run run_collective(caf::actor_system& system, simulator::Network& network, const Collective& c, const Settings& s,
                   double ready, bool fresh_network, const std::string& what) {
  const int p = network.ranks();
  if (fresh_network) network.reset();
  // RedSync compresses every rank's gradient before the allgather: each rank starts when its
  // compressor step is done (on its host's cores, where those are modelled).
  std::vector<double> starts(static_cast<std::size_t>(p), ready);
  if (c.sparse() && s.compress_rate > 0)
    for (int r = 0; r < p; ++r)
      starts[static_cast<std::size_t>(r)] =
          network.work(r, static_cast<double>(c.schedule.elements) / s.compress_rate, ready);
  Run run;
  if (s.actors) {
    sim::SimOptions options;
    options.start_times = starts;
    options.fresh_network = false;  // reset above where wanted: the compressor's jobs are on it
    std::vector<msg::TensorPayload> inputs;
    if (s.data) {
      options.carry_data = true;
      inputs = integer_inputs(p, c.schedule.elements);
    }
    const auto result = sim::simulate(system, c.schedule, network, options, inputs);
    if (s.data && !c.sparse()) check_sums(result, inputs, what);
    run = {result.seconds, result.stats.messages, result.probes, result.stats.bytes, result.host_seconds};
  } else {
    const auto timing = simulator::time_without_actors(c.schedule, network, starts, false);
    run = {timing.seconds, timing.stats.messages, 0, timing.stats.bytes, timing.host_seconds};
  }
  // RedSync adds the P packed vectors into the gradients after the allgather.
  if (c.sparse()) run.finish += network.reduce_time(collectives::sparse_decompress_bytes(c.packed));
  return run;
}

Row simulate_one(caf::actor_system& system, const config::Section& network_section, const Settings& s,
                 const std::string& algorithm, int p) {
  auto network = simulator::Network::from_config(network_section, p);
  Row row;
  row.algorithm = algorithm;
  row.nodes = p;
  auto add = [&row](const Run& run) {
    row.messages += run.messages;
    row.bytes += run.bytes;
    row.probes += run.probes;
    row.host_seconds += run.host_seconds;
  };
  if (s.buckets.empty()) {
    // One collective after compute. Training: the links rest during compute
    // (their buckets refill), after the previous iteration's collective; one
    // collective starts from idle links.
    if (s.training()) network->set_idle_before(s.compute);
    const Run run = run_collective(system, *network, make_collective(algorithm, *network, s.elements, s), s, 0.0,
                                   true, fmt::format("{} on {} nodes", algorithm, p));
    add(run);
    row.comm = run.finish;
    row.seconds = s.compute + row.comm;
  } else {
    // As taihu-train runs an iteration: each bucket's collective starts when
    // backward hands the bucket over, on the network as the buckets before it
    // left it (their traffic still queued on the links and cores); the solver
    // step follows the last result or backward's end, whichever is later. The
    // links rested during the previous iteration's solver step.
    network->set_idle_before(s.update);
    network->reset();
    double end = s.compute;
    for (std::size_t b = 0; b < s.buckets.size(); ++b) {
      const Bucket& bucket = s.buckets[b];
      const std::string& a = bucket.algorithm.empty() ? algorithm : bucket.algorithm;
      const Run run = run_collective(system, *network, make_collective(a, *network, bucket.elements, s), s,
                                     bucket.ready, false, fmt::format("bucket {} ({}) on {} nodes", b, a, p));
      add(run);
      end = std::max(end, run.finish);
    }
    row.seconds = end + s.update;
    row.comm = end - s.compute;
  }
  row.bandwidth = row.comm > 0 ? s.bytes / row.comm : 0;
  row.comm_share = row.seconds > 0 ? row.comm / row.seconds : 0;
  return row;
}

// Training: weak scaling, P nodes each doing the one-node work per iteration.
// One collective: the speedup over ring at the same node count.
void fill_speedups(std::vector<Row>& rows, const Settings& s) {
  std::map<int, double> baseline;
  for (const auto& r : rows) {
    if (r.algorithm == "ring") baseline[r.nodes] = r.comm;
  }
  for (auto& r : rows) {
    if (s.compute > 0) {
      r.speedup = r.nodes * (s.compute + s.update) / r.seconds;
      if (s.compute_high > 0) {
        // a net's iteration is its compute then the collective (no buckets): the collective's
        // time does not depend on the compute, so the range moves the compute alone
        const double comm = r.seconds - s.compute - s.update;
        const auto at = [&](double compute) { return r.nodes * (compute + s.update) / (compute + s.update + comm); };
        r.speedup_low = at(s.compute_low);
        r.speedup_high = at(s.compute_high);
      }
    } else {
      auto it = baseline.find(r.nodes);
      r.speedup = it != baseline.end() && r.comm > 0 ? it->second / r.comm : 1.0;
    }
  }
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw Error(fmt::format("cannot write '{}'", path));
  out << text;
}

}  // namespace

int main(int argc, char** argv) {
  return taihu::app::run_app([&]() -> int {
    const auto cl = app::parse_command_line(argc, argv, {"report", "svg", "log-level", "dump-config"});
    if (cl.help) {
      std::fputs(usage, stdout);
      return 0;
    }
    if (cl.version) {
      std::fputs(app::version_text("taihu-sim").c_str(), stdout);
      return 0;
    }
    app::setup_logging(cl.flag("log-level").value_or("info"));
    if (!cl.config_file) throw ConfigError("command line: --config-file=FILE is required (try --help)");
    const config::Document doc = app::load_config(cl);
    if (cl.has_flag("dump-config")) {
      std::fputs(doc.dump().c_str(), stdout);
      return 0;
    }
    const Settings settings = read_settings(doc, doc.section("simulation"));
    const config::Section& network_section = doc.section("network");
    // Reads every [network] key once, so that typos are reported before the runs.
    const auto probe = simulator::Network::from_config(network_section, settings.nodes.front());
    doc.reject_unused();

    caf::actor_system_config actor_config;
    app::ActorSystemSettings actor_settings;
    actor_settings.scheduler_threads = settings.threads;
    actor_settings.work_stealing = true;
    app::configure_actor_system(actor_config, actor_settings);
    caf::actor_system system{actor_config};
    const auto title =
        settings.net.empty()
            ? fmt::format("{}: {} MB{}, {} model", doc.path().filename().string(), settings.bytes / 1e6,
                          settings.compute > 0 ? fmt::format(", compute {} s/iteration", settings.compute) : "",
                          probe->model())
            : fmt::format("{}: {}", doc.path().filename().string(), settings.net);
    spdlog::info("{}; {} executor, {} mode", title, settings.actors ? "actor" : "engine-only",
                 settings.data ? "data" : "timing");
    std::vector<Row> rows;
    for (int p : settings.nodes) {
      for (const auto& algorithm : settings.algorithms) {
        rows.push_back(simulate_one(system, network_section, settings, algorithm, p));
        const auto& r = rows.back();
        spdlog::info("{:>16} {:>6} nodes: {:.6g} s simulated, {} messages, {} waits for shards, {:.3f} s host",
                     r.algorithm, r.nodes, r.comm, r.messages, r.probes, r.host_seconds);
      }
    }
    fill_speedups(rows, settings);
    sim_app::print_tables(rows, settings.training());
    if (auto report = cl.flag("report")) write_file(*report, sim_app::rows_json(rows));
    const std::string svg = cl.flag("svg").value_or(settings.svg);
    if (!svg.empty()) write_file(svg, sim_app::speedup_svg(rows, settings.training(), title));
    return 0;
  });
}
