#pragma once
// BatchSource cuts a Dataset into mini-batches: a data tensor (N x sample
// shape) and a label tensor (N floats, the class indices).
//
// The sample order of epoch e is a pure function of (seed, e), so a run that
// stored epoch() and batch_index() resumes exactly with seek(). With
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

#include "core/data/dataset.hpp"
#include "core/tensor/tensor.hpp"

namespace taihu {

struct BatchOptions {
  int64_t batch_size = 32;
  bool shuffle = true;
  // Skip the last, smaller batch of an epoch instead of returning it.
  bool drop_last = false;
  // Batches prepared ahead by a background thread; 0 = synchronous.
  int prefetch = 0;
  uint64_t seed = 0;
  // Data parallelism: this source yields only part `shard_index` of
  // `shard_count` of every batch (contiguous rows, balanced: the first
  // batch_size % shard_count parts get one row more). The batch order and
  // contents are those of the unsharded source, so N shards of a batch of
  // N·b together are exactly what one source of batch N·b returns.
  int shard_count = 1;
  int shard_index = 0;
};

class BatchSource {
 public:
  // Throws DataError if an epoch would have no batch at all.
  BatchSource(std::shared_ptr<const Dataset> dataset, BatchOptions options);
  ~BatchSource();
  BatchSource(const BatchSource&) = delete;
  BatchSource& operator=(const BatchSource&) = delete;

  // Writes the next batch (reshaping both tensors) and returns true; at the
  // end of an epoch returns false once, and the following call starts the
  // next epoch.
  bool next(Tensor& data, Tensor& labels);

  // Position of the batch the next call returns (batch_index() equals
  // batches_per_epoch() after an epoch's last batch, until next() says false).
  int64_t epoch() const { return epoch_; }
  int64_t batch_index() const { return batch_; }
  // Continues from batch `batch` (0..batches_per_epoch()) of epoch `epoch`.
  void seek(int64_t epoch, int64_t batch);

  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  // Samples in the data set (an epoch uses all, or drops the last partial batch).
  int64_t size() const { return dataset_->size(); }
  const Dataset& dataset() const { return *dataset_; }
  const BatchOptions& options() const { return options_; }

  // The data set indices in the order epoch `epoch` visits them.
  std::vector<int64_t> order(int64_t epoch) const;

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

  std::shared_ptr<const Dataset> dataset_;
  BatchOptions options_;
  Shape sample_shape_;
  int64_t sample_count_ = 0;
  int64_t batches_per_epoch_ = 0;
  int64_t epoch_ = 0;
  int64_t batch_ = 0;
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
