// Cost of the simulated network (actors/sim/): host seconds to simulate one
// allreduce through the shard actors (and through the engine alone) against
// the number of nodes, in timing mode.
//
//   build/bench/bench_sim_actors --config=config/topologies/taihulight.ini --nodes=64,256,1024
//       --algorithms=ring,topology_aware --size-mb=100 --runs=3 [--threads=1] [--json=FILE]

#include <caf/all.hpp>

#include <algorithm>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "simulator/engine.hpp"
#include "simulator/network.hpp"
#include "actors/sim/simulation.hpp"
#include "collectives/algorithms.hpp"
#include "bench/bench_args.hpp"
#include "core/config/config.hpp"
#include "messages/type_ids.hpp"

namespace {

struct Config : caf::actor_system_config {
  explicit Config(int threads) {
    add_message_types<caf::id_block::taihu>();
    set("scheduler.max-threads", threads);
    set("work-stealing.aggressive-poll-attempts", 10);
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const auto comma = list.find(',', start);
    out.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace taihu;
  using taihu::bench::arg_value;
  const auto doc = config::Document::parse_file(arg_value(argc, argv, "config", "config/topologies/taihulight.ini"));
  const auto nodes = taihu::bench::number_list(arg_value(argc, argv, "nodes", "64,256,1024"));
  const auto algorithms = split(arg_value(argc, argv, "algorithms", "ring,topology_aware"));
  const double size_mb = std::stod(arg_value(argc, argv, "size-mb", "100"));
  const int runs = std::stoi(arg_value(argc, argv, "runs", "3"));
  const int threads = std::stoi(arg_value(argc, argv, "threads", "1"));
  const std::string json = arg_value(argc, argv, "json", "");
  const auto elements = static_cast<std::size_t>(size_mb * 1e6 / 4);

  Config cfg(threads);
  caf::actor_system system{cfg};
  std::string rows;
  // Wall and CPU seconds (all threads) of the process: on a shared machine
  // the CPU time is the steadier figure.
  std::printf("%-15s %6s %10s %9s %10s %10s %10s %14s %12s\n", "algorithm", "nodes", "messages", "waits", "actors s",
              "actors cpu", "engine s", "actors us/msg", "simulated s");
  for (const auto& algorithm : algorithms) {
    for (double n : nodes) {
      const int p = static_cast<int>(n);
      auto network = simulator::Network::from_config(doc.section("network"), p);
      const auto schedule = collectives::make_allreduce(collectives::parse_algorithm(algorithm), network->topology(), elements);
      std::vector<double> actor_times, engine_times, actor_cpu;
      sim::SimResult last;
      simulator::Timing timing;
      for (int i = 0; i < runs; ++i) {
        const std::clock_t cpu0 = std::clock();
        last = sim::simulate(system, schedule, *network, {});
        actor_cpu.push_back(static_cast<double>(std::clock() - cpu0) / CLOCKS_PER_SEC);
        actor_times.push_back(last.host_seconds);
        timing = simulator::time_without_actors(schedule, *network);
        engine_times.push_back(timing.host_seconds);
      }
      if (timing.seconds != last.seconds) {
        std::fprintf(stderr, "actors and engine disagree: %.9g vs %.9g s\n", last.seconds, timing.seconds);
        return 1;
      }
      const double actors = median(actor_times), engine = median(engine_times), cpu = median(actor_cpu);
      std::printf("%-15s %6d %10llu %9llu %10.3f %10.3f %10.3f %14.2f %12.6f\n", algorithm.c_str(), p,
                  static_cast<unsigned long long>(last.stats.messages), static_cast<unsigned long long>(last.probes),
                  actors, cpu, engine, 1e6 * actors / static_cast<double>(last.stats.messages), last.seconds);
      std::fflush(stdout);
      rows += fmt::format("{}  {{\"algorithm\": \"{}\", \"nodes\": {}, \"messages\": {}, \"waits\": {}, \"actor_host_seconds\": "
                          "{:.4f}, \"actor_cpu_seconds\": {:.4f}, \"engine_host_seconds\": {:.4f}, \"simulated_seconds\": {:.9g}, \"size_mb\": {}, "
                          "\"threads\": {}, \"runs\": {}}}",
                          rows.empty() ? "" : ",\n", algorithm, p, last.stats.messages, last.probes, actors, cpu, engine,
                          last.seconds, size_mb, threads, runs);
    }
  }
  if (!json.empty()) std::ofstream(json) << "[\n" << rows << "\n]\n";
  return 0;
}
