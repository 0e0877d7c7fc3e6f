#include "core/train/replica.hpp"

#include "core/cavs/model_config.hpp"
#include "core/common/check.hpp"
#include "core/graph/graph_dataset.hpp"
#include "core/train/graph_replica.hpp"
#include "core/train/net_replica.hpp"

namespace taihu {

bool is_dynamic_model(const config::Document& doc) { return doc.find("model") != nullptr; }

TrainSettings read_replica_settings(const config::Document& doc) {
  if (!is_dynamic_model(doc)) return TrainSettings::read(doc.root());
  // The GraphTrainer's defaults (core/train/graph_trainer.hpp).
  TrainSettings defaults;
  defaults.epochs = 10;
  defaults.batch_size = 25;
  defaults.test_batch_size = 256;
  defaults.display = 50;
  return TrainSettings::read(doc.root(), defaults);
}

ReplicaData ReplicaData::read(const config::Document& doc, const TrainSettings& settings,
                              const GraphDataset* memory) {
  ReplicaData data;
  if (is_dynamic_model(doc)) {
    // A typo in the model first, before the data load; the data are checked against the model as they are read.
    const GraphLimits limits = cavs::model_limits(doc.section("model"));
    data.graphs =
        std::make_shared<const GraphDataset>(load_graph_dataset(doc, doc.section("data"), settings.seed, limits, memory));
    return data;
  }
  require<ConfigError>(memory == nullptr, "graphs in memory are input to a dynamic model ([model]), not to a net");
  data.config = DataConfig::read(doc, doc.section("data"));
  data.train = make_dataset(data.config, Split::train);
  data.test = make_dataset(data.config, Split::test);
  return data;
}

std::unique_ptr<Replica> build_replica(const config::Document& doc, const TrainSettings& settings,
                                       const ReplicaData& data, int rank, int ranks,
                                       const ReplicaServices& services) {
  if (data.graphs) return std::make_unique<GraphReplica>(doc, settings, data, rank, ranks, services.runner);
  return std::make_unique<NetReplica>(doc, settings, data, rank, ranks, services);
}

}  // namespace taihu
