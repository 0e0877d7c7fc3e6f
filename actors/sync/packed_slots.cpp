#include "actors/sync/packed_slots.hpp"

#include "collectives/algorithms.hpp"
#include "core/common/check.hpp"

namespace taihu::sync {

PackedSlots::PackedSlots(int ranks, std::size_t capacity)
    : capacity_(capacity), slots_(static_cast<std::size_t>(ranks)) {
  require(ranks >= 1 && capacity > 0, "packed slots: {} ranks of {} words", ranks, capacity);
}

collectives::Schedule PackedSlots::ring(int ranks, std::size_t capacity) {
  const std::vector<std::size_t> counts(static_cast<std::size_t>(ranks), capacity);
  return collectives::ring_allgatherv(counts);
}

void PackedSlots::put(int rank, msg::TensorPayload message) {
  require(message.size() <= capacity_, "packed slots: a message of {} words for slots of {}", message.size(),
          capacity_);
  slots_[static_cast<std::size_t>(rank)] = std::move(message);
}

void PackedSlots::clear() { slots_.assign(slots_.size(), msg::TensorPayload{}); }

std::size_t PackedSlots::slot(collectives::Range range) const {
  const std::size_t index = range.offset / capacity_;
  require(range.offset % capacity_ == 0 && range.length == capacity_ && index < slots_.size(),
          "packed slots: range [{}, +{}) is not one of {} slots of {} words", range.offset, range.length,
          slots_.size(), capacity_);
  return index;
}

}  // namespace taihu::sync
