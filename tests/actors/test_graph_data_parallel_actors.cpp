// Data-parallel training of dynamic networks over the worker and shard
// actors: N replicas of a vertex function at batch b follow one replica at
// batch N·b (the same loop with workers = 1), for tree and DAG models.

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"
#include "support/training.hpp"

using namespace taihu;
using taihu::testing::graph_report;
using taihu::testing::run_training;
using taihu::testing::TempDir;

namespace {

struct ModelCase {
  const char* name;
  const char* model;  // [model] section body
  const char* data;   // [data] section body
};

// 60 training graphs: whole global batches for 2, 3 and 4 replicas at batch 5.
const ModelCase cases[] = {
    {"child-sum Tree-LSTM on expression trees", "type = child_sum_tree_lstm\nembedding = 8\nhidden = 6\n",
     "source = expression\ntrain_size = 60\ndev_size = 10\ntest_size = 20\nclasses = 5\n"},
    {"gated graph network on DAGs", "type = gated_graph\nhidden = 8\n",
     "source = dag\ntrain_size = 60\ndev_size = 0\ntest_size = 20\nclasses = 4\nvocabulary = 4\nmax_vertices = 12\n"},
};

std::string app_config(const TempDir& dir, const ModelCase& c, int workers, int batch, const std::string& sync = "") {
  return "epochs = 2\nbatch_size = " + std::to_string(batch) + "\nworkers = " + std::to_string(workers) +
         "\ntest_batch_size = 16\nseed = 5\ndisplay = 0\n[model]\n" + c.model + "[data]\n" + c.data +
         "[solver]\ntype = sgd\nbase_lr = 0.2\nmomentum = 0.9\nweight_decay = 0.001\n" +
         (workers > 1 ? "[sync]\nstep_timeout = 20\n" + sync : std::string()) + "\n[output]\ndir = " + dir.path().string() + "/out\nmetrics = \ncheckpoint = \n";
}

config::Document load(const TempDir& dir, const std::string& text) {
  return config::Document::parse_file(dir.write("app.ini", text));
}

}  // namespace

TEST_SUITE("graph_data_parallel") {
  TEST_CASE("N replicas of a dynamic model at batch b follow one replica at batch N*b") {
    TempDir dir;
    const int b = 5;
    for (const ModelCase& c : cases) {
      CAPTURE(c.name);
      const std::vector<float> start = taihu::testing::initial_parameters(load(dir, app_config(dir, c, 1, b)));
      for (int n : {2, 3}) {
        CAPTURE(n);
        const auto single = run_training(load(dir, app_config(dir, c, 1, n * b)));
        const GraphTrainReport single_report = graph_report(single);
        const auto& reference = single.final_parameters.at(0);
        double moved = 0;
        for (std::size_t i = 0; i < start.size(); ++i)
          moved = std::max(moved, double(std::abs(reference[i] - start[i])));
        REQUIRE(moved > 1e-2);  // training really moved the weights

        // 0.0002 MB: several buckets, all reduced after backward.
        for (const char* sync : {"bucket_mb = 0\nalgorithm = ring\n", "bucket_mb = 0.0002\nalgorithm = auto\n"}) {
          CAPTURE(sync);
          const auto run = run_training(load(dir, app_config(dir, c, n, b, sync)));
          const GraphTrainReport report = graph_report(run);
          CHECK(report.workers == n);
          CHECK(report.iterations == single_report.iterations);
          CHECK(report.history.size() == 2);
          CHECK(report.samples_per_second > 0);
          CHECK(report.test.loss == doctest::Approx(single_report.test.loss).epsilon(1e-3));
          const auto& params = run.final_parameters;
          REQUIRE(params.size() == static_cast<std::size_t>(n));
          for (int r = 0; r < n; ++r) {
            const auto& p = params[static_cast<std::size_t>(r)];
            REQUIRE(p.size() == reference.size());
            CHECK(p == params[0]);  // replicas agree bit for bit
            double worst = 0;
            for (std::size_t i = 0; i < p.size(); ++i)
              worst = std::max(worst, std::abs(double(p[i]) - reference[i]) / (1e-3 + std::abs(reference[i])));
            CHECK(worst < 1e-3);
          }
        }
      }
    }
  }

  TEST_CASE("replicas on the graph actor runtime equal replicas on the inline runner, bit for bit; RedSync too") {
    TempDir dir;
    const ModelCase& c = cases[0];
    auto run = [&](const char* runtime, const std::string& extra = "") {
      return run_training(load(dir, std::string("graph_runtime = ") + runtime + "\nexecutors = 1\n" +
                                        app_config(dir, c, 2, 5, "algorithm = ring\n") + extra));
    };
    const auto actors = run("actors");
    const auto inline_run = run("inline");
    CHECK(graph_report(actors).runner == "data-parallel, actors");
    CHECK(graph_report(inline_run).runner == "data-parallel, inline");
    REQUIRE(actors.final_parameters.size() == 2);
    CHECK(actors.final_parameters == inline_run.final_parameters);
    // RedSync's compression of the replicas' gradients, on either runner.
    const std::string compress = "[compress]\nmethod = topk\ndensity = 0.1\nmin_elements = 0\n";
    const auto compressed = run("actors", compress);
    const GraphTrainReport report = graph_report(compressed);
    CHECK(report.bytes_sent_per_iteration < report.dense_bytes_per_iteration);
    CHECK(std::isfinite(report.train_loss));
    CHECK(compressed.final_parameters == run("inline", compress).final_parameters);
  }
}
