#include "core/data/batch_source.hpp"

#include <algorithm>
#include <numeric>

#include "core/common/check.hpp"
#include "core/common/random.hpp"

namespace taihu {

BatchSource::BatchSource(std::shared_ptr<const Dataset> dataset, BatchOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  require<DataError>(dataset_ != nullptr, "BatchSource needs a data set");
  require<DataError>(options_.batch_size > 0, "batch size must be positive, got {}", options_.batch_size);
  require<DataError>(options_.prefetch >= 0, "prefetch must not be negative, got {}", options_.prefetch);
  require<DataError>(options_.shard_count >= 1 && options_.shard_index >= 0 &&
                         options_.shard_index < options_.shard_count,
                     "shard {} of {} does not exist", options_.shard_index, options_.shard_count);
  sample_shape_ = dataset_->sample_shape();
  sample_count_ = sample_shape_.count();
  const int64_t samples = dataset_->size();
  batches_per_epoch_ = options_.drop_last ? samples / options_.batch_size
                                          : (samples + options_.batch_size - 1) / options_.batch_size;
  require<DataError>(batches_per_epoch_ > 0, "the data set has {} samples: not enough for one batch of {}{}", samples,
                     options_.batch_size, options_.drop_last ? " with drop_last" : "");
  slots_.resize(static_cast<size_t>(options_.prefetch));
}

BatchSource::~BatchSource() { stop_worker(); }

std::vector<int64_t> BatchSource::order(int64_t epoch) const {
  std::vector<int64_t> indices(static_cast<size_t>(dataset_->size()));
  std::iota(indices.begin(), indices.end(), int64_t{0});
  if (!options_.shuffle) return indices;
  uint64_t state = options_.seed ^ (static_cast<uint64_t>(epoch) * 0x9e3779b97f4a7c15ULL);
  Rng rng(splitmix64(state));
  for (size_t i = indices.size(); i > 1; --i) std::swap(indices[i - 1], indices[rng.below(i)]);
  return indices;
}

void BatchSource::fill(int64_t epoch, int64_t batch, EpochOrder& order, Tensor& data, Tensor& labels) const {
  if (order.epoch != epoch) {
    order.indices = this->order(epoch);
    order.epoch = epoch;
  }
  const int64_t whole = std::min(options_.batch_size, dataset_->size() - batch * options_.batch_size);
  const int64_t parts = options_.shard_count, part = options_.shard_index;
  const int64_t begin = batch * options_.batch_size + part * (whole / parts) + std::min(part, whole % parts);
  const int64_t count = whole / parts + (part < whole % parts ? 1 : 0);
  std::vector<int64_t> dims{count};
  dims.insert(dims.end(), sample_shape_.dims().begin(), sample_shape_.dims().end());
  data.reshape(Shape(std::move(dims)));
  labels.reshape(Shape{count});
  for (int64_t i = 0; i < count; ++i) {
    const int64_t index = order.indices[static_cast<size_t>(begin + i)];
    labels[i] = static_cast<float>(dataset_->label(index));
    dataset_->sample(index, data.ptr() + i * sample_count_);
  }
}

bool BatchSource::next(Tensor& data, Tensor& labels) {
  if (batch_ >= batches_per_epoch_) {
    ++epoch_;
    batch_ = 0;
    return false;
  }
  if (options_.prefetch == 0) {
    fill(epoch_, batch_, order_, data, labels);
    ++batch_;
    return true;
  }
  if (!worker_.joinable()) start_worker();
  size_t index = 0;
  {
    std::unique_lock lock(mutex_);
    produced_.wait(lock, [&] { return !ready_.empty() || failure_; });
    // Batches made before a failure are still delivered, as in synchronous mode.
    if (ready_.empty()) std::rethrow_exception(failure_);
    index = ready_.front();
    ready_.pop_front();
  }
  Slot& slot = slots_[index];
  require<Error>(slot.epoch == epoch_ && slot.batch == batch_,
                 "internal error: prefetched batch {} of epoch {} arrived for batch {} of epoch {}", slot.batch,
                 slot.epoch, batch_, epoch_);
  data.reshape(slot.data.shape());
  data.copy_from(slot.data);
  labels.reshape(slot.labels.shape());
  labels.copy_from(slot.labels);
  {
    std::lock_guard lock(mutex_);
    free_.push_back(index);
  }
  consumed_.notify_one();
  ++batch_;
  return true;
}

void BatchSource::seek(int64_t epoch, int64_t batch) {
  require<DataError>(epoch >= 0 && batch >= 0 && batch <= batches_per_epoch_,
                     "cannot seek to batch {} of epoch {}: an epoch has batches 0..{}", batch, epoch,
                     batches_per_epoch_);
  stop_worker();
  epoch_ = epoch;
  batch_ = batch;
}

void BatchSource::start_worker() {
  ready_.clear();
  free_.clear();
  for (size_t i = 0; i < slots_.size(); ++i) free_.push_back(i);
  stopping_ = false;
  failure_ = nullptr;
  // The worker runs ahead across epoch boundaries; next() handles the "end of
  // epoch" answer by itself.
  int64_t epoch = epoch_, batch = batch_;
  if (batch >= batches_per_epoch_) {
    ++epoch;
    batch = 0;
  }
  worker_ = std::thread([this, epoch, batch] { produce(epoch, batch); });
}

void BatchSource::stop_worker() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  consumed_.notify_all();
  worker_.join();
}

void BatchSource::produce(int64_t epoch, int64_t batch) {
  EpochOrder order;
  for (;;) {
    size_t index = 0;
    {
      std::unique_lock lock(mutex_);
      consumed_.wait(lock, [&] { return stopping_ || !free_.empty(); });
      if (stopping_) return;
      index = free_.back();
      free_.pop_back();
    }
    Slot& slot = slots_[index];
    try {
      fill(epoch, batch, order, slot.data, slot.labels);
    } catch (...) {
      std::lock_guard lock(mutex_);
      failure_ = std::current_exception();
      produced_.notify_all();
      return;
    }
    slot.epoch = epoch;
    slot.batch = batch;
    if (++batch == batches_per_epoch_) {
      ++epoch;
      batch = 0;
    }
    {
      std::lock_guard lock(mutex_);
      ready_.push_back(index);
    }
    produced_.notify_one();
  }
}

}  // namespace taihu
