#include <doctest/doctest.h>

#include <string>

#include "core/common/error.hpp"
#include "core/config/config.hpp"
#include "core/graph/dag_generator.hpp"
#include "core/graph/expression_tree.hpp"
#include "core/graph/graph_dataset.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/error_message.hpp"
#include "tests/support/temp_dir.hpp"

namespace taihu {
namespace {

GraphDataset load(const std::string& text, uint64_t seed = 1) {
  auto doc = config::Document::parse(text, "test.ini");
  return load_graph_dataset(doc, doc.section("data"), seed);
}

std::string error_of(auto&& f) { return taihu::testing::error_message<Error>(f); }

}  // namespace

TEST_SUITE("graph data") {
  TEST_CASE("sentence chain: vertex t reads the previous token and predicts its own") {
    const std::vector<int32_t> sentence{5, 6, 7, 1};  // 1 = <eos>
    const InputGraph chain = sentence_chain(sentence, 1);
    REQUIRE(chain.num_vertices() == 4);
    CHECK(chain.tokens()[0] == 1);
    CHECK(chain.tokens()[1] == 5);
    CHECK(chain.tokens()[3] == 7);
    CHECK(chain.labels()[0] == 5);
    CHECK(chain.labels()[3] == 1);
    CHECK(chain.is_leaf(0));
    CHECK(chain.children(2)[0] == 1);
    CHECK(chain.height() == 3);
  }

  TEST_CASE("chunk chains: equal lengths, labels shifted by one, tail dropped") {
    std::vector<int32_t> stream(23);
    for (int i = 0; i < 23; ++i) stream[static_cast<size_t>(i)] = i;
    const auto chains = chunk_chains(stream, 5);
    REQUIRE(chains.size() == 4);  // 22 usable inputs -> 4 chains of 5
    for (size_t c = 0; c < chains.size(); ++c)
      for (int32_t t = 0; t < 5; ++t) {
        CHECK(chains[c].tokens()[static_cast<size_t>(t)] == static_cast<int32_t>(c) * 5 + t);
        CHECK(chains[c].labels()[static_cast<size_t>(t)] == static_cast<int32_t>(c) * 5 + t + 1);
      }
    CHECK_THROWS_AS(chunk_chains(stream, 0), Error);
  }

  TEST_CASE("expression source: seeded, sized, labels are the values") {
    const auto a = load("[data]\nsource = expression\ntrain_size = 50\ndev_size = 5\ntest_size = 20\nclasses = 7\n");
    const auto b = load("[data]\nsource = expression\ntrain_size = 50\ndev_size = 5\ntest_size = 20\nclasses = 7\n");
    const auto c = load("[data]\nsource = expression\ntrain_size = 50\ndev_size = 5\ntest_size = 20\nclasses = 7\n", 2);
    REQUIRE(a.train.size() == 50);
    CHECK(a.dev.size() == 5);
    CHECK(a.test.size() == 20);
    CHECK(a.num_classes == 7);
    CHECK(a.vocabulary_size == expression_vocabulary_size);
    CHECK(a.train == b.train);
    CHECK_FALSE(a.train == c.train);
    for (const auto& g : a.train) {
      const auto values = evaluate_expression(g, 7);
      CHECK(std::equal(values.begin(), values.end(), g.labels().begin()));
    }
  }

  TEST_CASE("dag source: DAGs with shared children, labels follow the recurrence") {
    const auto d = load("[data]\nsource = dag\ntrain_size = 200\ndev_size = 0\ntest_size = 10\nclasses = 5\n");
    REQUIRE(d.train.size() == 200);
    CHECK(d.dev.empty());
    CHECK(d.num_classes == 5);
    int64_t shared = 0, roots = 0;
    for (const auto& g : d.train) {
      const auto labels = dag_labels(g, 5);
      CHECK(std::equal(labels.begin(), labels.end(), g.labels().begin()));
      for (int32_t c : g.parent_counts()) shared += c > 1;
      roots += static_cast<int64_t>(g.roots().size());
      for (int32_t v = 0; v < g.num_vertices(); ++v)
        for (int32_t c : g.children(v)) CHECK(c < v);
    }
    CHECK(shared > 100);  // vertices read by several parents: not trees
    CHECK(roots > 200);   // several sinks per graph on average
  }

  TEST_CASE("bad [data] keys name file, line and key; missing files say where the data is") {
    CHECK(error_of([] { load("[data]\nsource = treebank\n"); }).find("test.ini:2") != std::string::npos);
    const std::string missing_dir = error_of([] { load("[data]\nsource = sst\n"); });
    CHECK(missing_dir.find("dir") != std::string::npos);
    CHECK(missing_dir.find("shared/data") != std::string::npos);
    const std::string no_folder = error_of([] { load("[data]\nsource = sst\ndir = /nonexistent/sst\n"); });
    CHECK(no_folder.find("/nonexistent/sst") != std::string::npos);
    CHECK(error_of([] { load("[data]\nsource = expression\ntrain_size = 0\n"); }).find("train_size") !=
          std::string::npos);
  }

  TEST_CASE("sst trees the model cannot take are reported at load, with file, line and column") {
    testing::TempDir dir;
    dir.write("train.txt", "(1 (2 a) (3 b))\n(2 (1 c) (0 d))\n");
    dir.write("dev.txt", "(1 (2 a) (3 b))\n");
    dir.write("test.txt", "(1 (2 a) (3 b))\n\n(0 (1 a) (2 b) (1 c))\n");
    const std::string text = "[data]\nsource = sst\ndir = " + dir.path().string() + "\n";
    auto doc = config::Document::parse(text, "test.ini");
    const GraphLimits binary{2, "model 'tree_lstm'"};
    CHECK(error_of([&] { load_graph_dataset(doc, doc.section("data"), 1, binary); }) ==
          (dir / "test.txt").string() +
              ":3:1: malformed bracket tree: a node with 3 children; model 'tree_lstm' takes at most 2 per node");
    // A model of any arity reads them; classes = 3 does not fit label 3 (train.txt, line 1, column 11).
    CHECK(load_graph_dataset(doc, doc.section("data"), 1, GraphLimits{}).test.size() == 2);
    auto three = config::Document::parse(text + "classes = 3\n", "test.ini");
    CHECK(error_of([&] { load_graph_dataset(three, three.section("data"), 1); }) ==
          (dir / "train.txt").string() + ":1:11: malformed bracket tree: label 3 is outside [0, 3) (classes = 3)");
  }

  TEST_CASE("sst and ptb sources over the shared data") {
    const auto dir = testing::shared_data_dir();
    if (!std::filesystem::exists(dir / "sst" / "train.txt") || !std::filesystem::exists(dir / "ptb" / "test.txt")) {
      MESSAGE("shared data not found at " << dir.string() << "; skipped (set TAIHU_DATA_DIR)");
      return;
    }
    const auto sst = load("[data]\nsource = sst\ndir = " + (dir / "sst").string() + "\n");
    CHECK(sst.train.size() == 8544);
    CHECK(sst.dev.size() == 1101);
    CHECK(sst.test.size() == 2210);
    CHECK(sst.num_classes == 5);
    CHECK(sst.vocabulary_size == 18281);  // 18,280 types + <unk>
    CHECK_FALSE(sst.language_model);

    const auto ptb = load("[data]\nsource = ptb\ndir = " + (dir / "ptb").string() + "\nmax_vocabulary = 10000\n");
    CHECK(ptb.language_model);
    CHECK(ptb.test.size() == 3370);  // valid.txt sentences
    CHECK(ptb.vocabulary_size <= 10000);
    CHECK(ptb.num_classes == ptb.vocabulary_size);
    const auto chunks = load("[data]\nsource = ptb\ndir = " + (dir / "ptb").string() +
                             "\nlayout = chunks\nchunk_length = 35\n");
    for (const auto& g : chunks.train) CHECK(g.num_vertices() == 35);
  }
}

}  // namespace taihu
