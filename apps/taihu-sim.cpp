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
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "simulator/engine.hpp"
#include "simulator/network.hpp"
#include "actors/sim/simulation.hpp"
#include "collectives/sparse_allgather.hpp"
#include "collectives/algorithms.hpp"
#include "apps/app_support.hpp"
#include "apps/version.hpp"
#include "core/common/error.hpp"
#include "core/net/net.hpp"
#include "devices/sw26010/iteration.hpp"
#include "devices/sw26010/kernels.hpp"
#include "devices/sw26010/layer_timing.hpp"
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
  net = FILE                 training of this net (config/nets/*.ini): compute time
                             per iteration from the SW26010 model, gradient size
                             from its parameters (size_mb, if given, wins)
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

struct Row {
  std::string algorithm;
  int nodes = 0;
  double comm = 0;      // simulated synchronisation time, seconds
  double seconds = 0;   // per iteration (compute + comm), or comm alone
  double bandwidth = 0;  // gradient bytes / comm
  double speedup = 0;
  double comm_share = 0;
  double host_seconds = 0;
  std::uint64_t messages = 0;
  double bytes = 0;          // payload all ranks sent
  std::uint64_t probes = 0;  // times the clock waited for a shard
};

struct Settings {
  std::vector<int> nodes;
  std::vector<std::string> algorithms;
  double bytes = 0;
  std::size_t elements = 0;
  double compute = 0;
  double density = 0.001, spread = 0.1;
  double compress_rate = 0;
  bool data = false;
  bool actors = true;
  int threads = 1;
  std::string svg;
  std::string net;  // the net whose training is simulated, if any
};

// One training iteration of `net_path` on one SW26010 node (the model of
// devices/sw26010/, as bench_sw26010_nets runs it): each core group runs a
// quarter of the batch, layer by layer, then core group 0's MPE sums the other
// three groups' weight gradients and the SGD step runs (iteration.hpp).
// Returns seconds and learnable parameters.
std::pair<double, std::int64_t> sw26010_iteration(const std::filesystem::path& net_path, std::int64_t batch,
                                                  const sw26010::Params& params) {
  auto doc = std::make_shared<config::Document>(config::Document::parse_file(net_path));
  const std::int64_t q = (batch + 3) / 4;  // the largest quarter
  Net net(doc, 1, 1);
  net.set_phase(Phase::train);
  sw26010::CoreGroup cg(0, params);
  cg.set_numerics(false);  // timing only: the kernels touch no data
  sw26010::Scratch scratch(false);
  std::map<std::string, sw26010::ConvChoice> choices;
  // the layers with the layouts swCaffe's transform layer leaves between them
  const auto shapes = sw26010::net_layer_shapes(net, q, params, &choices);
  std::int64_t cycles = 0, parameters = 0;
  for (std::size_t i = 0; i < net.num_layers(); ++i) {
    for (const auto& p : net.layer(i).params()) parameters += p.blob->count();
    const auto timing = sw26010::time_layer(cg, shapes[i], scratch, &choices);
    if (timing.simulated) cycles += timing.forward + timing.backward;
  }
  cycles += sw26010::gradient_sum_mpe(cg, parameters) + sw26010::sgd_update(cg, parameters);
  return {params.seconds(static_cast<double>(cycles)), parameters};
}

Settings read_settings(const config::Document& doc, const config::Section& s) {
  Settings out;
  out.nodes = s.get_list_or<int>("nodes", {2, 4, 8, 16, 32, 64, 128, 256, 512, 1024});
  for (int n : out.nodes) {
    if (n < 1) throw s.error("nodes", "node counts must be at least 1");
  }
  out.algorithms = s.get_list_or<std::string>(
      "algorithms", {"ring", "rabenseifner", "topology_aware", "hierarchical", "sparse_allgather"});
  for (const auto& a : out.algorithms) {
    if (a != "sparse_allgather") {
      try {
        (void)collectives::parse_algorithm(a);
      } catch (const Error& e) {
        throw s.error("algorithms", e.what());
      }
    }
  }
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
    out.compute = seconds;
    if (!s.has("size_mb")) {
      out.elements = static_cast<std::size_t>(parameters);
      out.bytes = 4.0 * static_cast<double>(out.elements);
    }
    out.net = fmt::format("{} (batch {}/node: {:.1f} ms per iteration on SW26010, {:.1f} MB of gradients)",
                          path.filename().string(), batch, 1e3 * seconds, out.bytes / 1e6);
  } else if (s.has("batch") || s.has("device_config")) {
    throw s.error(s.has("batch") ? "batch" : "device_config", "only with net");
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

struct ActorConfig : caf::actor_system_config {
  explicit ActorConfig(int threads) {
    add_message_types<caf::id_block::taihu>();
    set("scheduler.max-threads", threads);
    set("work-stealing.aggressive-poll-attempts", 10);
  }
};

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

Row simulate_one(caf::actor_system& system, const config::Section& network_section, const Settings& s,
                 const std::string& algorithm, int p) {
  auto network = simulator::Network::from_config(network_section, p);
  // Training: the links rest during compute (their buckets refill), after the
  // previous iteration's collective; one collective starts from idle links.
  if (s.compute > 0) network->set_idle_before(s.compute);
  const bool sparse = algorithm == "sparse_allgather";
  std::vector<std::size_t> packed;
  collectives::Schedule schedule;
  if (sparse) {
    packed = collectives::packed_sizes(p, s.elements, s.density, s.spread);
    schedule = collectives::sparse_allgather(packed);
  } else {
    schedule = collectives::make_allreduce(collectives::parse_algorithm(algorithm), network->topology(), s.elements);
  }
  Row row;
  row.algorithm = algorithm;
  row.nodes = p;
  const std::string what = fmt::format("{} on {} nodes", algorithm, p);
  // RedSync compresses every rank's gradient before the allgather: each rank starts when its
  // compressor step is done (on its host's cores, where those are modelled).
  std::vector<double> starts;
  if (sparse && s.compress_rate > 0) {
    network->reset();
    for (int r = 0; r < p; ++r)
      starts.push_back(network->work(r, static_cast<double>(s.elements) / s.compress_rate, 0.0));
  }
  if (s.actors) {
    sim::SimOptions options;
    options.start_times = starts;
    std::vector<msg::TensorPayload> inputs;
    if (s.data) {
      options.carry_data = true;
      inputs = integer_inputs(p, schedule.elements);
    }
    const auto result = sim::simulate(system, schedule, *network, options, inputs);
    if (s.data && !sparse) check_sums(result, inputs, what);
    row.comm = result.seconds;
    row.host_seconds = result.host_seconds;
    row.messages = result.stats.messages;
    row.bytes = result.stats.bytes;
    row.probes = result.probes;
  } else {
    const auto timing = simulator::time_without_actors(schedule, *network, starts);
    row.comm = timing.seconds;
    row.host_seconds = timing.host_seconds;
    row.messages = timing.stats.messages;
    row.bytes = timing.stats.bytes;
  }
  // RedSync adds the P packed vectors into the gradients after the allgather.
  if (sparse) row.comm += network->reduce_time(collectives::sparse_decompress_bytes(packed));
  row.seconds = s.compute + row.comm;
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
      r.speedup = r.nodes * s.compute / r.seconds;
    } else {
      auto it = baseline.find(r.nodes);
      r.speedup = it != baseline.end() && r.comm > 0 ? it->second / r.comm : 1.0;
    }
  }
}

void print_tables(const std::vector<Row>& rows, const Settings& s) {
  std::vector<int> nodes;
  std::vector<std::string> algorithms;
  for (const auto& r : rows) {
    if (std::find(nodes.begin(), nodes.end(), r.nodes) == nodes.end()) nodes.push_back(r.nodes);
    if (std::find(algorithms.begin(), algorithms.end(), r.algorithm) == algorithms.end()) algorithms.push_back(r.algorithm);
  }
  auto find = [&](int n, const std::string& a) -> const Row* {
    for (const auto& r : rows) {
      if (r.nodes == n && r.algorithm == a) return &r;
    }
    return nullptr;
  };
  auto table = [&](const std::string& title, auto value) {
    std::string out = fmt::format("\n{}\n{:>7}", title, "nodes");
    for (const auto& a : algorithms) out += fmt::format(" {:>17}", a);
    out += "\n";
    for (int n : nodes) {
      out += fmt::format("{:>7}", n);
      for (const auto& a : algorithms) {
        const Row* r = find(n, a);
        out += r ? fmt::format(" {:>17}", value(*r)) : fmt::format(" {:>17}", "-");
      }
      out += "\n";
    }
    std::fputs(out.c_str(), stdout);
  };
  table(s.compute > 0 ? "synchronisation time per iteration (simulated seconds)" : "collective time (simulated seconds)",
        [](const Row& r) { return fmt::format("{:.6g}", r.comm); });
  table("effective bandwidth (gradient GB / simulated second)",
        [](const Row& r) { return fmt::format("{:.3f}", r.bandwidth / 1e9); });
  table(s.compute > 0 ? "speedup (P x one-node compute / iteration time)" : "speedup over ring",
        [](const Row& r) { return fmt::format("{:.2f}", r.speedup); });
  if (s.compute > 0) {
    table("communication share of the iteration", [](const Row& r) { return fmt::format("{:.1f}%", 100 * r.comm_share); });
  }
  table("host seconds (simulation cost)", [](const Row& r) { return fmt::format("{:.3f}", r.host_seconds); });
}

std::string to_json(const std::vector<Row>& rows) {
  std::string out = "[\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    out += fmt::format(
        "  {{\"algorithm\": \"{}\", \"nodes\": {}, \"seconds\": {:.9g}, \"comm_seconds\": {:.9g}, \"speedup\": {:.6g}, "
        "\"comm_share\": {:.6g}, \"bandwidth\": {:.6g}, \"messages\": {}, \"bytes\": {:.9g}, \"host_seconds\": {:.4f}}}{}\n",
        r.algorithm, r.nodes, r.seconds, r.comm, r.speedup, r.comm_share, r.bandwidth, r.messages, r.bytes,
        r.host_seconds,
        i + 1 < rows.size() ? "," : "");
  }
  return out + "]\n";
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

// Speedup against nodes, log2 x axis; no dependencies.
std::string to_svg(const std::vector<Row>& rows, const Settings& s, const std::string& title) {
  const double W = 760, H = 480, left = 70, right = 190, top = 40, bottom = 50;
  const double pw = W - left - right, ph = H - top - bottom;
  std::vector<std::string> algorithms;
  int max_nodes = 1, min_nodes = 1 << 30;
  double max_speedup = 1;
  for (const auto& r : rows) {
    if (std::find(algorithms.begin(), algorithms.end(), r.algorithm) == algorithms.end()) algorithms.push_back(r.algorithm);
    max_nodes = std::max(max_nodes, r.nodes);
    min_nodes = std::min(min_nodes, r.nodes);
    max_speedup = std::max(max_speedup, r.speedup);
  }
  if (s.compute > 0) max_speedup = std::max(max_speedup, static_cast<double>(max_nodes));
  const double x0 = std::log2(std::max(1, min_nodes)), x1 = std::max(x0 + 1, std::log2(max_nodes));
  auto X = [&](double n) { return left + (std::log2(n) - x0) / (x1 - x0) * pw; };
  auto Y = [&](double v) { return top + ph - v / (max_speedup * 1.05) * ph; };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"22\" font-size=\"14\">{}</text>\n",
      W, H, left, xml_escape(title));
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>\n", left, top,
                     pw, ph);
  for (double e = std::ceil(x0); e <= x1 + 1e-9; e += 1) {
    const double x = X(std::exp2(e));
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#eee\"/>"
                       "<text x=\"{0}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                       x, top, top + ph, top + ph + 16, static_cast<long>(std::exp2(e)));
  }
  const double step = std::pow(10.0, std::floor(std::log10(max_speedup))) / (max_speedup / std::pow(10.0, std::floor(std::log10(max_speedup))) < 3 ? 4 : 1);
  for (double v = 0; v <= max_speedup * 1.05; v += step) {
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#eee\"/>"
                       "<text x=\"{3}\" y=\"{4}\" text-anchor=\"end\">{5:g}</text>\n",
                       left, Y(v), left + pw, left - 6, Y(v) + 4, v);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">nodes</text>\n", left + pw / 2, H - 12);
  svg += fmt::format("<text transform=\"translate(18 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n", top + ph / 2,
                     s.compute > 0 ? "speedup" : "speedup over ring");
  if (s.compute > 0) {
    svg += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#bbb\" stroke-dasharray=\"4 4\"/>\n",
                       X(min_nodes), Y(min_nodes), X(max_nodes), Y(max_nodes));
  }
  const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"};
  for (std::size_t i = 0; i < algorithms.size(); ++i) {
    const char* color = colors[i % 7];
    std::string points;
    for (const auto& r : rows) {
      if (r.algorithm != algorithms[i]) continue;
      points += fmt::format("{:.1f},{:.1f} ", X(r.nodes), Y(r.speedup));
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", X(r.nodes), Y(r.speedup), color);
    }
    svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", points, color);
    const double ly = top + 16 + 20 * static_cast<double>(i);
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"2\"/>"
                       "<text x=\"{4}\" y=\"{5}\">{6}</text>\n",
                       left + pw + 12, ly, left + pw + 36, color, left + pw + 42, ly + 4, algorithms[i]);
  }
  return svg + "</svg>\n";
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

    ActorConfig actor_config(settings.threads);
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
    print_tables(rows, settings);
    if (auto report = cl.flag("report")) write_file(*report, to_json(rows));
    const std::string svg = cl.flag("svg").value_or(settings.svg);
    if (!svg.empty()) write_file(svg, to_svg(rows, settings, title));
    return 0;
  });
}
