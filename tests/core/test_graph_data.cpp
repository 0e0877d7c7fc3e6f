#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <functional>
#include <map>
#include <string>

#include "core/common/error.hpp"
#include "core/graph/bracket_tree_reader.hpp"
#include "core/graph/bracket_tree_writer.hpp"
#include "core/graph/expression_tree.hpp"
#include "core/graph/input_graph.hpp"
#include "core/graph/text_reader.hpp"
#include "core/graph/tree_generators.hpp"
#include "core/graph/vocabulary.hpp"
#include "tests/support/shared_data.hpp"
#include "tests/support/error_message.hpp"

using namespace taihu;

namespace {

std::string error_of(auto&& f) { return taihu::testing::error_message<DataError>(f); }

std::filesystem::path data_dir() { return testing::shared_data_dir(); }

// Token texts in leaf order, to check what the reader cut out.
std::vector<std::string> leaf_tokens(std::string_view text) {
  std::vector<std::string> seen;
  parse_bracket_tree(text, [&](std::string_view token) {
    seen.emplace_back(token);
    return static_cast<int32_t>(seen.size() - 1);
  });
  return seen;
}

// Independent exact evaluation from the root down (small trees only).
int64_t exact_value(const InputGraph& g, int32_t v) {
  const auto children = g.children(v);
  if (children.empty()) return g.token(v);
  const int64_t a = exact_value(g, children[0]), b = exact_value(g, children[1]);
  return g.token(v) == expression_plus ? a + b : g.token(v) == expression_minus ? a - b : a * b;
}

}  // namespace

TEST_SUITE("graph data") {
  TEST_CASE("input graph: children before parents, heights, levels, roots") {
    InputGraph g;
    const int32_t a = g.add_leaf(5, 1), b = g.add_leaf(6, 2), c = g.add_leaf(7);
    const std::vector<int32_t> abc{a, b, c};
    const int32_t p = g.add_vertex(abc, 3);  // ternary node
    const std::vector<int32_t> pc{p, c};
    const int32_t r = g.add_vertex(pc, 4);  // DAG: c has two parents
    CHECK(g.num_vertices() == 5);
    CHECK(g.num_edges() == 5);
    CHECK(g.num_leaves() == 3);
    CHECK(g.max_arity() == 3);
    CHECK(g.height() == 2);
    CHECK(g.heights() == std::vector<int32_t>{0, 0, 0, 1, 2});
    CHECK(g.roots() == std::vector<int32_t>{r});
    CHECK(g.parent_counts() == std::vector<int32_t>{1, 1, 2, 1, 0});
    CHECK(g.levels() == std::vector<std::vector<int32_t>>{{0, 1, 2}, {3}, {4}});
    CHECK(g.label(c) == InputGraph::none);
    CHECK(g.token(p) == InputGraph::none);
    const auto order = g.topological_order();
    for (size_t i = 0; i < order.size(); ++i)
      for (int32_t child : g.children(order[i]))
        CHECK(std::find(order.begin(), order.end(), child) < order.begin() + static_cast<long>(i));
    const std::vector<int32_t> forward{7};
    CHECK(error_of([&] { g.add_vertex(forward); }).find("child 7") != std::string::npos);

    const std::vector<int32_t> tokens{4, 5, 6};
    const auto chain = InputGraph::chain(tokens);
    CHECK(chain.height() == 2);
    CHECK(chain.roots() == std::vector<int32_t>{2});
    CHECK(chain.token(1) == 5);
    CHECK(InputGraph{}.height() == -1);
  }

  TEST_CASE("bracket reader: labels, arity, tokens with U+00A0, brackets and slashes") {
    const std::string nbsp = "8\xC2\xA0" "1\\/2";
    const std::string text = "(3 (2 It) (4 (2 " + nbsp + ") (1 -LRB-) (0 a b)))";
    const auto tokens = leaf_tokens(text);
    CHECK(tokens == std::vector<std::string>{"It", nbsp, "-LRB-", "a b"});

    VocabularyBuilder builder;
    for (const auto& t : tokens) builder.add(t);
    const auto vocab = builder.build();
    const auto tree = parse_bracket_tree(text, [&](std::string_view t) { return vocab.id(t); });
    CHECK(tree.num_vertices() == 6);
    CHECK(tree.num_leaves() == 4);
    CHECK(tree.height() == 2);
    CHECK(tree.max_arity() == 3);
    const int32_t root = tree.num_vertices() - 1;
    CHECK(tree.label(root) == 3);
    CHECK(tree.arity(root) == 2);
    const int32_t inner = tree.children(root)[1];
    CHECK(tree.label(inner) == 4);
    CHECK(tree.arity(inner) == 3);
    std::vector<int32_t> inner_labels;
    for (int32_t c : tree.children(inner)) inner_labels.push_back(tree.label(c));
    CHECK(inner_labels == std::vector<int32_t>{2, 1, 0});
    CHECK(vocab.token(tree.token(tree.children(inner)[0])) == nbsp);
    CHECK(tree.token(root) == InputGraph::none);
    CHECK(format_bracket_tree(tree, vocab) == text);

    // A single leaf is a tree; extra blanks between nodes are fine.
    CHECK(leaf_tokens("  (1 x)  ") == std::vector<std::string>{"x"});
    CHECK(parse_bracket_tree("(2   (1 x)\t(0 y) )", [](std::string_view) { return 0; }).num_vertices() == 3);
  }

  TEST_CASE("bracket reader: malformed input names line and column") {
    const TokenMapper zero = [](std::string_view) { return 0; };
    auto msg = [&](std::string_view text) { return error_of([&] { parse_bracket_tree(text, zero, "t.txt", 7); }); };
    CHECK(msg("(3 (2 a) (1 b)") == "t.txt:7:1: malformed bracket tree: '(' is never closed (unbalanced parentheses)");
    CHECK(msg("(3 (2 a) (1 b")  == "t.txt:7:10: malformed bracket tree: leaf '(' is never closed (unbalanced parentheses)");
    CHECK(msg("(3 (2 a)) (1 b))").find("t.txt:7:11: malformed bracket tree: unexpected text after the end") == 0);
    CHECK(msg("(3 (2 a)))").find("t.txt:7:10:") == 0);
    CHECK(msg("(3 (a) (1 b))") == "t.txt:7:5: malformed bracket tree: missing label: '(' at column 4 must be followed by an integer label");
    CHECK(msg("((2 a) (1 b))").find("t.txt:7:2: malformed bracket tree: missing label") == 0);
    CHECK(msg("(3 (2 a) (1))") == "t.txt:7:10: malformed bracket tree: empty node: label 1 has neither a token nor children");
    CHECK(msg("(3 (2 a) (1  ))") == "t.txt:7:10: malformed bracket tree: empty node: label 1 has an empty token");
    CHECK(msg("(3 (2 a) x)").find("t.txt:7:10: malformed bracket tree: expected '(' or ')'") == 0);
    CHECK(msg("(3x (2 a))").find("t.txt:7:3: malformed bracket tree: expected a space after the label") == 0);
    CHECK(msg("").find("t.txt:7:1: malformed bracket tree: empty input") == 0);
    CHECK(msg("2 a").find("t.txt:7:1: malformed bracket tree: expected '('") == 0);

    // In a multi-line text the line number is the tree's own.
    const std::string text = "(1 a)\n\n(2 (1 b) (0 c)\n(1 d)\n";
    const auto e = error_of([&] { parse_bracket_trees(text, VocabularyOptions{}, "f.txt"); });
    CHECK(e == "f.txt:3:1: malformed bracket tree: '(' is never closed (unbalanced parentheses)");
    CHECK(error_of([&] { read_bracket_trees("/nonexistent/trees.txt", VocabularyOptions{}); }) != "<no error>");
  }

  TEST_CASE("bracket reader: labels and nodes beyond the model's limits are named at their line and column") {
    // Before: found only at the first training step, as "sample N, vertex M", without file or line.
    const TokenMapper zero = [](std::string_view) { return 0; };
    const TreeLimits limits{5, 2, "model 'tree_lstm'"};
    auto msg = [&](std::string_view text) {
      return error_of([&] { parse_bracket_tree(text, zero, "train.txt", 12, limits); });
    };
    CHECK(msg("(3 (-5 a) (1 b))") == "train.txt:12:5: malformed bracket tree: label -5 is outside [0, 5) (classes = 5)");
    CHECK(msg("(5 (2 a) (1 b))") == "train.txt:12:2: malformed bracket tree: label 5 is outside [0, 5) (classes = 5)");
    CHECK(msg("(3 (2 a) (1 (0 b) (0 c) (4 d)))") ==
          "train.txt:12:10: malformed bracket tree: a node with 3 children; model 'tree_lstm' takes at most 2 per node");
    std::string wide = "(2";
    for (int i = 0; i < 1000; ++i) wide += " (1 x)";
    wide += ")";
    CHECK(msg(wide) == "train.txt:12:1: malformed bracket tree: a node with 1000 children; model 'tree_lstm' takes at "
                       "most 2 per node");
    // Within the limits, or without any: read as before.
    CHECK(parse_bracket_tree("(4 (0 a) (3 b))", zero, "t", 1, limits).num_vertices() == 3);
    CHECK(parse_bracket_tree(wide, zero).num_vertices() == 1001);
  }

  TEST_CASE("vocabulary: <unk> is 0, order by count, min count, max size, frozen lookups") {
    VocabularyBuilder builder;
    for (const char* t : {"b", "a", "c", "a", "b", "a", "d", "<unk>"}) builder.add(t);
    CHECK(builder.count("a") == 3);
    CHECK(builder.distinct() == 5);
    const auto all = builder.build();
    CHECK(all.tokens() == std::vector<std::string>{"<unk>", "a", "b", "c", "d"});
    CHECK(all.id("<unk>") == Vocabulary::unknown_id);
    CHECK(all.id("b") == 2);
    CHECK(all.id("zzz") == Vocabulary::unknown_id);
    CHECK(!all.contains("zzz"));
    const auto frequent = builder.build({.min_count = 2});
    CHECK(frequent.tokens() == std::vector<std::string>{"<unk>", "a", "b"});
    CHECK(frequent.id("c") == 0);
    const auto small = builder.build({.min_count = 1, .max_size = 3});
    CHECK(small.tokens() == std::vector<std::string>{"<unk>", "a", "b"});
    CHECK(builder.build({.min_count = 1, .max_size = 1}).size() == 1);
    const VocabularyBuilder moved = std::move(builder);
    CHECK(moved.build().tokens() == all.tokens());
    CHECK(moved.entry_token(0) == "b");  // entries in first-seen order

    // Trees: dev tokens missing from train become <unk>.
    const auto bank = parse_bracket_trees("(1 (2 x) (3 y))\n(0 (1 x) (2 z))\n", VocabularyOptions{});
    CHECK(bank.trees.size() == 2);
    CHECK(bank.vocabulary.size() == 4);
    CHECK(bank.vocabulary.token(bank.trees[0].token(0)) == "x");
    CHECK(bank.vocabulary.token(bank.trees[1].token(1)) == "z");
    const auto dev = parse_bracket_trees("(4 (2 y) (2 w))", bank.vocabulary);
    CHECK(dev[0].token(0) == bank.vocabulary.id("y"));
    CHECK(dev[0].token(1) == Vocabulary::unknown_id);
  }

  TEST_CASE("text reader: single-space tokens, blank lines skipped, <eos> appended") {
    const std::string text = " the cat sat \n the dog\n\n a\xC2\xA0" "b cat \n";
    const auto corpus = parse_text(text, VocabularyOptions{});
    REQUIRE(corpus.sentences.size() == 3);
    const auto& v = corpus.vocabulary;
    const int32_t eos = v.id(end_of_sentence_token);
    CHECK(eos == 1);  // ends every sentence, so it is the most frequent
    CHECK(corpus.sentences[0] == std::vector<int32_t>{v.id("the"), v.id("cat"), v.id("sat"), eos});
    CHECK(corpus.sentences[1] == std::vector<int32_t>{v.id("the"), v.id("dog"), eos});
    CHECK(corpus.sentences[2].size() == 3);  // the NBSP does not split "a b"
    CHECK(v.token(corpus.sentences[2][0]) == "a\xC2\xA0" "b");
    CHECK(corpus.num_tokens() == 10);
    CHECK(corpus.flattened().size() == 10);
    CHECK(corpus.flattened()[3] == eos);

    const auto test = parse_text("the bird\n", corpus.vocabulary);
    CHECK(test.sentences[0] == std::vector<int32_t>{v.id("the"), Vocabulary::unknown_id, eos});
    // <eos> survives a tiny max_size.
    CHECK(parse_text(text, VocabularyOptions{.max_size = 2}).vocabulary.tokens() ==
          std::vector<std::string>{"<unk>", "<eos>"});
  }

  TEST_CASE("SST files: counts, heights, labels and word types") {
    const auto dir = data_dir() / "sst";
    if (!std::filesystem::exists(dir / "train.txt")) {
      MESSAGE("SST data not found at " << dir.string() << "; skipped (set TAIHU_DATA_DIR)");
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    const auto train = read_bracket_trees(dir / "train.txt", VocabularyOptions{});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MESSAGE("SST train parsed in " << seconds * 1e3 << " ms (" << train.trees.size() / seconds << " trees/s)");
    CHECK(train.trees.size() == 8544);
    int64_t leaves = 0, vertices = 0, height_sum = 0;
    int32_t max_height = 0;
    std::map<int32_t, int64_t> roots;
    bool binary = true;
    for (const auto& t : train.trees) {
      leaves += t.num_leaves();
      vertices += t.num_vertices();
      const int32_t h = t.height();
      height_sum += h;
      max_height = std::max(max_height, h);
      ++roots[t.label(t.num_vertices() - 1)];
      binary = binary && t.max_arity() == 2 && t.roots().size() == 1;
    }
    CHECK(binary);
    CHECK(leaves == 163563);
    CHECK(vertices == 318582);
    CHECK(max_height == 29);
    CHECK(static_cast<double>(height_sum) / 8544 == doctest::Approx(9.83).epsilon(0.001));
    CHECK(roots == std::map<int32_t, int64_t>{{0, 1092}, {1, 2218}, {2, 1624}, {3, 2322}, {4, 1288}});
    CHECK(train.vocabulary.size() == 18280 + 1);
    CHECK(train.vocabulary.contains("8\xC2\xA0" "1\\/2"));
    CHECK(train.vocabulary.contains("-LRB-"));

    // Writing every tree back reproduces the file byte for byte.
    std::ifstream file(dir / "train.txt", std::ios::binary);
    std::string line;
    int64_t same = 0;
    for (size_t i = 0; std::getline(file, line) && i < train.trees.size(); ++i)
      same += format_bracket_tree(train.trees[i], train.vocabulary) == line;
    CHECK(same == 8544);

    const auto dev = read_bracket_trees(dir / "dev.txt", train.vocabulary);
    const auto test = read_bracket_trees(dir / "test.txt", train.vocabulary);
    CHECK(dev.size() == 1101);
    CHECK(test.size() == 2210);
    std::map<int32_t, int64_t> dev_roots;
    for (const auto& t : dev) ++dev_roots[t.label(t.num_vertices() - 1)];
    CHECK(dev_roots == std::map<int32_t, int64_t>{{0, 139}, {1, 289}, {2, 229}, {3, 279}, {4, 165}});
  }

  TEST_CASE("PTB valid: lines and tokens with <eos>") {
    const auto path = data_dir() / "ptb" / "valid.txt";
    if (!std::filesystem::exists(path)) {
      MESSAGE("PTB data not found at " << path.string() << "; skipped (set TAIHU_DATA_DIR)");
      return;
    }
    const auto start = std::chrono::steady_clock::now();
    const auto corpus = read_text_corpus(path, VocabularyOptions{});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MESSAGE("PTB valid read in " << seconds * 1e3 << " ms (" << corpus.num_tokens() / seconds << " tokens/s)");
    CHECK(corpus.sentences.size() == 3370);
    CHECK(corpus.num_tokens() == 73760);
    CHECK(corpus.vocabulary.size() == 6021 + 1);  // types used, <unk> among them, plus <eos>
    int64_t unknown = 0;
    for (const auto& s : corpus.sentences) unknown += std::count(s.begin(), s.end(), Vocabulary::unknown_id);
    CHECK(unknown == 3485);
    // A frozen vocabulary gives the same ids.
    const auto again = read_text_corpus(path, corpus.vocabulary);
    CHECK(again.sentences == corpus.sentences);
    // Words seen fewer than 5 times become <unk>; <eos> stays.
    const auto frequent = read_text_corpus(path, VocabularyOptions{.min_count = 5});
    CHECK(frequent.vocabulary.size() < corpus.vocabulary.size());
    CHECK(frequent.vocabulary.id(end_of_sentence_token) == 1);
    CHECK(frequent.num_tokens() == 73760);
  }

  TEST_CASE("generators: SST-like heights, complete trees, combs, determinism") {
    Rng rng(2026);
    int64_t height_sum = 0, leaf_sum = 0;
    int32_t max_height = 0;
    const int samples = 4000;
    for (int i = 0; i < samples; ++i) {
      const auto t = sst_like_tree(rng, {.vocabulary_size = 100, .num_classes = 5});
      REQUIRE(t.num_vertices() == 2 * t.num_leaves() - 1);
      REQUIRE(t.roots().size() == 1);
      height_sum += t.height();
      leaf_sum += t.num_leaves();
      max_height = std::max(max_height, t.height());
    }
    const double mean_height = static_cast<double>(height_sum) / samples;
    {
      Rng bias_rng(1);
      int64_t internal = 0, left_leaf = 0, right_leaf = 0;
      for (int i = 0; i < 2000; ++i) {
        const auto t = sst_like_tree(bias_rng);
        for (int32_t v = 0; v < t.num_vertices(); ++v) {
          if (t.is_leaf(v)) continue;
          ++internal;
          left_leaf += t.is_leaf(t.children(v)[0]);
          right_leaf += t.is_leaf(t.children(v)[1]);
        }
      }
      const double left = static_cast<double>(left_leaf) / internal, right = static_cast<double>(right_leaf) / internal;
      MESSAGE("SST-like: left child a leaf " << left << ", right " << right << " (SST train: 0.666, 0.389)");
      CHECK(left > right);
    }
    MESSAGE("SST-like: mean height " << mean_height << ", max " << max_height << ", mean leaves "
                                     << static_cast<double>(leaf_sum) / samples);
    CHECK(mean_height == doctest::Approx(9.83).epsilon(0.5 / 9.83));
    CHECK(static_cast<double>(leaf_sum) / samples == doctest::Approx(19.14).epsilon(0.03));

    Rng a(7), b(7), c(8);
    const auto ta = sst_like_tree(a, {.vocabulary_size = 50, .num_classes = 5});
    CHECK(ta == sst_like_tree(b, {.vocabulary_size = 50, .num_classes = 5}));
    bool differs = false;
    for (int i = 0; i < 5; ++i) differs = differs || !(sst_like_tree(c) == sst_like_tree(a));
    CHECK(differs);

    // Beta(alpha, alpha) is symmetric with variance 1 / (4 (2 alpha + 1)).
    Rng beta_rng(3);
    double sum = 0, sq = 0;
    for (int i = 0; i < 20000; ++i) {
      const double f = sample_beta(beta_rng, 0.25);
      REQUIRE((f >= 0.0 && f <= 1.0));
      sum += f;
      sq += (f - 0.5) * (f - 0.5);
    }
    CHECK(sum / 20000 == doctest::Approx(0.5).epsilon(0.02));
    CHECK(sq / 20000 == doctest::Approx(1.0 / 6.0).epsilon(0.03));

    const auto full = complete_binary_tree(7);
    CHECK(full.num_leaves() == 128);
    CHECK(full.num_vertices() == 255);
    CHECK(full.height() == 7);
    CHECK(full.levels().size() == 8);
    const auto levels = full.levels();
    for (size_t h = 0; h < levels.size(); ++h) CHECK(levels[h].size() == (128u >> h));
    CHECK(complete_binary_tree(0).num_vertices() == 1);

    // Long inputs: no recursion limit, still one root and 2n - 1 vertices.
    Rng long_rng(4);
    const auto big = random_binary_tree(long_rng, 200000);
    CHECK(big.num_vertices() == 399999);
    CHECK(big.roots().size() == 1);
    CHECK(big.max_arity() == 2);

    const auto comb = left_comb_tree(10);
    CHECK(comb.height() == 9);
    CHECK(comb.num_vertices() == 19);
  }

  TEST_CASE("expression trees: values by hand and against exact evaluation") {
    // (3 + 4) x (2 - 9) = -49 = 1 (mod 10)
    InputGraph g;
    const int32_t l3 = g.add_leaf(3), l4 = g.add_leaf(4), l2 = g.add_leaf(2), l9 = g.add_leaf(9);
    const std::vector<int32_t> s{l3, l4}, d{l2, l9};
    const int32_t sum = g.add_vertex(s, -1, expression_plus), diff = g.add_vertex(d, -1, expression_minus);
    const std::vector<int32_t> p{sum, diff};
    g.add_vertex(p, -1, expression_times);
    CHECK(evaluate_expression(g, 10) == std::vector<int32_t>{3, 4, 2, 9, 7, 3, 1});
    CHECK(evaluate_expression(g, 1000) == std::vector<int32_t>{3, 4, 2, 9, 7, 993, 951});

    Rng rng(11);
    int trees_checked = 0;
    for (int i = 0; i < 300; ++i) {
      const auto tree = random_expression_tree(rng, {.min_leaves = 1, .max_leaves = 8, .modulus = 7});
      const auto& t = tree.graph;
      for (int32_t v = 0; v < t.num_vertices(); ++v) {
        const int64_t exact = exact_value(t, v);
        REQUIRE(tree.values[v] == ((exact % 7) + 7) % 7);
        REQUIRE(t.label(v) == tree.values[v]);
        REQUIRE(t.token(v) >= 0);
        REQUIRE(t.token(v) < expression_vocabulary_size);
      }
      ++trees_checked;
    }
    CHECK(trees_checked == 300);
    Rng a(5), b(5);
    const auto ea = random_expression_tree(a), eb = random_expression_tree(b);
    CHECK(ea.graph == eb.graph);
    CHECK(ea.values == eb.values);
  }
}
