// taihu-train: trains a net described in config files.
//
//   taihu-train --config-file=config/lenet-fashion.ini [key=value ...]
//               [--dump-config] [--report=FILE] [--resume=FILE] [--evaluate]
//               [--progress=auto|bar|lines|quiet] [--log-level=info]
//
// Ctrl-C or SIGTERM stops the run after the iteration in flight, with a
// checkpoint where it stands and the report (apps/stop_signals.hpp).
//
// One training loop for everything (actors/compute/coordinator.hpp): a net
// or, with a [model] section, a dynamic network (a Cavs vertex function over
// input graphs, on the graph actor runtime); workers=N in-process replicas,
// nodes=K spread over taihu-node processes (batch_size is per worker);
// device=sw26010 runs every replica's layers on a simulated SW26010 (one actor
// per core group) and reports the simulated time per layer.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#include <optional>

#include "actors/compute/cluster.hpp"
#include "apps/app_support.hpp"
#include "apps/launched_cluster.hpp"
#include "apps/stop_signals.hpp"
#include "apps/training_run.hpp"
#include "apps/version.hpp"
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
  --evaluate           train nothing: evaluate the --resume checkpoint's weights
                       (or the initial ones) on the test (and dev) set
  --progress=MODE      auto (bar on a terminal), bar, lines or quiet
  --log-level=LEVEL    trace, debug, info, warn, error
  --version            taihu's version, git revision, build and libraries
  -h, --help           this text

Ctrl-C or SIGTERM stops after the iteration in flight: a checkpoint where the
run stands ([output] checkpoint; --resume continues from it), the report, and
exit status 128 + the signal's number; a coordinator still waiting for its
nodes stops at once. A second one ends the process at once.
)";

void write_report(const taihu::app::CommandLine& cl, const std::string& json) {
  if (auto path = cl.flag("report")) {
    std::ofstream out(*path);
    if (!out) throw taihu::Error(fmt::format("cannot write report '{}'", *path));
    out << json;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace taihu;
  return taihu::app::run_app([&]() -> int {
    const auto cl = app::parse_command_line(
        argc, argv, {"dump-config", "report", "resume", "evaluate", "progress", "log-level"});
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
    app::TrainingRunOptions options;
    options.progress = Progress::parse_mode(cl.flag("progress").value_or("auto"), "command line: --progress");
    if (auto resume = cl.flag("resume")) options.resume = *resume;
    if (launched) options.own_node = launched->own_node();
    options.evaluate_only = cl.has_flag("evaluate");
    const app::StopSignals signals;
    options.stop = signals.flag();
    const compute::TrainingResult result = app::run_training(std::move(doc), options);
    write_report(cl, options.evaluate_only ? app::evaluation_json(result) : app::report_json(result));
    return result.stopped ? 128 + signals.received() : 0;
  });
}
