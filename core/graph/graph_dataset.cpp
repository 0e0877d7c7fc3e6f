#include "core/graph/graph_dataset.hpp"

#include <algorithm>
#include <system_error>

#include "core/common/check.hpp"
#include "core/common/error.hpp"
#include "core/common/random.hpp"
#include "core/graph/bracket_tree_reader.hpp"
#include "core/graph/dag_generator.hpp"
#include "core/graph/expression_tree.hpp"
#include "core/graph/text_reader.hpp"
#include "core/graph/tree_generators.hpp"

namespace taihu {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view shared_data_hint =
    "The SST and PTB files ship in the project's shared data folder (../shared/data, see its README.md); "
    "set `dir` in [data] to the folder that holds them";

struct SplitFiles {
  fs::path train, dev, test;  // dev may be empty
};

fs::path existing_file(const config::Section& data, const fs::path& dir, std::string_view key,
                       std::string_view fallback, std::string_view what) {
  const fs::path name = data.get_or<fs::path>(key, fs::path(std::string(fallback)));
  const fs::path path = dir / name;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    raise<DataError>("{} file {} not found (key `{}` in [data], relative to dir = {}). {}.", what, path.string(),
                     key, dir.string(), shared_data_hint);
  return path;
}

SplitFiles split_files(const config::Document& doc, const config::Section& data, std::string_view what,
                       std::string_view train, std::string_view dev, std::string_view test) {
  if (!data.has("dir"))
    throw data.error("dir", fmt::format("required for source = {}: the folder with its files. {}", data.get<std::string>("source"),
                                        shared_data_hint));
  const fs::path dir = doc.resolve(data.get<fs::path>("dir"));
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    raise<DataError>("{} folder {} (`dir` in [data]) does not exist. {}.", what, dir.string(), shared_data_hint);
  SplitFiles files;
  files.train = existing_file(data, dir, "train", train, what);
  if (!dev.empty() || data.has("dev")) files.dev = existing_file(data, dir, "dev", dev, what);
  files.test = existing_file(data, dir, "test", test, what);
  return files;
}

VocabularyOptions vocabulary_options(const config::Section& data) {
  VocabularyOptions options;
  options.min_count = data.get_or<int64_t>("min_count", 1);
  options.max_size = data.get_or<int64_t>("max_vocabulary", 0);
  if (options.min_count < 1) throw data.error("min_count", "must be at least 1");
  if (options.max_size < 0) throw data.error("max_vocabulary", "must be >= 0 (0 = no limit)");
  return options;
}

void apply_limit(std::vector<InputGraph>& graphs, const config::Section& data, std::string_view key) {
  const auto limit = data.get_or<int64_t>(key, 0);
  if (limit < 0) throw data.error(key, "must be >= 0 (0 = all)");
  if (limit > 0 && static_cast<size_t>(limit) < graphs.size()) graphs.resize(static_cast<size_t>(limit));
}

void load_sst(GraphDataset& out, const config::Document& doc, const config::Section& data, const GraphLimits& limits) {
  const auto files = split_files(doc, data, "SST", "train.txt", "dev.txt", "test.txt");
  out.num_classes = data.get_or<int32_t>("classes", 5);
  if (out.num_classes < 1) throw data.error("classes", fmt::format("must be at least 1, got {}", out.num_classes));
  const TreeLimits tree_limits{out.num_classes, limits.max_children, limits.model};
  TreeBank bank = read_bracket_trees(files.train, vocabulary_options(data), tree_limits);
  out.train = std::move(bank.trees);
  out.vocabulary = std::move(bank.vocabulary);
  out.dev = read_bracket_trees(files.dev, out.vocabulary, tree_limits);
  out.test = read_bracket_trees(files.test, out.vocabulary, tree_limits);
  out.vocabulary_size = out.vocabulary.size();
}

void load_ptb(GraphDataset& out, const config::Document& doc, const config::Section& data) {
  const auto files = split_files(doc, data, "PTB", "test.txt", "", "valid.txt");
  const std::string layout = data.get_choice("layout", {"sentences", "chunks"}, "sentences");
  const auto chunk_length = data.get_or<int32_t>("chunk_length", 35);
  if (chunk_length < 1) throw data.error("chunk_length", "must be at least 1");
  TextCorpus train = read_text_corpus(files.train, vocabulary_options(data));
  out.vocabulary = std::move(train.vocabulary);
  const int32_t eos = out.vocabulary.id(end_of_sentence_token);
  auto to_graphs = [&](const TextCorpus& corpus) {
    std::vector<InputGraph> graphs;
    if (layout == "chunks") return chunk_chains(corpus.flattened(), chunk_length);
    graphs.reserve(corpus.sentences.size());
    for (const auto& sentence : corpus.sentences) graphs.push_back(sentence_chain(sentence, eos));
    return graphs;
  };
  out.train = to_graphs(train);
  if (!files.dev.empty()) out.dev = to_graphs(read_text_corpus(files.dev, out.vocabulary));
  out.test = to_graphs(read_text_corpus(files.test, out.vocabulary));
  out.vocabulary_size = out.vocabulary.size();
  out.num_classes = out.vocabulary_size;
  out.language_model = true;
}

struct GeneratedSizes {
  int64_t train, dev, test;
};

GeneratedSizes generated_sizes(const config::Section& data, int64_t train, int64_t dev, int64_t test) {
  GeneratedSizes sizes{data.get_or<int64_t>("train_size", train), data.get_or<int64_t>("dev_size", dev),
                       data.get_or<int64_t>("test_size", test)};
  if (sizes.train < 1) throw data.error("train_size", "must be at least 1");
  if (sizes.dev < 0) throw data.error("dev_size", "must be >= 0");
  if (sizes.test < 1) throw data.error("test_size", "must be at least 1");
  return sizes;
}

// Fills the train/dev/test splits of a generated source, each drawn from its
// own seeded stream ("<name>/train", ...), with `one(rng)` graphs.
template <class Generate>
void generate_splits(GraphDataset& out, const GeneratedSizes& sizes, uint64_t seed, std::string_view name,
                     Generate&& one) {
  auto split = [&](int64_t n, std::string_view part) {
    Rng rng(derive_seed(seed, fmt::format("{}/{}", name, part)));
    std::vector<InputGraph> graphs;
    graphs.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) graphs.push_back(one(rng));
    return graphs;
  };
  out.train = split(sizes.train, "train");
  out.dev = split(sizes.dev, "dev");
  out.test = split(sizes.test, "test");
}

void load_expression(GraphDataset& out, const config::Section& data, uint64_t seed) {
  const auto sizes = generated_sizes(data, 4000, 500, 1000);
  ExpressionTreeOptions options;
  options.modulus = data.get_or<int32_t>("classes", 10);
  options.min_leaves = data.get_or<int32_t>("min_leaves", 2);
  options.max_leaves = data.get_or<int32_t>("max_leaves", 12);
  if (options.modulus < 2) throw data.error("classes", "must be at least 2");
  if (options.min_leaves < 1 || options.max_leaves < options.min_leaves)
    throw data.error("max_leaves", "needs 1 <= min_leaves <= max_leaves");
  generate_splits(out, sizes, seed, "expression", [&](Rng& rng) { return random_expression_tree(rng, options).graph; });
  out.vocabulary_size = expression_vocabulary_size;
  out.num_classes = options.modulus;
}

void load_sst_like(GraphDataset& out, const config::Section& data, uint64_t seed) {
  const auto sizes = generated_sizes(data, 8544, 1101, 2210);
  RandomTreeOptions options;
  options.vocabulary_size = data.get_or<int32_t>("vocabulary", 20000);
  options.num_classes = data.get_or<int32_t>("classes", 5);
  if (options.vocabulary_size < 1) throw data.error("vocabulary", "must be at least 1");
  if (options.num_classes < 2) throw data.error("classes", "must be at least 2");
  generate_splits(out, sizes, seed, "sst-like", [&](Rng& rng) { return sst_like_tree(rng, options); });
  out.vocabulary_size = options.vocabulary_size;
  out.num_classes = options.num_classes;
}

void load_dag(GraphDataset& out, const config::Section& data, uint64_t seed) {
  const auto sizes = generated_sizes(data, 4000, 500, 1000);
  RandomDagOptions options;
  options.classes = data.get_or<int32_t>("classes", options.classes);
  options.vocabulary = data.get_or<int32_t>("vocabulary", options.vocabulary);
  options.min_vertices = data.get_or<int32_t>("min_vertices", options.min_vertices);
  options.max_vertices = data.get_or<int32_t>("max_vertices", options.max_vertices);
  options.max_children = data.get_or<int32_t>("max_children", options.max_children);
  if (options.classes < 2) throw data.error("classes", "must be at least 2");
  if (options.vocabulary < 1) throw data.error("vocabulary", "must be at least 1");
  if (options.min_vertices < 1 || options.max_vertices < options.min_vertices)
    throw data.error("max_vertices", "needs 1 <= min_vertices <= max_vertices");
  if (options.max_children < 0) throw data.error("max_children", "must be >= 0");
  generate_splits(out, sizes, seed, "dag", [&](Rng& rng) { return random_dag(rng, options); });
  out.vocabulary_size = options.vocabulary;
  out.num_classes = options.classes;
}

// Every vertex of a handed-over split within the data set's ranges and the
// model's arity: what the file readers check as they read.
void check_memory_split(const std::vector<InputGraph>& graphs, std::string_view split, const GraphDataset& data,
                        const GraphLimits& limits) {
  for (size_t i = 0; i < graphs.size(); ++i)
    for (int32_t v = 0; v < graphs[i].num_vertices(); ++v) {
      const auto where = [&] { return fmt::format("{} graph {}, vertex {}", split, i, v); };
      const int32_t label = graphs[i].label(v), token = graphs[i].token(v);
      if (label != InputGraph::none && (label < 0 || label >= data.num_classes))
        raise<DataError>("{}: label {} is outside [0, {})", where(), label, data.num_classes);
      if (token != InputGraph::none && (token < 0 || token >= data.vocabulary_size))
        raise<DataError>("{}: token {} is outside the vocabulary [0, {})", where(), token, data.vocabulary_size);
      if (limits.max_children > 0 && graphs[i].arity(v) > limits.max_children)
        raise<DataError>("{}: {} children; {} takes at most {}", where(), graphs[i].arity(v), limits.model,
                         limits.max_children);
    }
}

void load_memory(GraphDataset& out, const config::Section& data, const GraphDataset* memory,
                 const GraphLimits& limits) {
  if (memory == nullptr)
    throw data.error("source", "memory takes graphs handed over by the process that trains "
                               "(taihu.Trainer(data=taihu.GraphData(...)) in Python); this process has none");
  out = *memory;
  out.source = "memory";
  if (out.num_classes < 1 || out.vocabulary_size < 1)
    raise<DataError>("graphs in memory: {} classes and a vocabulary of {}; both must be at least 1", out.num_classes,
                     out.vocabulary_size);
  check_memory_split(out.train, "train", out, limits);
  check_memory_split(out.dev, "dev", out, limits);
  check_memory_split(out.test, "test", out, limits);
  if (out.test.empty()) raise<DataError>("graphs in memory: the test split holds no graphs");
}

}  // namespace

int64_t GraphDataset::train_vertices() const {
  int64_t n = 0;
  for (const auto& g : train) n += g.num_vertices();
  return n;
}

InputGraph sentence_chain(std::span<const int32_t> sentence, int32_t eos) {
  InputGraph graph;
  const auto n = static_cast<int32_t>(sentence.size());
  graph.reserve(n, n);
  for (int32_t t = 0; t < n; ++t) {
    const int32_t input = t == 0 ? eos : sentence[static_cast<size_t>(t) - 1];
    const int32_t previous = t - 1;
    graph.add_vertex(t == 0 ? std::span<const int32_t>() : std::span<const int32_t>(&previous, 1),
                     sentence[static_cast<size_t>(t)], input);
  }
  return graph;
}

std::vector<InputGraph> chunk_chains(std::span<const int32_t> stream, int32_t length) {
  require<Error>(length >= 1, "chunk length must be at least 1, got {}", length);
  std::vector<InputGraph> chains;
  const auto usable = static_cast<int64_t>(stream.size()) - 1;  // the last token is only a label
  for (int64_t start = 0; start + length <= usable; start += length) {
    InputGraph graph;
    graph.reserve(length, length);
    for (int32_t t = 0; t < length; ++t) {
      const int32_t previous = t - 1;
      graph.add_vertex(t == 0 ? std::span<const int32_t>() : std::span<const int32_t>(&previous, 1),
                       stream[static_cast<size_t>(start + t + 1)], stream[static_cast<size_t>(start + t)]);
    }
    chains.push_back(std::move(graph));
  }
  return chains;
}

GraphDataset load_graph_dataset(const config::Document& doc, const config::Section& data, uint64_t seed,
                                const GraphLimits& limits, const GraphDataset* memory) {
  GraphDataset out;
  if (!data.has("source")) throw data.error("source", "required: sst, ptb, expression, sst-like, dag or memory");
  out.source = data.get_choice("source", {"sst", "ptb", "expression", "sst-like", "dag", "memory"}, "sst");
  if (memory != nullptr && out.source != "memory")
    throw data.error("source", fmt::format("is {}, but graphs were handed over in memory: leave it out or set it to "
                                           "memory",
                                           out.source));
  if (out.source == "memory")
    load_memory(out, data, memory, limits);
  else if (out.source == "sst")
    load_sst(out, doc, data, limits);
  else if (out.source == "ptb")
    load_ptb(out, doc, data);
  else if (out.source == "expression")
    load_expression(out, data, seed);
  else if (out.source == "dag")
    load_dag(out, data, seed);
  else
    load_sst_like(out, data, seed);
  apply_limit(out.train, data, "limit_train");
  apply_limit(out.dev, data, "limit_dev");
  apply_limit(out.test, data, "limit_test");
  if (out.train.empty())
    raise<DataError>("the {} training set ([data] in {}) holds no samples", out.source, doc.path().string());
  return out;
}

}  // namespace taihu
