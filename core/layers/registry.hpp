#pragma once
// Maps layer type names ("Convolution") to factories. Each layer's .cpp
// registers itself with TAIHU_REGISTER_LAYER; the core library is linked whole
// so every registration runs.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/layers/layer.hpp"

namespace taihu {

class LayerRegistry {
 public:
  using Factory = std::function<std::unique_ptr<Layer>(const LayerSpec&)>;

  static LayerRegistry& instance();
  void add(const std::string& type, Factory factory);
  // Throws ConfigError listing the known types if `spec.type` is unknown.
  std::unique_ptr<Layer> create(const LayerSpec& spec) const;
  bool contains(const std::string& type) const;
  std::vector<std::string> types() const;

 private:
  std::vector<std::pair<std::string, Factory>> factories_;
};

namespace detail {
struct LayerRegistration {
  LayerRegistration(const char* type, LayerRegistry::Factory factory) {
    LayerRegistry::instance().add(type, std::move(factory));
  }
};
}  // namespace detail

}  // namespace taihu

#define TAIHU_REGISTER_LAYER(type_name, Class)                                           \
  static const ::taihu::detail::LayerRegistration taihu_layer_registration_##Class{      \
      type_name, [](const ::taihu::LayerSpec& spec) -> std::unique_ptr<::taihu::Layer> { \
        return std::make_unique<Class>(spec);                                            \
      }}
