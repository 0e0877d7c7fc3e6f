#pragma once
// BatchSource cuts a Dataset into mini-batches (a data tensor, N x sample
// shape, and a label tensor, N floats: the class indices) by a BatchPlan, on
// the caller's thread or a thread of its own: the feed of programs and tests
// without the actor runtime (batch_feed.hpp).
//
// A run that stored epoch() and batch_index() resumes exactly with seek(). With
// prefetch > 0 a background thread prepares up to that many batches ahead in
// a bounded queue; the batches are the same as in synchronous mode, errors of
// the thread are rethrown by next(), and destruction never waits for more
// than the batch being prepared.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/data/batch_feed.hpp"

namespace taihu {

class BatchSource final : public BatchFeed {
 public:
  // Throws DataError if an epoch would have no batch at all.
  BatchSource(std::shared_ptr<const Dataset> dataset, BatchOptions options);
  ~BatchSource();
  BatchSource(const BatchSource&) = delete;
  BatchSource& operator=(const BatchSource&) = delete;

  bool next(Tensor& data, Tensor& labels) override;
  int64_t epoch() const override { return epoch_; }
  int64_t batch_index() const override { return batch_; }
  void seek(int64_t epoch, int64_t batch) override;
  const BatchPlan& plan() const override { return plan_; }
  double wait_seconds() const override { return wait_seconds_; }

 private:
  // The order of one epoch at a time, recomputed when the epoch changes.
  struct EpochOrder {
    int64_t epoch = -1;
    std::vector<int64_t> indices;
  };
  struct Slot {
    Tensor data;
    Tensor labels;
    int64_t epoch = 0;
    int64_t batch = 0;
  };

  void fill(int64_t epoch, int64_t batch, EpochOrder& order, Tensor& data, Tensor& labels) const;
  void start_worker();
  void stop_worker();
  void produce(int64_t epoch, int64_t batch);

  BatchPlan plan_;
  int64_t epoch_ = 0;
  int64_t batch_ = 0;
  double wait_seconds_ = 0.0;
  EpochOrder order_;  // synchronous mode

  // Prefetching: slots cycle between free_ (owned by the worker) and ready_
  // (owned by the consumer), both guarded by mutex_.
  std::vector<Slot> slots_;
  std::mutex mutex_;
  std::condition_variable produced_;
  std::condition_variable consumed_;
  std::deque<size_t> ready_;
  std::vector<size_t> free_;
  bool stopping_ = false;
  std::exception_ptr failure_;
  std::thread worker_;
};

}  // namespace taihu
