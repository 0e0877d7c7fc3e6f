#include "core/data/batch_plan.hpp"

#include <algorithm>
#include <numeric>

#include "core/common/check.hpp"
#include "core/common/random.hpp"

namespace taihu {

BatchPlan::BatchPlan(std::shared_ptr<const Dataset> dataset, BatchOptions options)
    : dataset_(std::move(dataset)), options_(options) {
  require<DataError>(dataset_ != nullptr, "a batch plan needs a data set");
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
}

std::vector<int64_t> BatchPlan::order(int64_t epoch) const {
  std::vector<int64_t> indices(static_cast<size_t>(dataset_->size()));
  std::iota(indices.begin(), indices.end(), int64_t{0});
  if (!options_.shuffle) return indices;
  uint64_t state = options_.seed ^ (static_cast<uint64_t>(epoch) * 0x9e3779b97f4a7c15ULL);
  Rng rng(splitmix64(state));
  for (size_t i = indices.size(); i > 1; --i) std::swap(indices[i - 1], indices[rng.below(i)]);
  return indices;
}

BatchPlan::Rows BatchPlan::rows(int64_t batch) const {
  const int64_t whole = std::min(options_.batch_size, dataset_->size() - batch * options_.batch_size);
  const int64_t parts = options_.shard_count, part = options_.shard_index;
  Rows r;
  r.begin = batch * options_.batch_size + part * (whole / parts) + std::min(part, whole % parts);
  r.count = whole / parts + (part < whole % parts ? 1 : 0);
  return r;
}

void BatchPlan::shape(Tensor& data, Tensor& labels, int64_t count) const {
  std::vector<int64_t> dims{count};
  dims.insert(dims.end(), sample_shape_.dims().begin(), sample_shape_.dims().end());
  data.reshape(Shape(std::move(dims)));
  labels.reshape(Shape{count});
}

uint64_t BatchPlan::draw(int64_t epoch, int64_t index) const {
  if (!options_.augment) return 0;
  uint64_t state = options_.seed ^ 0x6a09e667f3bcc909ULL;
  state = splitmix64(state) ^ static_cast<uint64_t>(epoch);
  state = splitmix64(state) ^ static_cast<uint64_t>(index);
  const uint64_t key = splitmix64(state);
  return key == 0 ? 1 : key;  // 0 means "no augmentation"
}

void BatchPlan::fill(int64_t epoch, const std::vector<int64_t>& order, Rows rows, int64_t first, int64_t last,
                     float* data, float* labels) const {
  const auto n = static_cast<int64_t>(order.size());
  for (int64_t i = first; i < last; ++i) {
    float* out = data + i * sample_count_;
    const int64_t position = rows.begin + i;
    int label = -1;
    // An unreadable sample: the next readable one in the epoch's order.
    for (int64_t step = 0; label < 0 && step < n; ++step) {
      const int64_t index = order[static_cast<size_t>((position + step) % n)];
      label = dataset_->read_sample(index, out, draw(epoch, index));
    }
    require<DataError>(label >= 0, "no sample of the data set ({} samples) can be read", n);
    labels[i] = static_cast<float>(label);
  }
}

void BatchPlan::fill(int64_t epoch, const std::vector<int64_t>& order, int64_t batch, Tensor& data,
                     Tensor& labels) const {
  const Rows r = rows(batch);
  shape(data, labels, r.count);
  fill(epoch, order, r, 0, r.count, data.ptr(), labels.ptr());
}

}  // namespace taihu
