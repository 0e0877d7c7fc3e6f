#include "core/layers/layer.hpp"

#include <fmt/format.h>

#include "core/common/excerpt.hpp"

namespace taihu {

namespace {
const config::Section& empty_section() {
  static const config::Section empty("layer", "", config::Location{});
  return empty;
}
}  // namespace

Layer::Layer(const LayerSpec& spec)
    : name_(spec.name), options_(spec.options ? spec.options : &empty_section()) {}

Blob& Layer::add_param(const std::string& suffix, const Shape& shape, bool learnable) {
  Param p;
  // Parameters are what a net built for its shapes still holds (a conversion
  // writes them): they get storage even then (ShapesOnly).
  const ShapesOnly with_storage(false);
  p.blob = std::make_shared<Blob>(shape);
  p.name = name_ + "/" + suffix;
  p.learnable = learnable;
  p.lr_mult = learnable ? options_->get_or<float>(suffix + "_lr_mult", 1.0f) : 0.0f;
  p.decay_mult = learnable ? options_->get_or<float>(suffix + "_decay_mult", 1.0f) : 0.0f;
  params_.push_back(std::move(p));
  return *params_.back().blob;
}

void Layer::shape_error(const std::string& message) const {
  throw ShapeError(fmt::format("layer '{}' ({}): {}", excerpt(name_), type(), message));
}

}  // namespace taihu
