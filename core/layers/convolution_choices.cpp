#include "core/layers/convolution_choices.hpp"

namespace taihu {

ConvolutionChoices& ConvolutionChoices::process() {
  static ConvolutionChoices choices;
  return choices;
}

std::optional<ConvolutionChoices::Decision> ConvolutionChoices::find(const std::string& key) const {
  std::lock_guard lock(mutex_);
  const auto it = decisions_.find(key);
  if (it == decisions_.end()) return std::nullopt;
  return it->second;
}

ConvolutionChoices::Decision ConvolutionChoices::decide(const std::string& key, double dnnl_seconds,
                                                        double im2col_seconds) {
  std::lock_guard lock(mutex_);
  // oneDNN keeps a tie: it is what auto would mostly have chosen.
  const Decision made{key, dnnl_seconds <= im2col_seconds, dnnl_seconds, im2col_seconds};
  return decisions_.emplace(key, made).first->second;
}

std::vector<ConvolutionChoices::Decision> ConvolutionChoices::decisions() const {
  std::lock_guard lock(mutex_);
  std::vector<Decision> all;
  for (const auto& [key, d] : decisions_) all.push_back(d);
  return all;
}

void ConvolutionChoices::adopt(const std::vector<std::pair<std::string, bool>>& decisions) {
  std::lock_guard lock(mutex_);
  for (const auto& [key, dnnl] : decisions) decisions_[key] = Decision{key, dnnl, 0.0, 0.0};
}

std::vector<std::pair<std::string, bool>> ConvolutionChoices::choices() const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::string, bool>> all;
  for (const auto& [key, d] : decisions_) all.emplace_back(key, d.dnnl);
  return all;
}

void ConvolutionChoices::clear() {
  std::lock_guard lock(mutex_);
  decisions_.clear();
}

}  // namespace taihu
