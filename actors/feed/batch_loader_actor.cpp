#include "actors/feed/batch_loader_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <deque>
#include <optional>

#include "actors/exception_reason.hpp"
#include "core/common/check.hpp"

namespace taihu::feed {
namespace {

enum class Stage : std::uint8_t {
  free,
  filling,  // its chunks are out, for the current generation
  stale,    // its chunks are out, but nobody wants the batch any more
  ready,    // published; the consumer holds it until SlotReleased
};

struct Slot {
  Stage stage = Stage::free;
  std::shared_ptr<msg::BatchBuffer> buffer;  // allocated when first given a batch
  std::int64_t epoch = 0;
  std::int64_t batch = 0;
  std::int64_t rows = 0;
  int chunks_out = 0;
  std::optional<FeedFailure> failure;  // of the first chunk that failed
};

struct LoaderState {
  static inline const char* name = "taihu.batch_loader";

  LoaderSpec spec;
  std::vector<Slot> slots;
  std::deque<std::uint32_t> filling;  // the current generation's filling slots, in batch order
  std::uint64_t generation = 0;
  bool loading = false;  // from LoadFrom until a failure
  // The next batch to give a slot, and its epoch's order.
  std::int64_t epoch = 0;
  std::int64_t batch = 0;
  std::shared_ptr<const std::vector<std::int64_t>> order;
  std::int64_t order_epoch = -1;
};

using Self = BatchLoaderActor::stateful_pointer<LoaderState>;

void fill_free_slots(Self self);

// The filling slots will not be published: those complete already are free,
// the others free once their chunks are back.
void drop_filling(Self self) {
  auto& s = self->state;
  for (const std::uint32_t k : s.filling) {
    Slot& slot = s.slots[k];
    slot.stage = slot.chunks_out == 0 ? Stage::free : Stage::stale;
  }
  s.filling.clear();
}

// Publishes the complete slots at the front of the batch order; a failed
// one ends the loading (the batches before it are out already).
void publish_in_order(Self self) {
  auto& s = self->state;
  while (!s.filling.empty() && s.slots[s.filling.front()].chunks_out == 0) {
    const std::uint32_t k = s.filling.front();
    s.filling.pop_front();
    Slot& slot = s.slots[k];
    if (slot.failure) {
      s.spec.ready->fail(s.generation, std::move(*slot.failure));
      slot.stage = Stage::free;
      s.loading = false;
      return drop_filling(self);
    }
    slot.stage = Stage::ready;
    s.spec.ready->publish(s.generation, ReadyBatch{k, slot.epoch, slot.batch, slot.rows, slot.buffer});
  }
}

void chunk_back(Self self, std::uint32_t k, std::optional<FeedFailure> failure) {
  auto& s = self->state;
  Slot& slot = s.slots[k];
  if (failure && !slot.failure) slot.failure = std::move(failure);
  if (--slot.chunks_out > 0) return;
  if (slot.stage == Stage::filling) return publish_in_order(self);
  slot.stage = Stage::free;  // stale: its memory is the loader's again
  fill_free_slots(self);
}

void decode(Self self, std::uint32_t k, msg::DecodeRows job) {
  self->request(self->state.spec.decoders->pick(), caf::infinite, std::move(job))
      .then(
          [=](msg::RowsDecoded& r) {
            std::optional<FeedFailure> failure;
            if (!r.failure.empty()) failure = FeedFailure{std::move(r.failure), r.data_error};
            chunk_back(self, k, std::move(failure));
          },
          // The decoder died (killed): the batch cannot be complete.
          [=](caf::error& e) {
            chunk_back(self, k, FeedFailure{"a batch decoder failed: " + reason_text(self->system(), e), false});
          });
}

std::shared_ptr<msg::BatchBuffer> allocate(const BatchPlan& plan) {
  // Batch 0 is the fullest: its shard has the most rows any batch gives it.
  const auto rows = static_cast<std::size_t>(plan.rows(0).count);
  auto buffer = std::make_shared<msg::BatchBuffer>();
  buffer->data.resize(rows * static_cast<std::size_t>(plan.sample_shape().count()));
  buffer->labels.resize(rows);
  return buffer;
}

// Gives the next batch to free slot k: its chunks go to the decoders.
void give(Self self, std::uint32_t k) {
  auto& s = self->state;
  const BatchPlan& plan = *s.spec.plan;
  if (s.order_epoch != s.epoch) {
    s.order = std::make_shared<const std::vector<std::int64_t>>(plan.order(s.epoch));
    s.order_epoch = s.epoch;
  }
  Slot& slot = s.slots[k];
  if (!slot.buffer) slot.buffer = allocate(plan);
  const BatchPlan::Rows rows = plan.rows(s.batch);
  const std::int64_t chunks = chunks_for(rows.count, s.spec.decoders->size());
  slot.stage = Stage::filling;
  slot.epoch = s.epoch;
  slot.batch = s.batch;
  slot.rows = rows.count;
  slot.chunks_out = static_cast<int>(chunks);
  slot.failure.reset();
  s.filling.push_back(k);
  auto work = std::make_shared<const msg::BatchWork>(msg::BatchWork{
      s.spec.plan, s.order, slot.buffer, s.epoch, rows, s.spec.ready->current(), s.generation});
  // Balanced: the first rows % chunks chunks take one row more.
  const std::int64_t share = rows.count / chunks, extra = rows.count % chunks;
  for (std::int64_t c = 0, first = 0; c < chunks; ++c) {
    const std::int64_t last = first + share + (c < extra ? 1 : 0);
    decode(self, k, msg::DecodeRows{work, first, last});
    first = last;
  }
  if (++s.batch == plan.batches_per_epoch()) {
    ++s.epoch;
    s.batch = 0;
  }
}

void fill_free_slots(Self self) {
  auto& s = self->state;
  while (s.loading) {
    const auto free =
        std::find_if(s.slots.begin(), s.slots.end(), [](const Slot& x) { return x.stage == Stage::free; });
    if (free == s.slots.end()) return;  // back-pressure: the consumer holds or awaits them all
    give(self, static_cast<std::uint32_t>(free - s.slots.begin()));
  }
}

BatchLoaderActor::behavior_type batch_loader(Self self, LoaderSpec spec) {
  auto& st = self->state;
  st.slots.resize(static_cast<std::size_t>(std::max(1, spec.slots)));
  st.spec = std::move(spec);
  self->set_exception_handler(exception_reason);
  // However the loader ends, a consumer waiting for it must not wait on.
  self->attach_functor([ready = st.spec.ready, system = &self->system()](const caf::error& reason) {
    ready->loader_stopped(reason_text(*system, reason));
  });
  return {
      [=](const msg::LoadFrom& from) {
        auto& s = self->state;
        require(from.generation > s.generation, "batch loader: generation {} after {}", from.generation, s.generation);
        s.generation = from.generation;
        for (Slot& slot : s.slots)
          if (slot.stage == Stage::ready) slot.stage = Stage::free;  // the consumer dropped them
        drop_filling(self);
        const bool at_end = from.batch >= s.spec.plan->batches_per_epoch();
        s.epoch = at_end ? from.epoch + 1 : from.epoch;
        s.batch = at_end ? 0 : from.batch;
        s.loading = true;
        fill_free_slots(self);
      },
      [=](const msg::SlotReleased& released) {
        auto& s = self->state;
        require(released.slot < s.slots.size(), "batch loader: slot {} of {} released", released.slot, s.slots.size());
        // An older generation's: LoadFrom has taken the slot back already.
        if (released.generation != s.generation) return;
        Slot& slot = s.slots[released.slot];
        if (slot.stage == Stage::ready) slot.stage = Stage::free;
        fill_free_slots(self);
      },
  };
}

}  // namespace

std::int64_t chunks_for(std::int64_t rows, std::size_t decoders) {
  const auto most = std::max<std::int64_t>(1, static_cast<std::int64_t>(decoders));
  return std::clamp<std::int64_t>(rows / min_chunk_rows, 1, most);
}

BatchLoaderActor spawn_batch_loader(caf::actor_system& system, LoaderSpec spec) {
  require(spec.plan && spec.ready && spec.decoders, "spawn_batch_loader: incomplete spec");
  return system.spawn(batch_loader, std::move(spec));
}

}  // namespace taihu::feed
