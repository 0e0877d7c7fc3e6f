#include "devices/sw26010/layout_runs.hpp"

#include <map>
#include <string>

namespace taihu::sw26010 {

namespace {

bool elementwise(const std::string& type) { return type == "ReLU"; }

// Blobs joined through elementwise layers: a ReLU's bottom and top are one
// tensor as far as layout goes.
class BlobClasses {
 public:
  std::size_t of(const Blob* b) {
    auto [it, added] = ids_.emplace(b, parent_.size());
    if (added) parent_.push_back(it->second);
    return find(it->second);
  }
  void join(const Blob* a, const Blob* b) { parent_[of(a)] = of(b); }
  std::size_t size() const { return parent_.size(); }

 private:
  std::size_t find(std::size_t i) {
    while (parent_[i] != i) i = parent_[i] = parent_[parent_[i]];
    return i;
  }
  std::map<const Blob*, std::size_t> ids_;
  std::vector<std::size_t> parent_;
};

}  // namespace

std::vector<LayerLayouts> implicit_runs(const Net& net, const ImplicitThroughout& implicit_throughout) {
  const std::size_t n = net.num_layers();
  BlobClasses classes;
  for (std::size_t i = 0; i < n; ++i) {
    for (const Blob* b : net.layer_bottoms(i)) classes.of(b);
    for (const Blob* b : net.layer_tops(i)) classes.of(b);
    if (elementwise(net.layer(i).type()) && !net.layer_bottoms(i).empty() && !net.layer_tops(i).empty())
      classes.join(net.layer_bottoms(i)[0], net.layer_tops(i)[0]);
  }
  // Per class: how many layers write it, how many read it, and whether all of
  // them run implicitly throughout (through bottom 0 / top 0: a convolution's only ones).
  struct Use {
    int writers = 0, readers = 0;
    bool all_implicit = true;
  };
  std::vector<Use> uses(classes.size());
  std::vector<bool> implicit(n);
  for (std::size_t i = 0; i < n; ++i) implicit[i] = implicit_throughout(i);
  for (std::size_t i = 0; i < n; ++i) {
    if (elementwise(net.layer(i).type())) continue;
    const auto& bottoms = net.layer_bottoms(i);
    const auto& tops = net.layer_tops(i);
    for (std::size_t k = 0; k < bottoms.size(); ++k) {
      Use& u = uses[classes.of(bottoms[k])];
      ++u.readers;
      u.all_implicit = u.all_implicit && implicit[i] && k == 0;
    }
    for (std::size_t k = 0; k < tops.size(); ++k) {
      Use& u = uses[classes.of(tops[k])];
      ++u.writers;
      u.all_implicit = u.all_implicit && implicit[i] && k == 0;
    }
  }
  auto stays_implicit = [&](const Blob* b) {
    const Use& u = uses[classes.of(b)];
    return u.writers == 1 && u.readers > 0 && u.all_implicit;
  };
  std::vector<LayerLayouts> layouts(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (!net.layer_bottoms(i).empty()) layouts[i].bottom_implicit = stays_implicit(net.layer_bottoms(i)[0]);
    if (!net.layer_tops(i).empty()) layouts[i].top_implicit = stays_implicit(net.layer_tops(i)[0]);
  }
  return layouts;
}

}  // namespace taihu::sw26010
