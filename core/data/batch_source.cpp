#include "core/data/batch_source.hpp"

#include <chrono>

#include "core/common/check.hpp"

namespace taihu {

BatchSource::BatchSource(std::shared_ptr<const Dataset> dataset, BatchOptions options)
    : plan_(std::move(dataset), options) {
  slots_.resize(static_cast<size_t>(options.prefetch));
}

BatchSource::~BatchSource() { stop_worker(); }

void BatchSource::fill(int64_t epoch, int64_t batch, EpochOrder& order, Tensor& data, Tensor& labels) const {
  if (order.epoch != epoch) {
    order.indices = plan_.order(epoch);
    order.epoch = epoch;
  }
  plan_.fill(epoch, order.indices, batch, data, labels);
}

bool BatchSource::next(Tensor& data, Tensor& labels) {
  if (batch_ >= plan_.batches_per_epoch()) {
    ++epoch_;
    batch_ = 0;
    return false;
  }
  if (plan_.options().prefetch == 0) {
    fill(epoch_, batch_, order_, data, labels);
    ++batch_;
    return true;
  }
  if (!worker_.joinable()) start_worker();
  size_t index = 0;
  {
    std::unique_lock lock(mutex_);
    if (ready_.empty() && !failure_) {
      const auto start = std::chrono::steady_clock::now();
      produced_.wait(lock, [&] { return !ready_.empty() || failure_; });
      wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
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
  // Epochs numbered from 1 in messages, as the log numbers them.
  require<DataError>(epoch >= 0 && batch >= 0 && batch <= plan_.batches_per_epoch(),
                     "cannot seek to batch {} of epoch {}: an epoch has batches 0..{}", batch, epoch + 1,
                     plan_.batches_per_epoch());
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
  if (batch >= plan_.batches_per_epoch()) {
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
    if (++batch == plan_.batches_per_epoch()) {
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
