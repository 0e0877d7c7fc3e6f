#include "core/layers/registry.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/common/excerpt.hpp"

namespace taihu {

LayerRegistry& LayerRegistry::instance() {
  static LayerRegistry registry;
  return registry;
}

void LayerRegistry::add(const std::string& type, Factory factory) {
  factories_.emplace_back(type, std::move(factory));
}

bool LayerRegistry::contains(const std::string& type) const {
  return std::any_of(factories_.begin(), factories_.end(),
                     [&](const auto& f) { return f.first == type; });
}

std::vector<std::string> LayerRegistry::types() const {
  std::vector<std::string> out;
  for (const auto& f : factories_) out.push_back(f.first);
  std::sort(out.begin(), out.end());
  return out;
}

std::unique_ptr<Layer> LayerRegistry::create(const LayerSpec& spec) const {
  for (const auto& [type, factory] : factories_)
    if (type == spec.type) return factory(spec);
  const auto where = spec.options ? spec.options->where().str() : std::string("<net>");
  throw ConfigError(fmt::format("{}: layer '{}' has unknown type '{}'; known types: {}", where,
                                excerpt(spec.name), excerpt(spec.type), fmt::join(types(), ", ")));
}

}  // namespace taihu
