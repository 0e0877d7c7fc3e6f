#include "actors/feed/ready_batches.hpp"

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
  waiting_.reset();  // the step that waited is going with its feed
}

async::Pending<ReadyBatch> ReadyBatches::take() {
  return async::Pending<ReadyBatch>([this](async::Completion<ReadyBatch> take) {
    std::lock_guard lock(mutex_);
    if (!answer_locked(take)) waiting_.emplace(std::move(take));
  });
}

bool ReadyBatches::answer_locked(const async::Completion<ReadyBatch>& take) {
  if (!ready_.empty()) {
    ReadyBatch batch = std::move(ready_.front());
    ready_.pop_front();
    take(std::move(batch));
    return true;
  }
  if (failure_) {
    if (failure_->data)
      take.fail(std::make_exception_ptr(DataError(failure_->message)));
    else
      take.fail(std::make_exception_ptr(Error(failure_->message)));
    return true;
  }
  if (stopped_) {
    take.fail(std::make_exception_ptr(Error("batch loader stopped: " + *stopped_)));
    return true;
  }
  return false;
}

void ReadyBatches::publish(std::uint64_t generation, ReadyBatch batch) {
  std::lock_guard lock(mutex_);
  if (generation != generation_) return;
  ready_.push_back(std::move(batch));
  if (waiting_ && answer_locked(*waiting_)) waiting_.reset();
}

void ReadyBatches::fail(std::uint64_t generation, FeedFailure failure) {
  std::lock_guard lock(mutex_);
  if (generation != generation_ || failure_) return;
  failure_ = std::move(failure);
  if (waiting_ && answer_locked(*waiting_)) waiting_.reset();
}

void ReadyBatches::loader_stopped(std::string reason) {
  std::lock_guard lock(mutex_);
  stopped_ = std::move(reason);
  if (waiting_ && answer_locked(*waiting_)) waiting_.reset();
}

}  // namespace taihu::feed
