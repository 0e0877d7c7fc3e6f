#pragma once
// Builds a single layer from a config snippet, for tests:
//   auto l = make_layer("Convolution", "num_output = 4\nkernel_size = 3");

#include <memory>
#include <string>

#include "core/config/config.hpp"
#include "core/layers/registry.hpp"

namespace taihu::testing {

struct LayerFixture {
  std::shared_ptr<config::Document> doc;
  std::unique_ptr<Layer> layer;
  Layer* operator->() { return layer.get(); }
  Layer& operator*() { return *layer; }
};

inline LayerFixture make_layer(const std::string& type, const std::string& options = "",
                               uint64_t seed = 7) {
  LayerFixture f;
  f.doc = std::make_shared<config::Document>(
      config::Document::parse("[layer test]\n" + options + "\n", "test-layer.ini"));
  LayerSpec spec;
  spec.name = "test";
  spec.type = type;
  spec.options = f.doc->find("layer", "test");
  f.layer = LayerRegistry::instance().create(spec);
  f.layer->seed(seed);
  return f;
}

// Fills a blob's data with uniform values in [lo, hi).
inline void fill_uniform(Blob& blob, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Rng rng(seed);
  for (int64_t i = 0; i < blob.count(); ++i) blob.data()[i] = rng.uniform(lo, hi);
}

}  // namespace taihu::testing
