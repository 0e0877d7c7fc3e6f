// taihu-train: trains a net described in config files.
//
//   taihu-train --config-file=config/lenet-fashion.ini [key=value ...]
//               [--dump-config] [--report=FILE] [--resume=FILE] [--progress=auto|bar|lines|quiet]
//               [--log-level=info]
//
// device=sw26010 runs the layers on the simulated SW26010 (actors/device:
// one actor per core group) and reports the simulated time per layer.
// workers=N (N > 1) trains N in-process replicas with the actor runtime
// (actors/compute/coordinator.hpp), nodes=K spreads them over taihu-node
// processes; batch_size is then per worker.
// A config with a [model] section trains a dynamic network (a Cavs vertex
// function over input graphs, core/train/graph_trainer.hpp): one replica on
// the graph actor runtime (actors/graph_runtime/graph_runner.hpp), or with workers /
// nodes as data-parallel replicas like a net.

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "apps/app_support.hpp"
#include "actors/compute/coordinator.hpp"
#include "actors/device/sw26010_executor.hpp"
#include "actors/graph_runtime/graph_runner.hpp"
#include "core/blas/blas.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/common/error.hpp"
#include "core/train/graph_trainer.hpp"
#include "core/train/trainer.hpp"
#include "devices/sw26010/params.hpp"
#include "messages/type_ids.hpp"

namespace {

constexpr const char* usage = R"(usage: taihu-train --config-file=FILE [options] [key=value ...]

Trains the net named in the config file, or the dynamic model of its [model]
section (Tree-LSTM, LSTM language model, ...). Any config key can be overridden on
the command line: `epochs=5`, `solver.base_lr=0.05`, `--data.dir=/path`.

options:
  --config-file=FILE   application config (see config/*.ini)
  --dump-config        print the merged config and exit
  --report=FILE        write the final report as JSON
  --resume=FILE        continue bit-exactly from a checkpoint
  --progress=MODE      auto (bar on a terminal), bar, lines or quiet
  --log-level=LEVEL    trace, debug, info, warn, error
  -h, --help           this text
)";

taihu::Progress::Mode progress_mode(const std::string& name) {
  if (name.empty() || name == "auto") return taihu::Progress::Mode::automatic;
  if (name == "bar") return taihu::Progress::Mode::bar;
  if (name == "lines") return taihu::Progress::Mode::lines;
  if (name == "quiet") return taihu::Progress::Mode::quiet;
  throw taihu::ConfigError("command line: --progress must be auto, bar, lines or quiet, not '" + name + "'");
}

void write_report(const taihu::app::CommandLine& cl, const std::string& json) {
  if (auto path = cl.flag("report")) {
    std::ofstream out(*path);
    if (!out) throw taihu::Error(fmt::format("cannot write report '{}'", *path));
    out << json;
  }
}

// Device models for the single-replica Trainer (`device = sw26010`): the
// chip's parameters are config/devices/sw26010.ini's, overridden by an
// optional [sw26010] section of the app config.
std::unique_ptr<taihu::LayerExecutor> make_device(const std::string& device, taihu::Net& net,
                                                  const taihu::config::Document& doc) {
  using namespace taihu;
  const config::Section* section = doc.find("sw26010");
  const sw26010::Params params = section ? sw26010::Params::from(*section) : sw26010::Params::defaults();
  spdlog::info("device sw26010: 4 core-group actors, {:.2f} GHz, {} CPEs each", params.clock_hz / 1e9, 64);
  return device::make_sw26010_executor(net, params);
}

// Which epoch the reported test figures come from.
std::string selected_epoch(const taihu::GraphTrainReport& report) {
  return report.has_dev ? fmt::format("best dev epoch {}", report.best_epoch)
                        : fmt::format("epoch {}, no dev set", report.best_epoch);
}

void log_graph_report(const taihu::GraphTrainReport& report) {
  if (report.language_model)
    spdlog::info("finished: test perplexity {:.2f} ({}), {:.0f} tokens/s", report.test.perplexity,
                 selected_epoch(report), report.vertices_per_second);
  else
    spdlog::info("finished: test root accuracy {:.2f}% ({}), {:.0f} {}/s", 100.0 * report.test.root_accuracy,
                 selected_epoch(report), report.samples_per_second, report.data == "dag" ? "graphs" : "trees");
}

// Replicas (workers = N > 1, or remote nodes) train with the data-parallel
// runtime. By default workers x BLAS threads stays within the cores.
bool data_parallel(taihu::config::Document& doc) {
  using namespace taihu;
  const int64_t workers = doc.root().get_or<int64_t>("workers", 1);
  const int64_t nodes = doc.root().get_or<int64_t>("nodes", 0);
  if (workers <= 1 && nodes <= 0) return false;
  if (doc.section("blas").get_or<int>("threads", 0) == 0)
    blas::set_threads(std::max(1, blas::available_cores() / static_cast<int>(std::max<int64_t>(workers, 1))));
  return true;
}

// A dynamic network: one replica on the graph actor runtime, or replicas. Its GEMMs are small (a round
// of vertices), so by default every core runs an executor with one BLAS
// thread; executors x BLAS threads stay within the cores unless [blas]
// threads says otherwise.
int train_graph_model(taihu::config::Document doc, const taihu::app::CommandLine& cl, taihu::Progress::Mode progress) {
  using namespace taihu;
  if (data_parallel(doc)) {
    compute::DataParallelTrainer trainer(std::move(doc), progress);
    if (auto resume = cl.flag("resume")) trainer.resume(*resume);
    const GraphTrainReport report = trainer.run_graph();
    log_graph_report(report);
    write_report(cl, report.to_json());
    return 0;
  }
  const int executors = doc.root().get_or<int>("executors", 0);
  if (doc.section("blas").get_or<int>("threads", 0) == 0)
    blas::set_threads(executors > 0 ? std::max(1, blas::available_cores() / executors) : 1);
  // The executors are detached; the batcher is the only scheduled actor, and
  // one thread that sleeps when idle (no work-stealing polls) leaves the cores to them.
  caf::actor_system_config actor_config;  // the process's one actor system
  actor_config.add_message_types<caf::id_block::taihu>();
  actor_config.set("scheduler.policy", caf::atom("sharing"));
  actor_config.set("scheduler.max-threads", 1);
  caf::actor_system actor_system{actor_config};
  GraphTrainer trainer(std::move(doc), progress, [&](cavs::VertexFunction& f, const config::Document& d) {
    const auto options = graph::read_graph_runner_options(d);
    spdlog::info("graph runtime: {} vertex executors x {} BLAS threads", options.executors, blas::threads());
    return graph::make_graph_runner(actor_system, f, options);
  });
  if (auto resume = cl.flag("resume")) trainer.resume(*resume);
  const GraphTrainReport report = trainer.run();
  log_graph_report(report);
  write_report(cl, report.to_json());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace taihu;
  return taihu::app::run_app([&]() -> int {
    const auto cl = app::parse_command_line(
        argc, argv, {"dump-config", "report", "resume", "progress", "log-level"});
    if (cl.help) {
      std::fputs(usage, stdout);
      return 0;
    }
    app::setup_logging(cl.flag("log-level").value_or("info"));
    if (!cl.config_file) throw ConfigError("command line: --config-file=FILE is required (try --help)");
    config::Document doc = app::load_config(cl);
    if (cl.has_flag("dump-config")) {
      std::fputs(doc.dump().c_str(), stdout);
      return 0;
    }
    app::setup_blas(doc, argc, argv);

    const auto progress = progress_mode(cl.flag("progress").value_or("auto"));
    if (doc.find("model") != nullptr) return train_graph_model(std::move(doc), cl, progress);
    TrainReport report;
    if (data_parallel(doc)) {
      compute::DataParallelTrainer trainer(std::move(doc), progress);
      if (auto resume = cl.flag("resume")) trainer.resume(*resume);
      report = trainer.run();
    } else {
      // On a device model, the 4 core groups run concurrently and each CPE's
      // host GEMMs are small: one BLAS thread each.
      if (doc.root().get_or<std::string>("device", "cpu") != "cpu" && doc.section("blas").get_or<int>("threads", 0) == 0)
        blas::set_threads(1);
      Trainer trainer(std::move(doc), progress, make_device);
      if (auto resume = cl.flag("resume")) trainer.resume(*resume);
      report = trainer.run();
    }
    spdlog::info("finished: test accuracy {:.2f}%, train loss {:.4f}, {:.0f} images/s",
                 100.0 * report.test_accuracy, report.train_loss, report.images_per_second);
    if (report.device != "cpu")
      spdlog::info("{}: {:.1f} simulated images/s ({:.1f} ms per simulated iteration, {:.1f} s of host time each)",
                   report.device, report.device_report.simulated_images_per_second(),
                   1e3 * report.device_report.simulated_iteration_seconds(),
                   report.device_report.iterations ? report.device_report.host_seconds / report.device_report.iterations : 0.0);
    write_report(cl, report.to_json());
    return 0;
  });
}
