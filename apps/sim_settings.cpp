#include "apps/sim_settings.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <utility>

#include "collectives/algorithms.hpp"
#include "core/common/error.hpp"
#include "core/net/net.hpp"
#include "devices/sw26010/layer_timing.hpp"
#include "devices/sw26010/lockstep_range.hpp"
#include "devices/sw26010/params.hpp"

namespace taihu::sim_app {
namespace {

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
  // The ranks' measured work, bucket by bucket in the order given.
  auto read_work = [&](const char* key, std::optional<double> Bucket::*field) {
    if (!s.has(key)) return;
    const auto seconds = s.get_list<double>(key);
    if (seconds.size() != out.size())
      throw s.error(key, fmt::format("lists {} values for {} buckets", seconds.size(), out.size()));
    for (std::size_t b = 0; b < out.size(); ++b) {
      if (!(seconds[b] >= 0)) throw s.error(key, "must not be negative");
      out[b].*field = seconds[b];
    }
  };
  read_work("compress_seconds", &Bucket::compress);
  read_work("decompress_seconds", &Bucket::decompress);
  read_work("unpack_seconds", &Bucket::unpack);
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

}  // namespace

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
  } else {
    for (const char* key : {"update_seconds", "compress_seconds", "decompress_seconds", "unpack_seconds"})
      if (s.has(key)) throw s.error(key, "only with buckets");
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

}  // namespace taihu::sim_app
