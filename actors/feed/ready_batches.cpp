#include "actors/feed/ready_batches.hpp"

#include <chrono>
#include <limits>

#include "core/common/error.hpp"

namespace taihu::feed {
namespace {

// close()'s generation: restart() never reaches it, so nothing matches it.
constexpr std::uint64_t closed = std::numeric_limits<std::uint64_t>::max();

}  // namespace

ReadyBatches::ReadyBatches() : current_(std::make_shared<std::atomic<std::uint64_t>>(0)) {}

std::uint64_t ReadyBatches::restart() {
  std::lock_guard lock(mutex_);
  ++generation_;
  current_->store(generation_, std::memory_order_relaxed);
  ready_.clear();
  failure_.reset();
  return generation_;
}

void ReadyBatches::close() {
  std::lock_guard lock(mutex_);
  generation_ = closed;
  current_->store(closed, std::memory_order_relaxed);
  ready_.clear();
}

ReadyBatch ReadyBatches::take(double& waited) {
  std::unique_lock lock(mutex_);
  auto settled = [&] { return !ready_.empty() || failure_ || stopped_; };
  if (!settled()) {
    const auto start = std::chrono::steady_clock::now();
    changed_.wait(lock, settled);
    waited += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  if (!ready_.empty()) {
    ReadyBatch batch = std::move(ready_.front());
    ready_.pop_front();
    return batch;
  }
  if (failure_) {
    if (failure_->data) throw DataError(failure_->message);
    throw Error(failure_->message);
  }
  throw Error("batch loader stopped: " + *stopped_);
}

void ReadyBatches::publish(std::uint64_t generation, ReadyBatch batch) {
  {
    std::lock_guard lock(mutex_);
    if (generation != generation_) return;
    ready_.push_back(std::move(batch));
  }
  changed_.notify_one();
}

void ReadyBatches::fail(std::uint64_t generation, FeedFailure failure) {
  {
    std::lock_guard lock(mutex_);
    if (generation != generation_ || failure_) return;
    failure_ = std::move(failure);
  }
  changed_.notify_one();
}

void ReadyBatches::loader_stopped(std::string reason) {
  {
    std::lock_guard lock(mutex_);
    stopped_ = std::move(reason);
  }
  changed_.notify_one();
}

}  // namespace taihu::feed
