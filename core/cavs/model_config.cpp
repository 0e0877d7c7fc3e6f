#include "core/cavs/model_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>

#include "core/cavs/models/chain_lm.hpp"
#include "core/cavs/models/gated_graph.hpp"
#include "core/cavs/models/tree_fc.hpp"
#include "core/cavs/models/tree_gru.hpp"
#include "core/cavs/models/tree_lstm.hpp"
#include "core/common/check.hpp"
#include "core/common/random.hpp"

namespace taihu::cavs {
namespace {

using Builder = std::function<VertexFunction(const config::Section&, const GraphDataset&, uint64_t)>;

// A model type: how to build it, and the most children its F takes (-1: any),
// which build_model checks against the F it built.
struct ModelType {
  Builder build;
  int32_t max_arity;
};

int32_t positive(const config::Section& model, std::string_view key, int32_t fallback) {
  const auto value = model.get_or<int32_t>(key, fallback);
  if (value < 1) throw model.error(key, fmt::format("must be at least 1, got {}", value));
  return value;
}


// The keys every model reads; the defaults come from its options struct.
template <class Options>
Options common_options(const config::Section& model, const GraphDataset& data, uint64_t seed) {
  Options options;
  options.vocabulary = data.vocabulary_size;
  if constexpr (requires { options.classes; }) options.classes = data.num_classes;
  if constexpr (requires { options.embedding; }) options.embedding = positive(model, "embedding", options.embedding);
  options.hidden = positive(model, "hidden", options.hidden);
  options.embedding_scale = model.get_or<float>("embedding_scale", options.embedding_scale);
  options.seed = derive_seed(seed, "model");
  return options;
}

ChainLmOptions language_model_options(const config::Section& model, const GraphDataset& data, uint64_t seed) {
  if (!data.language_model)
    throw model.error("type", fmt::format("'{}' is a language model: it needs chains labelled with their next "
                                          "tokens ([data] source = ptb), not {}",
                                          model.get<std::string>("type"), data.source));
  return common_options<ChainLmOptions>(model, data, seed);
}

const std::map<std::string, ModelType, std::less<>>& builders() {
  static const std::map<std::string, ModelType, std::less<>> table{
      {"tree_lstm",
       {[](const config::Section& m, const GraphDataset& d, uint64_t s) {
          return make_binary_tree_lstm(common_options<TreeLstmOptions>(m, d, s));
        },
        2}},
      {"child_sum_tree_lstm",
       {[](const config::Section& m, const GraphDataset& d, uint64_t s) {
          return make_child_sum_tree_lstm(common_options<TreeLstmOptions>(m, d, s));
        },
        -1}},
      {"tree_gru",
       {[](const config::Section& m, const GraphDataset& d, uint64_t s) {
          return make_tree_gru(common_options<TreeGruOptions>(m, d, s));
        },
        2}},
      {"tree_fc",
       {[](const config::Section& m, const GraphDataset& d, uint64_t s) {
          return make_tree_fc(common_options<TreeFcOptions>(m, d, s));
        },
        2}},
      {"lstm",
       {[](const config::Section& m, const GraphDataset& d, uint64_t s) {
          return make_lstm_language_model(language_model_options(m, d, s));
        },
        1}},
      {"gru",
       {[](const config::Section& m, const GraphDataset& d, uint64_t s) {
          return make_gru_language_model(language_model_options(m, d, s));
        },
        1}},
      {"gated_graph",
       {[](const config::Section& m, const GraphDataset& d, uint64_t s) {
          return make_gated_graph_network(common_options<GatedGraphOptions>(m, d, s));
        },
        -1}},
  };
  return table;
}

}  // namespace

const std::vector<std::string>& model_types() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, builder] : builders()) out.push_back(name);
    return out;
  }();
  return names;
}

void check_model_type(const config::Section& model) {
  if (!model.has("type"))
    throw model.error("type", fmt::format("required: one of {}", fmt::join(model_types(), ", ")));
  const auto type = model.get<std::string>("type");
  if (builders().find(type) == builders().end())
    throw model.error("type", fmt::format("unknown model '{}'; known: {}", type, fmt::join(model_types(), ", ")));
}

GraphLimits model_limits(const config::Section& model) {
  check_model_type(model);
  const auto type = model.get<std::string>("type");
  const int32_t arity = builders().find(type)->second.max_arity;
  // A language model (arity 1) reads the chains its own source makes; on any
  // other source build_model says it needs that source, which helps more
  // than the first node with two children.
  if (arity == 1) return GraphLimits{0, fmt::format("model '{}'", type)};
  return GraphLimits{std::max(arity, 0), fmt::format("model '{}'", type)};
}

VertexFunction build_model(const config::Section& model, const GraphDataset& data, uint64_t seed) {
  check_model_type(model);
  const ModelType& type = builders().find(model.get<std::string>("type"))->second;
  VertexFunction f = type.build(model, data, seed);
  require(f.definition().options.max_arity == type.max_arity, "model '{}': its F takes {} children, its table entry says {}",
          model.get<std::string>("type"), f.definition().options.max_arity, type.max_arity);
  return f;
}

}  // namespace taihu::cavs
