// taihu-train: trains a net described in config files.
//
//   taihu-train --config-file=config/lenet-fashion.ini [key=value ...]
//               [--dump-config] [--report=FILE] [--resume=FILE] [--progress=auto|bar|lines|quiet]
//               [--log-level=info]
//
// workers=N (N > 1) trains N in-process replicas with the actor runtime
// (actors/compute/coordinator.hpp); batch_size is then per worker.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "apps/app_support.hpp"
#include "actors/compute/coordinator.hpp"
#include "core/blas/blas.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/common/error.hpp"
#include "core/train/trainer.hpp"

namespace {

constexpr const char* usage = R"(usage: taihu-train --config-file=FILE [options] [key=value ...]

Trains the net named in the config file. Any config key can be overridden on
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

}  // namespace

int main(int argc, char** argv) {
  using namespace taihu;
  try {
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
    TrainReport report;
    const int64_t workers = doc.root().get_or<int64_t>("workers", 1);
    if (workers > 1) {
      // N replicas in this process: the actor runtime (actors/compute). By
      // default workers x BLAS threads stays within the cores.
      if (doc.section("blas").get_or<int>("threads", 0) == 0)
        blas::set_threads(std::max(1, blas::available_cores() / static_cast<int>(workers)));
      compute::DataParallelTrainer trainer(std::move(doc), progress);
      if (auto resume = cl.flag("resume")) trainer.resume(*resume);
      report = trainer.run();
    } else {
      Trainer trainer(std::move(doc), progress);
      if (auto resume = cl.flag("resume")) trainer.resume(*resume);
      report = trainer.run();
    }
    spdlog::info("finished: test accuracy {:.2f}%, train loss {:.4f}, {:.0f} images/s",
                 100.0 * report.test_accuracy, report.train_loss, report.images_per_second);
    if (auto path = cl.flag("report")) {
      std::ofstream out(*path);
      if (!out) throw Error(fmt::format("cannot write report '{}'", *path));
      out << report.to_json();
    }
    return 0;
  } catch (const NumericError& e) {
    spdlog::error("{}", e.what());
    return 3;
  } catch (const Error& e) {
    spdlog::error("{}", e.what());
    return 2;
  } catch (const std::exception& e) {
    spdlog::error("internal error: {}", e.what());
    return 1;
  }
}
