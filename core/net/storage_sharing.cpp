#include "core/net/storage_sharing.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>

namespace taihu {

namespace {

constexpr std::size_t none = StepPlan::none;

// One tensor's worth of storage (a group's data or gradients) and the steps
// from its first use to its last.
struct Life {
  std::vector<Tensor*> tensors;
  bool value = false;
  bool kept = false;
  bool storage_less = false;
  int64_t floats = 0;  // the largest member's
  std::size_t first = none, last = none;
  bool touched() const { return first != none; }
  void touch(std::size_t step) {
    first = first == none ? step : std::min(first, step);
    last = last == none ? step : std::max(last, step);
  }
};

// Where a life's tensors lie in the arena the sharing ones take turns in.
struct Placement {
  const Life* life;
  int64_t offset, floats;  // floats: rounded up so that every offset keeps Tensor::alignment
};

int64_t aligned(int64_t floats) {
  constexpr auto unit = static_cast<int64_t>(Tensor::alignment / sizeof(float));
  return (floats + unit - 1) / unit * unit;
}

// One Life per group; `touch(life_of, i)` marks the steps of layer i.
template <typename Touch>
std::vector<Life> lives_of(const BlobGroups& groups, bool value, const SharingRequest& request, Touch touch) {
  std::vector<Life> lives(groups.size());
  std::map<const Blob*, Life*> life_of;
  const auto& keep = value ? request.keep_values : request.keep_gradients;
  const bool share = value ? request.share_values : request.share_gradients;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    Life& life = lives[g];
    life.value = value;
    for (Blob* b : groups[g]) {
      Tensor& t = value ? b->data() : b->diff();
      life.tensors.push_back(&t);
      life.floats = std::max(life.floats, t.count());
      life.kept = life.kept || !share || keep.count(b) != 0;
      life.storage_less = life.storage_less || request.storage_less.count(b) != 0;
      life_of[b] = &life;
    }
  }
  for (std::size_t i = 0; i < request.nodes->size(); ++i) touch(life_of, i);
  // A fused run's inside holds nothing at all, and needs nothing.
  std::erase_if(lives, [](const Life& life) { return life.storage_less || life.floats == 0; });
  return lives;
}

// Storage of its own for a life that takes no turns, for every member: what
// one of them holds already, else new.
void give_own_storage(const Life& life) {
  const Tensor* holder = nullptr;
  for (const Tensor* t : life.tensors)
    if (t->ptr() && t->count() == life.floats) holder = t;
  if (holder &&
      std::all_of(life.tensors.begin(), life.tensors.end(), [&](const Tensor* t) { return t->ptr() == holder->ptr(); }))
    return;
  std::optional<Tensor> fresh;
  if (!holder) fresh.emplace(Shape{life.floats});
  const Tensor& storage = holder ? *holder : *fresh;
  for (Tensor* t : life.tensors)
    if (t->ptr() != storage.ptr()) t->use_storage_of(storage);
}

}  // namespace

StorageSharing share_storage(const SharingRequest& request, std::vector<Tensor*>& shared) {
  const std::vector<NetNode>& nodes = *request.nodes;
  const StepPlan& steps = request.steps;
  std::vector<Life> lives = lives_of(*request.value_groups, true, request, [&](auto& life_of, std::size_t i) {
    for (const BlobVec* blobs : {&nodes[i].bottom, &nodes[i].top})
      for (const Blob* b : *blobs) life_of.at(b)->touch(steps.forward[i]);
    if (steps.backward[i] != none)
      for (const Blob* b : steps.backward_reads[i]) life_of.at(b)->touch(steps.backward[i]);
  });
  std::vector<Life> gradients = lives_of(*request.gradient_groups, false, request, [&](auto& life_of, std::size_t i) {
    if (steps.backward[i] == none) return;
    for (const Blob* t : nodes[i].top) life_of.at(t)->touch(steps.backward[i]);
    for (std::size_t k = 0; k < nodes[i].bottom.size(); ++k)
      if (nodes[i].propagate_down[k]) life_of.at(nodes[i].bottom[k])->touch(steps.backward[i]);
  });
  std::move(gradients.begin(), gradients.end(), std::back_inserter(lives));

  // Kept and untouched tensors have their own storage; the others take turns.
  std::vector<const Life*> order;
  for (const Life& life : lives) {
    if (!life.kept && life.touched())
      order.push_back(&life);
    else
      give_own_storage(life);
  }
  // Largest first, each at the lowest offset of the smallest gap that holds
  // it between the tensors placed so far whose lifetimes overlap its own,
  // else after them ("greedy by size", Pisarchyk and Lee 2020, "Efficient
  // Memory Management for Deep Neural Net Inference"): ResNet-50's arena
  // comes within a few percent of the most its tensors ever hold at once,
  // where buffers of one tensor at a time took a third more.
  std::stable_sort(order.begin(), order.end(), [](const Life* a, const Life* b) { return a->floats > b->floats; });
  std::vector<Placement> placed;
  int64_t arena = 0;
  for (const Life* life : order) {
    const int64_t floats = aligned(life->floats);
    std::vector<const Placement*> overlapping;
    for (const Placement& p : placed)
      if (p.life->first <= life->last && life->first <= p.life->last) overlapping.push_back(&p);
    std::sort(overlapping.begin(), overlapping.end(),
              [](const Placement* a, const Placement* b) { return a->offset < b->offset; });
    int64_t at = 0, best = -1, best_gap = 0;
    for (const Placement* p : overlapping) {
      const int64_t gap = p->offset - at;
      if (gap >= floats && (best < 0 || gap < best_gap)) best = at, best_gap = gap;
      at = std::max(at, p->offset + p->floats);
    }
    placed.push_back({life, best >= 0 ? best : at, floats});
    arena = std::max(arena, placed.back().offset + floats);
  }

  StorageSharing out;
  shared.clear();
  if (placed.empty()) return out;
  // Unzeroed: every tensor in it is written before it is read (a shared
  // value or gradient holds nothing defined between passes).
  const Tensor storage = Tensor::uninitialized(Shape{arena});
  for (const Placement& p : placed) {
    out.floats_before += static_cast<double>(p.life->floats);
    for (Tensor* t : p.life->tensors) {
      t->use_storage_of(storage, p.offset);
      shared.push_back(t);
      ++(p.life->value ? out.values : out.gradients);
    }
  }
  out.floats_after = static_cast<double>(arena);
  std::map<std::size_t, double> change;  // the lower bound: the most they hold at one step
  for (const Placement& p : placed) {
    change[p.life->first] += static_cast<double>(p.floats);
    change[p.life->last + 1] -= static_cast<double>(p.floats);
  }
  double live = 0.0;
  for (const auto& [step, delta] : change) out.floats_at_once = std::max(out.floats_at_once, live += delta);
  return out;
}

}  // namespace taihu
