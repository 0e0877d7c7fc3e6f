#include <doctest/doctest.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>

#include "core/common/error.hpp"
#include "core/graph/bracket_tree_reader.hpp"
#include "core/graph/input_graph.hpp"
#include "core/graph/text_reader.hpp"
#include "core/graph/tree_workload_io.hpp"
#include "core/graph/tree_workloads.hpp"
#include "tests/support/error_message.hpp"
#include "tests/support/shared_data.hpp"

using namespace taihu;

namespace {

std::string error_of(auto&& f) { return taihu::testing::error_message<DataError>(f); }

std::string to_text(const TreeWorkload& w) {
  std::ostringstream out;
  write_tree_workload(out, w);
  return out.str();
}

// A small hand-made workload: the SST-style tree ((a b) c) and a 3-chain.
TreeWorkload small_workload() {
  TreeWorkload w;
  w.name = "small";
  w.vocabulary_size = 10;
  w.num_classes = 5;
  w.comments = {"made by hand"};
  InputGraph tree;
  const int32_t a = tree.add_leaf(7, 1), b = tree.add_leaf(3, 2);
  const std::array<int32_t, 2> ab{a, b};
  const int32_t n = tree.add_vertex(ab, 3);
  const int32_t c = tree.add_leaf(9, 4);
  const std::array<int32_t, 2> nc{n, c};
  tree.add_vertex(nc, 0);
  w.trees.push_back(tree);
  const std::array<int32_t, 3> words{1, 2, 3};
  w.trees.push_back(InputGraph::chain(words));
  return w;
}

// The header of small_workload() followed by `body`.
std::string with_header(const std::string& body, int trees = 1, int vertices = 3) {
  return "taihu-tree-workload 1\nname t\nvocabulary 10\nclasses 5\ntrees " + std::to_string(trees) +
         "\nvertices " + std::to_string(vertices) + "\n" + body;
}


}  // namespace

TEST_SUITE("tree workload") {
  TEST_CASE("writes parent, token and label lines exactly as documented") {
    const std::string expected =
        "taihu-tree-workload 1\n"
        "# made by hand\n"
        "name small\nvocabulary 10\nclasses 5\ntrees 2\nvertices 8\n"
        "2 2 4 4 -1\n"  // ((a b) c): a, b -> n(2); n, c -> root(4)
        "7 3 -1 9 -1\n"
        "1 2 3 4 0\n"
        "1 2 -1\n"  // chain 1 -> 2 -> 3
        "1 2 3\n"
        "-1 -1 -1\n";
    CHECK(to_text(small_workload()) == expected);
  }

  TEST_CASE("round trip keeps every graph, token, label and the header") {
    const TreeWorkload w = small_workload();
    const TreeWorkload back = parse_tree_workload(to_text(w));
    CHECK(back.name == "small");
    CHECK(back.vocabulary_size == 10);
    CHECK(back.num_classes == 5);
    CHECK(back.comments == std::vector<std::string>{"made by hand"});
    CHECK(back.trees == w.trees);

    // Generated workloads of every kind survive a round trip through a file.
    const auto dir = std::filesystem::temp_directory_path() / "taihu_test_tree_workload";
    std::filesystem::create_directories(dir);
    for (const TreeWorkload& generated :
         {sst_like_workload(50, 7, 100), complete_tree_workload(3, 4, 7, 100), comb_workload(2, 9, 7, 100)}) {
      const auto path = dir / (generated.name + ".txt");
      write_tree_workload(path, generated);
      const TreeWorkload read = read_tree_workload(path);
      CHECK(read.name == generated.name);
      CHECK(read.trees == generated.trees);
      CHECK(!std::filesystem::exists(path.string() + ".partial"));
    }
    std::filesystem::remove_all(dir);
  }

  TEST_CASE("generated workloads: shapes, ranges, determinism") {
    const TreeWorkload a = sst_like_workload(200, 11, 50);
    CHECK(a.trees.size() == 200);
    CHECK(a.trees == sst_like_workload(200, 11, 50).trees);
    CHECK(a.trees != sst_like_workload(200, 12, 50).trees);
    for (const auto& t : a.trees) {
      REQUIRE(t.max_arity() <= 2);
      CHECK(t.num_vertices() == 2 * t.num_leaves() - 1);
      for (int32_t v = 0; v < t.num_vertices(); ++v) {
        CHECK((t.token(v) >= 0) == t.is_leaf(v));
        CHECK(t.token(v) < 50);
        CHECK((t.label(v) >= 0 && t.label(v) < 5));
      }
    }
    const TreeWorkload fc = complete_tree_workload(4, 7, 3);
    CHECK(fc.name == "complete-128");
    for (const auto& t : fc.trees) {
      CHECK(t.num_vertices() == 255);
      CHECK(t.num_leaves() == 128);
      CHECK(t.height() == 7);
    }
    CHECK(fc.trees[0].tokens().size() == 255);
    CHECK(fc.trees[0] != fc.trees[1]);  // tokens and labels drawn per tree
    const TreeWorkload comb = comb_workload(1, 6, 3);
    CHECK(comb.trees[0].height() == 5);
  }

  TEST_CASE("chains: tokens <eos> w1..wn, labels w1..wn <eos>") {
    const TextCorpus corpus = parse_text("a b c\nb\n", VocabularyOptions{});
    const auto& v = corpus.vocabulary;
    const int32_t eos = v.id("<eos>");
    const TreeWorkload w = chain_workload(corpus, "ptb", 100);
    CHECK(w.vocabulary_size == 100);
    CHECK(w.num_classes == 100);
    REQUIRE(w.trees.size() == 2);
    const InputGraph& first = w.trees[0];
    CHECK(first.num_vertices() == 4);
    CHECK(std::vector<int32_t>(first.tokens().begin(), first.tokens().end()) ==
          std::vector<int32_t>{eos, v.id("a"), v.id("b"), v.id("c")});
    CHECK(std::vector<int32_t>(first.labels().begin(), first.labels().end()) ==
          std::vector<int32_t>{v.id("a"), v.id("b"), v.id("c"), eos});
    CHECK(first.height() == 3);
    CHECK(w.trees[1].num_vertices() == 2);
    // A chain's parent line is 1 2 ... -1.
    const std::string text = to_text(w);
    CHECK(text.find("\n1 2 3 -1\n") != std::string::npos);
    CHECK(parse_tree_workload(text).trees == w.trees);
  }

  TEST_CASE("writer rejects graphs that parent indices cannot express") {
    TreeWorkload w = small_workload();
    w.name = "bad";
    InputGraph forest;
    forest.add_leaf(1);
    forest.add_leaf(2);
    w.trees = {forest};
    CHECK(error_of([&] { to_text(w); }).find("vertex 0 has no parent but is not the root") != std::string::npos);

    InputGraph dag;
    const int32_t leaf = dag.add_leaf(1);
    const std::array<int32_t, 1> one{leaf};
    const int32_t x = dag.add_vertex(one), y = dag.add_vertex(one);
    const std::array<int32_t, 2> xy{x, y};
    dag.add_vertex(xy);
    w.trees = {dag};
    CHECK(error_of([&] { to_text(w); }).find("vertex 0 has two parents (1 and 2)") != std::string::npos);

    InputGraph swapped;
    const int32_t p = swapped.add_leaf(1), q = swapped.add_leaf(2);
    const std::array<int32_t, 2> qp{q, p};
    swapped.add_vertex(qp);
    w.trees = {swapped};
    CHECK(error_of([&] { to_text(w); }).find("increasing id order") != std::string::npos);

    w.trees = {InputGraph::chain(std::array<int32_t, 2>{3, 10})};
    CHECK(error_of([&] { to_text(w); }).find("tree 0, vertex 1 has token 10, outside [-1, 10)") != std::string::npos);
    w.trees = {InputGraph{}};
    CHECK(error_of([&] { to_text(w); }).find("tree 0 is empty") != std::string::npos);
    w = small_workload();
    w.name = "two words";
    CHECK(error_of([&] { to_text(w); }).find("one word") != std::string::npos);
  }

  TEST_CASE("reader errors name the source, the line and the problem") {
    const std::string ok = "1 2 -1\n1 2 3\n0 1 2\n";
    CHECK(parse_tree_workload(with_header(ok), "w.txt").trees.size() == 1);
    auto error = [](const std::string& text) { return error_of([&] { parse_tree_workload(text, "w.txt"); }); };
    CHECK(error("hello 1\n") == "w.txt:1: tree workload: not a tree workload: expected 'taihu-tree-workload 1' "
                                "on the first line");
    CHECK(error("taihu-tree-workload 2\n").find("w.txt:1: tree workload: format version 2 is not supported") == 0);
    CHECK(error("taihu-tree-workload 1\n# c\nvocabulary 3\n").find(
              "w.txt:3: tree workload: expected the header line 'name ...', got 'vocabulary 3'") == 0);
    CHECK(error("taihu-tree-workload 1\nname t\nvocabulary x\n").find("w.txt:3:") == 0);
    // Tree lines start at line 7.
    CHECK(error(with_header("1 2\n")).find("w.txt:7: tree workload: tree 0: the last vertex must be the root") == 0);
    CHECK(error(with_header("2 -1 -1\n")).find("w.txt:7: tree workload: tree 0: vertex 1 has parent -1") == 0);
    CHECK(error(with_header("0 2 -1\n")).find("w.txt:7: tree workload: tree 0: vertex 0 has parent 0; parents must "
                                              "come after their children") == 0);
    CHECK(error(with_header("1 2 x -1\n")).find("w.txt:7: tree workload: column 5: parent 'x' is not an integer") ==
          0);
    CHECK(error(with_header("\n")).find("w.txt:7: tree workload: tree 0: empty parent line") == 0);
    CHECK(error(with_header("1 2 -1\n1 2\n")).find("w.txt:8: tree workload: tree 0: 2 tokens for 3 vertices") == 0);
    CHECK(error(with_header("1 2 -1\n1 2 10\n")).find(
              "w.txt:8: tree workload: tree 0, vertex 2: token 10 is outside [-1, 10)") == 0);
    CHECK(error(with_header("1 2 -1\n1 2 3\n0 5 1\n")).find(
              "w.txt:9: tree workload: tree 0, vertex 1: label 5 is outside [-1, 5)") == 0);
    CHECK(error(with_header("1 2 -1\n1 2 3\n")).find("w.txt:9: tree workload: unexpected end of file, expected "
                                                     "tree 0's label line") == 0);
    CHECK(error(with_header(ok + "1 -1\n")).find("w.txt:10: tree workload: text after the 1 trees") == 0);
    CHECK(error(with_header(ok, 1, 4)).find("w.txt: the trees have 3 vertices in all, but the header declares 4") ==
          0);
    // Trailing blank lines and CRLF line ends are accepted.
    CHECK(parse_tree_workload(with_header("1 2 -1\r\n1 2 3\r\n0 1 2\r\n\n")).trees.size() == 1);
  }

  TEST_CASE("real SST train as a workload") {
    const auto path = testing::shared_data_dir() / "sst" / "train.txt";
    if (!std::filesystem::exists(path)) {
      MESSAGE("SST data not found at " << path.string() << "; skipped (set TAIHU_DATA_DIR)");
      return;
    }
    const TreeBank bank = read_bracket_trees(path, VocabularyOptions{});
    const TreeWorkload w = treebank_workload(bank, "sst-train");
    CHECK(w.vocabulary_size == 18281);
    CHECK(w.num_classes == 5);
    CHECK(w.num_vertices() == 318582);
    // SST trees are binary with leaves before their parents in post-order,
    // so they can be written as parents and come back identical.
    CHECK(parse_tree_workload(to_text(w)).trees == bank.trees);
  }
}
