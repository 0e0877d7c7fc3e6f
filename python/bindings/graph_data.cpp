// taihu.GraphData: a dynamic model's input graphs from Python lists, for
// [data] source = memory (core/graph/graph_dataset.hpp). Trees are nested
// (label, token) leaves and (label, [children]) nodes, or PTB bracket strings
// as SST writes them; sequences are lists of tokens, trained as language-model
// chains as PTB's sentences are. Tokens are strings (the vocabulary is built
// from the training split, by frequency, as for SST) or integer ids.
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <variant>

#include "core/common/check.hpp"
#include "core/common/error.hpp"
#include "core/graph/bracket_tree_reader.hpp"
#include "core/graph/graph_dataset.hpp"
#include "core/graph/text_reader.hpp"
#include "core/graph/vocabulary.hpp"
#include "python/bindings/bindings.hpp"

namespace taihu::python {

namespace py = pybind11;

namespace {

// Token ids: counted on the training split first (builder), then mapped
// through the frozen vocabulary; or integer ids as given.
class TokenIds {
 public:
  explicit TokenIds(VocabularyOptions options) : options_(options) {}

  // Pass 1 (training split, string tokens): counts; returns a placeholder id.
  bool counting() const { return counting_; }
  void freeze() {
    if (saw_strings_) vocabulary_ = builder_.build(options_);
    counting_ = false;
  }

  int32_t id(py::handle token, const std::string& where) {
    if (py::isinstance<py::str>(token)) return id(token.cast<std::string>(), where);
    if (py::isinstance<py::int_>(token) && !py::isinstance<py::bool_>(token)) {
      require<ConfigError>(!saw_strings_, "{}: an integer token among string tokens; use one kind", where);
      saw_ints_ = true;
      const auto v = token.cast<int64_t>();
      require<ConfigError>(v >= 0 && v < (int64_t{1} << 30), "{}: token id {} is negative or too large", where, v);
      max_id_ = std::max(max_id_, static_cast<int32_t>(v));
      return static_cast<int32_t>(v);
    }
    raise<ConfigError>("{}: a token is a str or an int, not {}", where, py::str(py::type::of(token)).cast<std::string>());
  }

  int32_t id(const std::string& token, const std::string& where) {
    require<ConfigError>(!saw_ints_, "{}: a string token among integer tokens; use one kind", where);
    saw_strings_ = true;
    if (counting_) {
      builder_.add(token);
      return 0;
    }
    return vocabulary_.id(token);
  }

  bool strings() const { return saw_strings_; }
  Vocabulary& vocabulary() { return vocabulary_; }
  int32_t size() const { return saw_strings_ ? vocabulary_.size() : max_id_ + 1; }

 private:
  VocabularyOptions options_;
  bool counting_ = true;
  bool saw_strings_ = false, saw_ints_ = false;
  int32_t max_id_ = 0;
  VocabularyBuilder builder_;
  Vocabulary vocabulary_;
};

int32_t label_of(py::handle label, const std::string& where, int32_t& max_label) {
  if (label.is_none()) return InputGraph::none;
  require<ConfigError>(py::isinstance<py::int_>(label) && !py::isinstance<py::bool_>(label),
                       "{}: a label is an int or None, not {}", where, py::str(py::type::of(label)).cast<std::string>());
  const auto v = label.cast<int64_t>();
  require<ConfigError>(v >= 0 && v < (int64_t{1} << 30), "{}: label {} is negative or too large", where, v);
  max_label = std::max(max_label, static_cast<int32_t>(v));
  return static_cast<int32_t>(v);
}

struct Converter {
  TokenIds tokens;
  int32_t max_label = -1;

  // A (label, token) leaf or (label, [children]) node; its vertex id.
  int32_t add_node(InputGraph& graph, py::handle node, const std::string& where, int depth) {
    require<ConfigError>(depth < 100000, "{}: the tree is deeper than 100000 levels", where);
    require<ConfigError>((py::isinstance<py::tuple>(node) || py::isinstance<py::list>(node)) && py::len(node) == 2,
                         "{}: a tree node is (label, token) or (label, [children]), not {}", where,
                         py::repr(node).cast<std::string>().substr(0, 80));
    const py::sequence pair = py::reinterpret_borrow<py::sequence>(node);
    const int32_t label = label_of(pair[0], where, max_label);
    const py::object second = pair[1];
    if (!py::isinstance<py::list>(second) && !py::isinstance<py::tuple>(second))
      return graph.add_leaf(tokens.id(second, where), label);
    std::vector<int32_t> children;
    const py::sequence kids = py::reinterpret_borrow<py::sequence>(second);
    require<ConfigError>(py::len(kids) > 0, "{}: a node with an empty list of children (a leaf has a token)", where);
    for (size_t c = 0; c < py::len(kids); ++c)
      children.push_back(add_node(graph, kids[c], fmt::format("{}.{}", where, c), depth + 1));
    return graph.add_vertex(children, label);
  }

  InputGraph tree(py::handle sample, const std::string& where) {
    if (py::isinstance<py::str>(sample)) {
      const std::string text = sample.cast<std::string>();
      const TokenMapper map = [this, &where](std::string_view t) { return tokens.id(std::string(t), where); };
      InputGraph graph = parse_bracket_tree(text, map, where);
      for (int32_t l : graph.labels()) max_label = std::max(max_label, l);
      return graph;
    }
    InputGraph graph;
    add_node(graph, sample, where, 0);
    return graph;
  }

  InputGraph sequence(py::handle sample, const std::string& where) {
    require<ConfigError>(py::isinstance<py::list>(sample) || py::isinstance<py::tuple>(sample),
                         "{}: a sequence is a list of tokens", where);
    std::vector<int32_t> ids;
    for (py::handle t : sample) {
      require<ConfigError>(py::isinstance<py::str>(t), "{}: sequences take str tokens", where);
      ids.push_back(tokens.id(t, where));
    }
    require<ConfigError>(!ids.empty(), "{}: an empty sequence", where);
    if (tokens.counting()) {
      tokens.id(std::string(end_of_sentence_token), where);
      return {};
    }
    return sentence_chain(ids, tokens.vocabulary().id(end_of_sentence_token));
  }

  std::vector<InputGraph> split(const py::object& samples, const char* name, bool sequences) {
    std::vector<InputGraph> graphs;
    if (samples.is_none()) return graphs;
    size_t i = 0;
    for (py::handle sample : samples) {
      const std::string where = fmt::format("{}[{}]", name, i++);
      graphs.push_back(sequences ? sequence(sample, where) : tree(sample, where));
    }
    return graphs;
  }
};

struct GraphData {
  std::shared_ptr<const GraphDataset> data;
};

GraphData make_graph_data(const py::object& train, const py::object& test, const py::object& dev,
                          const std::string& kind, int32_t classes, int64_t min_count, int64_t max_vocabulary) {
  require<ConfigError>(kind == "trees" || kind == "sequences", "GraphData: kind is 'trees' or 'sequences', not '{}'",
                       kind);
  require<ConfigError>(min_count >= 1 && max_vocabulary >= 0,
                       "GraphData: min_count must be >= 1 and max_vocabulary >= 0 (0: no limit)");
  const bool sequences = kind == "sequences";
  Converter convert{TokenIds(VocabularyOptions{min_count, max_vocabulary})};
  convert.split(train, "train", sequences);  // counts the training tokens
  convert.tokens.freeze();
  auto out = std::make_shared<GraphDataset>();
  out->source = "memory";
  out->train = convert.split(train, "train", sequences);
  out->dev = convert.split(dev, "dev", sequences);
  out->test = convert.split(test, "test", sequences);
  require<ConfigError>(!out->train.empty() && !out->test.empty(), "GraphData: train and test need graphs");
  if (convert.tokens.strings()) out->vocabulary = convert.tokens.vocabulary();
  out->vocabulary_size = convert.tokens.size();
  out->language_model = sequences;
  if (sequences) {
    out->num_classes = out->vocabulary_size;
  } else {
    require<ConfigError>(convert.max_label >= 0, "GraphData: no tree carries a label");
    require<ConfigError>(classes == 0 || classes > convert.max_label,
                         "GraphData: classes = {}, but a tree has label {}", classes, convert.max_label);
    out->num_classes = classes > 0 ? classes : convert.max_label + 1;
  }
  return GraphData{std::move(out)};
}

}  // namespace

std::shared_ptr<const GraphDataset> graph_dataset(const py::object& data) {
  if (data.is_none()) return nullptr;
  return data.cast<const GraphData&>().data;
}

void bind_graph_data(py::module_& m) {
  py::class_<GraphData>(m, "GraphData",
                        "A dynamic model's input graphs from Python: trees as nested (label, token) leaves and "
                        "(label, [children]) nodes or bracket strings; sequences as lists of str tokens "
                        "(language-model chains). Pass it as taihu.Trainer(config, data=...).")
      .def(py::init(&make_graph_data), py::arg("train"), py::arg("test"), py::arg("dev") = py::none(),
           py::arg("kind") = "trees", py::arg("classes") = 0, py::arg("min_count") = 1, py::arg("max_vocabulary") = 0)
      .def_property_readonly("vocabulary", [](const GraphData& g) { return g.data->vocabulary.tokens(); },
                             "The tokens by id (string tokens only; id 0 is <unk>).")
      .def_property_readonly("classes", [](const GraphData& g) { return g.data->num_classes; })
      .def_property_readonly("vocabulary_size", [](const GraphData& g) { return g.data->vocabulary_size; })
      .def_property_readonly("sizes", [](const GraphData& g) {
        return py::make_tuple(g.data->train.size(), g.data->dev.size(), g.data->test.size());
      }, "(train, dev, test) graph counts.");
}

}  // namespace taihu::python
