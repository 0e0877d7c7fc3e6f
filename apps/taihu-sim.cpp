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
#include "apps/sim_settings.hpp"
#include "apps/version.hpp"
#include "core/common/error.hpp"
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
  compress_seconds = C ...   with buckets, one per bucket in their order: CPU seconds of
  decompress_seconds = D ... one core each rank spends on the bucket's gradient before its
  unpack_seconds = U ...     collective (RedSync's compressor step), after it (adding the
                             messages up) and unpacking the sum into the gradients, which
                             waits for backward's end (the worker's thread computes it);
                             from taihu-train's report (buckets: compress_seconds, ...);
                             jobs on the host CPUs where the network models them; the
                             first two replace compress_rate and the modelled decompression
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

using sim_app::Bucket;
using sim_app::read_settings;
using sim_app::Row;
using sim_app::Settings;

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
  std::vector<double> finishes;  // each rank's collective (before the decompression)
  std::uint64_t messages = 0, probes = 0;
  double bytes = 0, host_seconds = 0;
};

// Runs one collective whose inputs are ready at `ready` on every rank, on the
// network as it is (fresh_network) or as earlier runs left it. `bucket`, if
// given, may carry the ranks' measured work before and after it; a rank
// unpacks its sum once it is there and backward has ended (at s.compute).
Run run_collective(caf::actor_system& system, simulator::Network& network, const Collective& c, const Settings& s,
                   double ready, bool fresh_network, const std::string& what, const Bucket* bucket = nullptr) {
  const int p = network.ranks();
  if (fresh_network) network.reset();
  // Each rank's shard works on its gradient before the collective (RedSync's compressor
  // step: measured, or at compress_rate), on its host's cores where those are modelled:
  // the rank starts when that is done.
  std::optional<double> compress = bucket ? bucket->compress : std::nullopt;
  if (!compress && c.sparse() && s.compress_rate > 0)
    compress = static_cast<double>(c.schedule.elements) / s.compress_rate;
  std::vector<double> starts(static_cast<std::size_t>(p), ready);
  if (compress)
    for (int r = 0; r < p; ++r) starts[static_cast<std::size_t>(r)] = network.work(r, *compress, ready);
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
    run = {result.seconds, result.finish, result.stats.messages, result.probes, result.stats.bytes,
           result.host_seconds};
  } else {
    const auto timing = simulator::time_without_actors(c.schedule, network, starts, false);
    run = {timing.seconds, timing.finish, timing.stats.messages, 0, timing.stats.bytes, timing.host_seconds};
  }
  // After the collective, each rank: RedSync adds the P packed vectors into the gradient
  // (measured work on its host's cores, or the modelled sparse add of their bytes); then the
  // worker unpacks the sum, once its backward is over.
  const double sparse_add = c.sparse() ? network.reduce_time(collectives::sparse_decompress_bytes(c.packed)) : 0.0;
  for (int r = 0; r < p; ++r) {
    double end = run.finishes[static_cast<std::size_t>(r)];
    end = bucket && bucket->decompress ? network.work(r, *bucket->decompress, end) : end + sparse_add;
    if (bucket && bucket->unpack) end = network.work(r, *bucket->unpack, std::max(end, s.compute));
    run.finish = std::max(run.finish, end);
  }
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
                                     bucket.ready, false, fmt::format("bucket {} ({}) on {} nodes", b, a, p), &bucket);
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
