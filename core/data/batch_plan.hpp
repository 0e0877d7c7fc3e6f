#pragma once
// Which samples make each mini-batch, and how they become tensors: the one
// definition that BatchSource (a prefetch thread) and the batch loader actors
// (actors/feed/) share, so every way of reading a data set yields the same
// batches.
//
// The sample order of epoch e is a pure function of (seed, e), and so is each
// sample's augmentation (its draw key, from seed, epoch and index): a run
// that stored its position resumes exactly, whichever reader fills batches
// and in whatever order decoders finish.
//
// A sample that cannot be read (Dataset::read_sample answers -1: a corrupt
// file or record) is replaced by the next readable one in the epoch's order,
// so batches keep their size and a bad file changes the same rows in every
// run; the data set counts it.

#include <cstdint>
#include <memory>
#include <vector>

#include "core/data/dataset.hpp"
#include "core/tensor/tensor.hpp"

namespace taihu {

struct BatchOptions {
  int64_t batch_size = 32;
  bool shuffle = true;
  // Random augmentation (crops, flips) of the samples; off: their evaluation view.
  bool augment = false;
  // Skip the last, smaller batch of an epoch instead of returning it.
  bool drop_last = false;
  // Batches prepared ahead (the pool of batch buffers); 0 = synchronous
  // (BatchSource only; an actor feed holds at least one).
  int prefetch = 0;
  // Actor feeds: decoder actors of this process, shared by all its feeds (the
  // first feed's figure counts); 0 = the feed's default. Not part of the plan.
  int decoders = 0;
  uint64_t seed = 0;
  // Data parallelism: this source yields only part `shard_index` of
  // `shard_count` of every batch (contiguous rows, balanced: the first
  // batch_size % shard_count parts get one row more). The batch order and
  // contents are those of the unsharded source, so N shards of a batch of
  // N·b together are exactly what one source of batch N·b returns.
  int shard_count = 1;
  int shard_index = 0;
};

class BatchPlan {
 public:
  // Throws DataError for bad options, or if an epoch would have no batch.
  BatchPlan(std::shared_ptr<const Dataset> dataset, BatchOptions options);

  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  const Dataset& dataset() const { return *dataset_; }
  const std::shared_ptr<const Dataset>& dataset_pointer() const { return dataset_; }
  const BatchOptions& options() const { return options_; }
  const Shape& sample_shape() const { return sample_shape_; }

  // The data set indices in the order epoch `epoch` visits them.
  std::vector<int64_t> order(int64_t epoch) const;

  // This shard's rows of batch `batch`: positions [begin, begin + count) of
  // the epoch's order.
  struct Rows {
    int64_t begin = 0;
    int64_t count = 0;
  };
  Rows rows(int64_t batch) const;

  // Reshapes `data` to count x sample shape and `labels` to count.
  void shape(Tensor& data, Tensor& labels, int64_t count) const;

  // Writes rows [first, last) of `rows` (0-based within the batch) into the
  // same rows of `data` (row-major, sample_shape().count() floats each) and
  // `labels`; `order` is order(epoch). Disjoint row ranges may be filled
  // concurrently. Throws DataError if no sample of the data set can be read.
  void fill(int64_t epoch, const std::vector<int64_t>& order, Rows rows, int64_t first, int64_t last, float* data,
            float* labels) const;

  // Fills a whole batch (reshaping both tensors).
  void fill(int64_t epoch, const std::vector<int64_t>& order, int64_t batch, Tensor& data, Tensor& labels) const;

 private:
  uint64_t draw(int64_t epoch, int64_t index) const;

  std::shared_ptr<const Dataset> dataset_;
  BatchOptions options_;
  Shape sample_shape_;
  int64_t sample_count_ = 0;
  int64_t batches_per_epoch_ = 0;
};

}  // namespace taihu
