// taihu-train: trains a net described in config files.
//
//   taihu-train --config-file=config/lenet-fashion.ini [key=value ...]
//               [--dump-config] [--report=FILE] [--resume=FILE] [--progress=auto|bar|lines|quiet]
//               [--log-level=info]
//
// One training loop for everything (actors/compute/coordinator.hpp): a net
// or, with a [model] section, a dynamic network (a Cavs vertex function over
// input graphs, on the graph actor runtime); workers=N in-process replicas,
// nodes=K spread over taihu-node processes (batch_size is per worker);
// device=sw26010 runs every replica's layers on a simulated SW26010 (one actor
// per core group) and reports the simulated time per layer.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "actors/compute/coordinator.hpp"
#include "actors/compute/replica_services.hpp"
#include "actors/compute/run_plan.hpp"
#include "apps/app_support.hpp"
#include "apps/launched_cluster.hpp"
#include "apps/version.hpp"
#include "core/blas/blas.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/common/check.hpp"
#include "core/common/error.hpp"
#include "transport/launch_environment.hpp"
#include "transport/mpi_transport.hpp"

namespace {

constexpr const char* usage = R"(usage: taihu-train --config-file=FILE [options] [key=value ...]

Trains the net named in the config file, or the dynamic model of its [model]
section (Tree-LSTM, LSTM language model, ...). Any config key can be overridden on
the command line: `epochs=5`, `solver.base_lr=0.05`, `--data.dir=/path`.
Started by srun, mpirun or torchrun, the ranks form a cluster themselves: rank 0
coordinates and trains, the others join it (README: Cluster launchers).

options:
  --config-file=FILE   application config (see config/*.ini)
  --dump-config        print the merged config and exit
  --report=FILE        write the final report as JSON
  --resume=FILE        continue bit-exactly from a checkpoint
  --progress=MODE      auto (bar on a terminal), bar, lines or quiet
  --log-level=LEVEL    trace, debug, info, warn, error
  --version            taihu's version, git revision, build and libraries
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

// Which epoch the reported test figures come from.
std::string selected_epoch(const taihu::GraphTrainReport& report) {
  return report.has_dev ? fmt::format("best dev epoch {}", report.best_epoch)
                        : fmt::format("epoch {}, no dev set", report.best_epoch);
}

void log_report(const taihu::GraphTrainReport& report) {
  if (report.language_model)
    spdlog::info("finished: test perplexity {:.2f} ({}), {:.0f} tokens/s", report.test.perplexity,
                 selected_epoch(report), report.vertices_per_second);
  else
    spdlog::info("finished: test root accuracy {:.2f}% ({}), {:.0f} {}/s", 100.0 * report.test.root_accuracy,
                 selected_epoch(report), report.samples_per_second, report.data == "dag" ? "graphs" : "trees");
}

void log_report(const taihu::TrainReport& report) {
  spdlog::info("finished: test accuracy {:.2f}%, train loss {:.4f}, {:.0f} images/s", 100.0 * report.test_accuracy,
               report.train_loss, report.images_per_second);
  if (report.device != "cpu") {
    spdlog::info("{}", taihu::device_report_table(report.device_report, report.batch_size / report.workers));
    const auto& d = report.device_report;
    spdlog::info("{}: {:.1f} simulated images/s ({:.1f} ms per simulated iteration, {:.1f} s of host time each)",
                 report.device, d.simulated_images_per_second(), 1e3 * d.simulated_iteration_seconds(),
                 d.iterations ? d.host_seconds / d.iterations : 0.0);
    if (!report.chip_iteration_seconds.empty())
      spdlog::info("{} chips: {:.1f} ms compute (slowest chip) + {:.1f} ms allreduce per iteration ({:.1f}% "
                   "allreduce), {:.1f} simulated images/s in all",
                   report.chip_iteration_seconds.size(),
                   1e3 * *std::max_element(report.chip_iteration_seconds.begin(), report.chip_iteration_seconds.end()),
                   1e3 * report.simulated_allreduce_seconds, 100.0 * report.simulated_allreduce_share(),
                   report.simulated_system_images_per_second());
  }
}

// Compute threads per replica unless [blas] threads says: replicas share the
// cores; a dynamic model's vertex executors take the cores (one BLAS thread
// each, as its GEMMs are small: a round of vertices); a device model's core
// groups run concurrently (one each). Never more threads than cores.
void default_threads(const taihu::config::Document& doc) {
  using namespace taihu;
  if (doc.section("blas").get_or<int>("threads", 0) != 0) return;
  const int cores = blas::available_cores();
  const auto workers = std::max<int64_t>(1, doc.root().get_or<int64_t>("workers", 0));
  const auto nodes = doc.root().get_or<int64_t>("nodes", 0);
  if (workers > 1 || nodes > 0)
    blas::set_threads(std::max(1, cores / static_cast<int>(workers)));
  else if (doc.find("model") != nullptr)
    blas::set_threads(std::max(1, cores / std::max(1, doc.root().get_or<int>("executors", cores))));
  else if (doc.root().get_or<std::string>("device", "cpu") != "cpu")
    blas::set_threads(1);
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
    if (cl.version) {
      std::fputs(app::version_text("taihu-train").c_str(), stdout);
      return 0;
    }
    app::setup_logging(cl.flag("log-level").value_or("info"));
    if (!cl.config_file) throw ConfigError("command line: --config-file=FILE is required (try --help)");
    config::Document doc = app::load_config(cl);
    if (cl.has_flag("dump-config")) {
      std::fputs(doc.dump().c_str(), stdout);
      return 0;
    }
    app::setup_blas(doc, argc, argv);  // (may re-execute this process: before anything starts)
    // One of several ranks of srun, mpirun or torchrun: the ranks form the
    // cluster themselves (apps/launched_cluster.hpp).
    const auto launch = transport::detect_launch(transport::process_environment());
    // MPI starts first, on every rank at once, so that the rendezvous below
    // shares its PMIx client (transport/mpi_transport.hpp).
    std::optional<transport::MpiSession> mpi;
    if ((launch || doc.root().get_or<int>("nodes", 0) > 0) &&
        compute::read_chunk_transport(doc.section("cluster")) == compute::ChunkTransportKind::mpi) {
      if (!launch)
        throw doc.section("cluster").error("transport", "mpi needs a cluster launcher: start every rank with "
                                                        "mpirun -np N or srun --mpi=pmix (nodes of their own, "
                                                        "taihu-node, use transport = taihu)");
      mpi.emplace();
    }
    std::optional<app::LaunchedCoordinator> launched;
    if (launch) {
      if (launch->rank != 0) return app::run_launched_node(*launch, doc);
      launched.emplace(*launch, doc);
    }
    default_threads(doc);

    // The process's one actor system: every actor of the run lives in it.
    caf::actor_system_config cfg;
    compute::configure_actor_system(cfg, doc);
    caf::actor_system system{cfg};
    const int local_replicas = doc.root().get_or<int>("nodes", 0) > 0 ? 1 : doc.root().get_or<int>("workers", 1);
    compute::RunPlan plan = compute::RunPlan::read(std::move(doc), compute::replica_services(system, local_replicas));
    plan.cluster.build = app::build_id();
    if (launched) plan.cluster.own_node = launched->own_node();
    compute::TrainingOptions options;
    options.progress = progress_mode(cl.flag("progress").value_or("auto"));
    if (auto resume = cl.flag("resume")) options.resume = *resume;
    const compute::TrainingResult result = compute::train(system, std::move(plan), options);
    std::visit(
        [&](const auto& report) {
          log_report(report);
          write_report(cl, report.to_json());
        },
        result.report);
    return 0;
  });
}
