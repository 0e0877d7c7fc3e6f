// The one training loop (actors/compute/coordinator.hpp) with one replica:
// a net and dynamic models learn, write their reports, metrics and
// checkpoints, resume bit for bit, stop on a NaN loss keeping the last
// checkpoint, and name bad keys.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/common/error.hpp"
#include "core/layers/convolution_choices.hpp"
#include "core/train/checkpoint.hpp"
#include "support/mlp_net.hpp"
#include "support/temp_dir.hpp"
#include "support/training.hpp"

using namespace taihu;
using taihu::testing::graph_report;
using taihu::testing::net_report;
using taihu::testing::run_training;
using taihu::testing::TempDir;
using taihu::testing::Training;

namespace {

const std::string mlp_text = taihu::testing::mlp_net({.dropout = true, .accuracy = true});

std::string app_config(const TempDir& dir, const std::string& extra = "", int epochs = 2) {
  return "net = mlp.ini\nepochs = " + std::to_string(epochs) +
         "\nbatch_size = 16\ntest_batch_size = 50\nseed = 3\ndisplay = 5\n" + extra +
         "\n[data]\nsource = synthetic\nshape = 1 6 6\nclasses = 4\ntrain_size = 320\ntest_size = 120\n"
         "prefetch = 2\n"
         "[solver]\ntype = sgd\nbase_lr = 0.05\nmomentum = 0.9\n"
         "[output]\ndir = " +
         dir.path().string() + "/out\ncheckpoint = run.ckpt\n";
}

config::Document load(const TempDir& dir, const std::string& text, const std::string& name = "app.ini") {
  dir.write("mlp.ini", mlp_text);
  return config::Document::parse_file(dir.write(name, text));
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string expression_config(const TempDir& dir, int epochs) {
  return "epochs = " + std::to_string(epochs) +
         "\nbatch_size = 16\ntest_batch_size = 64\nseed = 3\ndisplay = 0\n"
         "[model]\ntype = tree_lstm\nembedding = 16\nhidden = 24\n"
         "[data]\nsource = expression\ntrain_size = 400\ndev_size = 100\ntest_size = 200\nclasses = 5\n"
         "max_leaves = 6\n"
         "[solver]\ntype = adam\nbase_lr = 0.01\n"
         "[output]\ndir = " + dir.path().string() + "\nmetrics = metrics.csv\ncheckpoint = graph.ckpt\n";
}

GraphTrainReport train_graphs(const std::string& text, const std::filesystem::path& resume = {}) {
  return graph_report(run_training(config::Document::parse(text, "test.ini"), Training{resume, {}}));
}

}  // namespace

TEST_SUITE("training loop") {
  TEST_CASE("one replica on synthetic data learns and writes report, metrics and checkpoint") {
    TempDir dir;
    const TrainReport report = net_report(run_training(load(dir, app_config(dir))));
    CHECK(report.epochs == 2);
    CHECK(report.iterations == 2 * (320 / 16));
    CHECK(report.workers == 1);
    CHECK(report.history.size() == 2);
    CHECK(report.test_accuracy > 0.6);  // chance is 0.25
    CHECK(report.history[1].train_loss < report.history[0].train_loss);
    CHECK(report.images_per_second > 0);
    const std::string json = report.to_json();
    for (const char* key : {"\"epochs\"", "\"train_loss\"", "\"test_accuracy\"", "\"images_per_second\""})
      CHECK_MESSAGE(json.find(key) != std::string::npos, key);
    CHECK(json.find("\"buckets\"") == std::string::npos);  // one replica exchanges nothing
    CHECK(std::filesystem::exists(dir / "out/run.ckpt"));
    const std::string metrics = read_file(dir / "out/metrics.jsonl");
    CHECK(metrics.find("\"type\": \"test\"") != std::string::npos);
    CHECK(metrics.find("\"accuracy\"") != std::string::npos);
    CHECK(metrics.find("\"lr\"") != std::string::npos);
  }

  TEST_CASE("resuming one replica from a checkpoint continues bit-exactly, mid-epoch too") {
    TempDir dir;
    const auto expected = run_training(load(dir, app_config(dir))).final_parameters;

    // Keep every checkpoint; iteration 7 is in the middle of epoch 1.
    TempDir dir2;
    run_training(load(dir2, app_config(dir2, "", 1) + "checkpoint_every = 7\nkeep_all = true\n"));
    for (const char* name : {"run-iter7.ckpt", "run-iter20.ckpt"}) {
      CAPTURE(name);
      REQUIRE(std::filesystem::exists(dir2 / ("out/" + std::string(name))));
      const auto resumed = run_training(load(dir2, app_config(dir2)), Training{dir2 / ("out/" + std::string(name)), {}});
      CHECK(resumed.final_parameters == expected);
    }
    // A checkpoint from another run is refused with a clear message.
    std::string other = app_config(dir2);
    CHECK_THROWS_WITH_AS(run_training(load(dir2, other.replace(other.find("seed = 3"), 8, "seed = 4"), "other.ini"),
                                      Training{dir2 / "out/run-iter7.ckpt", {}}),
                         doctest::Contains("seed"), Error);
    // A finished run says so instead of reporting an empty one.
    CHECK_THROWS_WITH_AS(run_training(load(dir2, app_config(dir2, "", 1)), Training{dir2 / "out/run-iter20.ckpt", {}}),
                         doctest::Contains("already complete"), ConfigError);
  }

  TEST_CASE("a measured run resumes with the kernels its checkpoint names, not those this process would choose") {
    // conv1 under `algorithm = measured`: its three passes are timed at
    // start-up on rank 0, and the decisions go into every checkpoint.
    const std::string conv_net = R"(
[net]
name = convnet
[input data]
shape = 8 6 6
[input label]
shape =
[layer conv1]
type = Convolution
bottom = data
top = conv1
num_output = 16
kernel_size = 3
pad = 1
algorithm = measured
[layer relu1]
type = ReLU
bottom = conv1
top = conv1
[layer ip1]
type = InnerProduct
bottom = conv1
top = ip1
num_output = 4
[layer loss]
type = SoftmaxWithLoss
bottom = ip1 label
top = loss
)";
    const auto config = [&](const TempDir& dir, int epochs, const std::string& extra) {
      dir.write("convnet.ini", conv_net);
      std::string text = app_config(dir, "", epochs) + extra;
      text.replace(text.find("net = mlp.ini"), 13, "net = convnet.ini");
      text.replace(text.find("shape = 1 6 6"), 13, "shape = 8 6 6");
      return config::Document::parse_file(dir.write("app.ini", text));
    };
    ConvolutionChoices& choices = ConvolutionChoices::process();
    choices.clear();
    TempDir dir;
    run_training(config(dir, 1, "checkpoint_every = 7\nkeep_all = true\n"));
    const Checkpoint saved = load_checkpoint(dir / "out/run-iter7.ckpt");
    if (saved.kernel_choices.empty()) {
      MESSAGE("oneDNN has no kernel for conv1 on this CPU: nothing is timed");
      return;
    }
    CHECK(saved.kernel_choices.size() >= 3);  // the three passes at the training batch
    auto opposite = saved.kernel_choices;
    for (auto& [key, dnnl] : opposite) dnnl = !dnnl;

    // Uninterrupted, with the checkpoint's kernels.
    choices.clear();
    choices.adopt(saved.kernel_choices);
    TempDir whole;
    const auto expected = run_training(config(whole, 2, "")).final_parameters;
    // Resumed in a process that had chosen the other kernel for every pass:
    // the checkpoint's choices replace them, and the bits are the same.
    choices.clear();
    choices.adopt(opposite);
    const auto resumed = run_training(config(dir, 2, ""), Training{dir / "out/run-iter7.ckpt", {}}).final_parameters;
    CHECK(resumed == expected);
    // The other kernels compute other bits: the check above can fail.
    choices.clear();
    choices.adopt(opposite);
    TempDir other;
    CHECK(run_training(config(other, 2, "")).final_parameters != expected);
    choices.clear();
  }

  TEST_CASE("`iterations` stops one replica or several mid-epoch, with a checkpoint to resume") {
    TempDir dir;
    for (int workers : {1, 2}) {
      CAPTURE(workers);
      const TrainReport report = net_report(
          run_training(load(dir, app_config(dir, "iterations = 7\nworkers = " + std::to_string(workers), 2))));
      CHECK(report.iterations == 7);
      CHECK(report.history.size() == 1);
      const Checkpoint c = load_checkpoint(dir / "out/run.ckpt");
      CHECK(c.iteration == 7);
      CHECK(c.epoch == 0);
      CHECK(c.batch == 7);
    }
  }

  TEST_CASE("a NaN loss stops training with a clear error and keeps the last checkpoint") {
    TempDir dir;
    run_training(load(dir, app_config(dir, "")));
    const std::string before = read_file(dir / "out/run.ckpt");
    std::string text = app_config(dir, "");
    text.replace(text.find("base_lr = 0.05"), 14, "base_lr = 1e30");
    CHECK_THROWS_WITH_AS(run_training(load(dir, text, "bad.ini")), doctest::Contains("loss became"), NumericError);
    CHECK(read_file(dir / "out/run.ckpt") == before);
  }

  TEST_CASE("a Tree-LSTM learns expression values; the report names accuracy and trees/s") {
    TempDir dir;
    const auto report = train_graphs(expression_config(dir, 4));
    REQUIRE(report.history.size() == 4);
    CHECK(report.history.back().train_loss < 0.8 * report.history.front().train_loss);
    // Five classes: chance is 20% at every vertex; leaves alone (their digit
    // mod 5) are half the vertices and easy.
    CHECK(report.test.accuracy > 0.5);
    CHECK(report.best_epoch >= 1);
    CHECK(report.runner == "actors");
    const std::string json = report.to_json();
    for (const char* key : {"\"test_accuracy\"", "\"trees_per_second\"", "\"dev_accuracy\"", "\"time_shares\""})
      CHECK(json.find(key) != std::string::npos);
    CHECK(std::filesystem::exists(dir / "graph.ckpt"));
    CHECK(std::filesystem::exists(dir / "metrics.csv"));
  }

  TEST_CASE("a gated graph network learns a recurrence over random DAGs") {
    TempDir dir;
    const std::string text =
        "epochs = 4\nbatch_size = 16\nseed = 5\ndisplay = 0\n"
        "[model]\ntype = gated_graph\nhidden = 32\n"
        "[data]\nsource = dag\ntrain_size = 600\ndev_size = 100\ntest_size = 200\nclasses = 3\n"
        "vocabulary = 3\nmax_children = 2\nmax_vertices = 10\n"
        "[solver]\ntype = adam\nbase_lr = 0.01\n"
        "[output]\ndir = " + dir.path().string() + "\nmetrics =\ncheckpoint =\n";
    const auto report = train_graphs(text);
    CHECK(report.history.back().train_loss < 0.8 * report.history.front().train_loss);
    CHECK(report.test.accuracy > 0.5);  // chance: 1/3
  }

  TEST_CASE("a dynamic model resumed from an epoch checkpoint continues exactly") {
    // Two vertex executors: their parts' weight gradients add up in part
    // order, whichever finishes first (actors/graph_runtime/graph_runner.hpp).
    TempDir a, b;
    auto config = [](const TempDir& dir, int epochs) { return "executors = 2\n" + expression_config(dir, epochs); };
    const auto straight = train_graphs(config(a, 3));
    train_graphs(config(b, 2));
    const auto resumed = train_graphs(config(b, 3), b / "graph.ckpt");
    REQUIRE(resumed.history.size() == 1);
    CHECK(resumed.history[0].train_loss == straight.history[2].train_loss);
    CHECK(resumed.history[0].test.loss == straight.history[2].test.loss);
  }

  TEST_CASE("config errors name the key") {
    TempDir dir;
    auto text = expression_config(dir, 1);
    auto error_of = [](const std::string& t) {
      try {
        train_graphs(t);
      } catch (const Error& e) {
        return std::string(e.what());
      }
      return std::string("<no error>");
    };
    std::string unknown = text;
    unknown.replace(unknown.find("type = tree_lstm"), 16, "type = treelstm");
    CHECK(error_of(unknown).find("unknown model 'treelstm'") != std::string::npos);
    CHECK(error_of("batch_size = 0\n" + text.substr(text.find('\n') + 1)).find("batch_size") != std::string::npos);
    std::string typo = text;
    typo.replace(typo.find("hidden"), 6, "hiden");
    CHECK(error_of(typo).find("hiden") != std::string::npos);
  }
}
