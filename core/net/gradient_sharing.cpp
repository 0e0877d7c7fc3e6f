#include "core/net/gradient_sharing.hpp"

#include <algorithm>
#include <limits>
#include <map>

namespace taihu {

namespace {

constexpr std::size_t none = std::numeric_limits<std::size_t>::max();

// A group's gradient is live from step `from` (the highest layer index that
// touches it: backward meets it first) down to step `to` (the lowest).
struct Lifetime {
  std::size_t group = 0;
  std::size_t from = none, to = none;
  int64_t floats = 0;  // its largest member's gradient
  bool touched() const { return from != none; }
  void touch(std::size_t step) {
    from = from == none ? step : std::max(from, step);
    to = to == none ? step : std::min(to, step);
  }
};

struct Buffer {
  int64_t floats = 0;
  std::size_t free_below = none;  // a group whose lifetime starts below this step may move in
  std::vector<std::size_t> groups;
};

}  // namespace

GradientSharing share_gradients(const std::vector<NetNode>& nodes, const std::vector<std::size_t>& step,
                                const std::vector<std::vector<Blob*>>& groups, const std::set<const Blob*>& keep) {
  std::map<const Blob*, std::size_t> group_of;
  std::vector<Lifetime> life(groups.size());
  std::vector<bool> kept(groups.size(), false), storage_less(groups.size(), false);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    life[g].group = g;
    for (Blob* b : groups[g]) {
      group_of[b] = g;
      life[g].floats = std::max(life[g].floats, b->diff().count());
      if (keep.count(b)) kept[g] = true;
      // A fused run's inside holds no storage at all, and needs none.
      if (b->shape_only()) storage_less[g] = true;
    }
  }
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (step[i] == none) continue;
    const NetNode& node = nodes[i];
    for (const Blob* t : node.top) life[group_of.at(t)].touch(step[i]);
    for (std::size_t k = 0; k < node.bottom.size(); ++k)
      if (node.propagate_down[k]) life[group_of.at(node.bottom[k])].touch(step[i]);
  }

  // Kept and untouched gradients are their own (allocated here if the net
  // held them back); the others take turns.
  std::vector<Lifetime> order;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (storage_less[g] || life[g].floats == 0) continue;
    if (!kept[g] && life[g].touched()) {
      order.push_back(life[g]);
    } else if (groups[g].front()->diff().ptr() == nullptr) {
      const Tensor own(Shape{life[g].floats});
      for (Blob* blob : groups[g]) blob->diff().use_storage_of(own);
    }
  }
  std::stable_sort(order.begin(), order.end(), [](const Lifetime& a, const Lifetime& b) {
    return a.from != b.from ? a.from > b.from : a.floats > b.floats;
  });
  // In backward order, each takes the smallest free buffer that holds it,
  // else grows the largest free one, else opens one.
  std::vector<Buffer> buffers;
  for (const Lifetime& l : order) {
    Buffer* fit = nullptr;
    Buffer* largest = nullptr;
    for (Buffer& b : buffers) {
      if (b.free_below == none || l.from >= b.free_below) continue;
      if (b.floats >= l.floats && (!fit || b.floats < fit->floats)) fit = &b;
      if (!largest || b.floats > largest->floats) largest = &b;
    }
    Buffer& chosen = fit ? *fit : largest ? *largest : buffers.emplace_back();
    chosen.floats = std::max(chosen.floats, l.floats);
    chosen.free_below = l.to;
    chosen.groups.push_back(l.group);
  }

  GradientSharing out;
  for (const Buffer& b : buffers) {
    const Tensor storage(Shape{b.floats});
    for (std::size_t g : b.groups) {
      out.floats_before += static_cast<double>(life[g].floats);
      for (Blob* blob : groups[g]) {
        blob->diff().use_storage_of(storage);
        ++out.blobs;
      }
    }
    out.floats_after += static_cast<double>(b.floats);
    ++out.buffers;
  }
  return out;
}

}  // namespace taihu
