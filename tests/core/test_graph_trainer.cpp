#include <doctest/doctest.h>

#include <string>

#include "core/common/error.hpp"
#include "core/config/config.hpp"
#include "core/train/graph_trainer.hpp"
#include "tests/support/temp_dir.hpp"

namespace taihu {
namespace {

std::string expression_config(const testing::TempDir& dir, int epochs) {
  return "epochs = " + std::to_string(epochs) +
         "\nbatch_size = 16\ntest_batch_size = 64\nseed = 3\ndisplay = 0\n"
         "[model]\ntype = tree_lstm\nembedding = 16\nhidden = 24\n"
         "[data]\nsource = expression\ntrain_size = 400\ndev_size = 100\ntest_size = 200\nclasses = 5\n"
         "max_leaves = 6\n"
         "[solver]\ntype = adam\nbase_lr = 0.01\n"
         "[output]\ndir = " + dir.path().string() + "\nmetrics = metrics.csv\ncheckpoint = graph.ckpt\n";
}

GraphTrainReport train(const std::string& text, const std::string& resume = {}) {
  GraphTrainer trainer(config::Document::parse(text, "test.ini"), Progress::Mode::quiet);
  if (!resume.empty()) trainer.resume(resume);
  return trainer.run();
}

}  // namespace

TEST_SUITE("graph trainer") {
  TEST_CASE("a Tree-LSTM learns expression values; the report names accuracy and trees/s") {
    testing::TempDir dir;
    const auto report = train(expression_config(dir, 4));
    REQUIRE(report.history.size() == 4);
    CHECK(report.history.back().train_loss < 0.8 * report.history.front().train_loss);
    // Five classes: chance is 20% at every vertex; leaves alone (their digit
    // mod 5) are half the vertices and easy.
    CHECK(report.test.accuracy > 0.5);
    CHECK(report.best_epoch >= 1);
    const std::string json = report.to_json();
    for (const char* key : {"\"test_accuracy\"", "\"trees_per_second\"", "\"dev_accuracy\"", "\"time_shares\""})
      CHECK(json.find(key) != std::string::npos);
    CHECK(std::filesystem::exists(dir / "graph.ckpt"));
    CHECK(std::filesystem::exists(dir / "metrics.csv"));
  }

  TEST_CASE("a gated graph network learns a recurrence over random DAGs") {
    testing::TempDir dir;
    const std::string text =
        "epochs = 4\nbatch_size = 16\nseed = 5\ndisplay = 0\n"
        "[model]\ntype = gated_graph\nhidden = 32\n"
        "[data]\nsource = dag\ntrain_size = 600\ndev_size = 100\ntest_size = 200\nclasses = 3\n"
        "vocabulary = 3\nmax_children = 2\nmax_vertices = 10\n"
        "[solver]\ntype = adam\nbase_lr = 0.01\n"
        "[output]\ndir = " + dir.path().string() + "\nmetrics =\ncheckpoint =\n";
    const auto report = train(text);
    CHECK(report.history.back().train_loss < 0.8 * report.history.front().train_loss);
    CHECK(report.test.accuracy > 0.5);  // chance: 1/3
  }

  TEST_CASE("resuming from an epoch checkpoint continues exactly") {
    testing::TempDir a, b;
    const auto straight = train(expression_config(a, 3));
    train(expression_config(b, 2));
    const auto resumed = train(expression_config(b, 3), (b / "graph.ckpt").string());
    REQUIRE(resumed.history.size() == 1);
    CHECK(resumed.history[0].train_loss == straight.history[2].train_loss);
    CHECK(resumed.history[0].test.loss == straight.history[2].test.loss);
  }

  TEST_CASE("config errors name the key") {
    testing::TempDir dir;
    auto text = expression_config(dir, 1);
    auto error_of = [](const std::string& t) {
      try {
        train(t);
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

}  // namespace taihu
