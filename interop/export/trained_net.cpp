#include "interop/export/trained_net.hpp"

#include <fmt/format.h>

#include "core/common/error.hpp"
#include "core/train/checkpoint.hpp"

namespace taihu::interop {

std::unique_ptr<Net> load_trained_net(const std::filesystem::path& net_config, const std::filesystem::path& checkpoint,
                                      int64_t batch) {
  const Checkpoint c = load_checkpoint(checkpoint);
  auto net = std::make_unique<Net>(
      std::make_shared<config::Document>(config::Document::parse_file(net_config)), batch, c.seed);
  const auto params = net->params();
  if (params.size() != c.params.size())
    throw ConfigError(fmt::format("checkpoint '{}' has {} parameter blobs, net '{}' ({}) has {}: not a checkpoint of "
                                  "this net",
                                  checkpoint.string(), c.params.size(), net->name(), net_config.string(),
                                  params.size()));
  for (size_t i = 0; i < params.size(); ++i) {
    const NamedTensor& saved = c.params[i];
    if (saved.name != params[i]->name)
      throw ConfigError(fmt::format("checkpoint '{}': parameter {} is '{}', net {} has '{}' there",
                                    checkpoint.string(), i, saved.name, net_config.string(), params[i]->name));
    if (Shape(saved.dims) != params[i]->blob->data().shape())
      throw ConfigError(fmt::format("checkpoint '{}': parameter '{}' has shape {}, net {} expects {}",
                                    checkpoint.string(), saved.name, Shape(saved.dims).str(), net_config.string(),
                                    params[i]->blob->data().shape().str()));
    saved.restore_into(params[i]->blob->data());
  }
  net->set_phase(Phase::test);
  return net;
}

}  // namespace taihu::interop
