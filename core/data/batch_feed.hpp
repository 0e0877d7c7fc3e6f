#pragma once
// Where a replica takes its mini-batches from: BatchSource (a prefetch thread
// beside the replica, batch_source.hpp) or, in the actor runtime, a batch
// loader actor whose decoder actors fill a bounded pool of batch buffers
// (actors/feed/batch_loader.hpp). Both cut batches by the same BatchPlan.
//
// Plain C++: core builds replicas with a BatchFeedFactory that the actor
// layer supplies (ReplicaServices, core/train/replica.hpp).

#include <cstdint>
#include <functional>
#include <memory>

#include "core/common/task.hpp"
#include "core/data/batch_plan.hpp"

namespace taihu {

class BatchFeed {
 public:
  virtual ~BatchFeed() = default;

  // Writes the next batch (reshaping both tensors) and returns true; at the
  // end of an epoch returns false once, and the following call starts the
  // next epoch. Errors of the reading (DataError) are rethrown here.
  virtual bool next(Tensor& data, Tensor& labels) = 0;
  // The same as a task (core/common/task.hpp), for a worker's step: the
  // actor feed suspends the step until its loader has the batch, where
  // next() would block the thread. By default next(), at once (BatchSource,
  // which no worker uses: the actor runtime installs its own feed).
  virtual async::Task<bool> next_async(Tensor& data, Tensor& labels) { co_return next(data, labels); }

  // Position of the batch the next call returns (batch_index() equals
  // batches_per_epoch() after an epoch's last batch, until next() says false).
  virtual int64_t epoch() const = 0;
  virtual int64_t batch_index() const = 0;
  // Continues from batch `batch` (0..batches_per_epoch()) of epoch `epoch`.
  virtual void seek(int64_t epoch, int64_t batch) = 0;

  virtual const BatchPlan& plan() const = 0;
  // Seconds next() has waited for batches that were not ready yet.
  virtual double wait_seconds() const = 0;

  int64_t batches_per_epoch() const { return plan().batches_per_epoch(); }
  // Samples in the data set (an epoch uses all, or drops the last partial batch).
  int64_t size() const { return plan().dataset().size(); }
  const Dataset& dataset() const { return plan().dataset(); }
  const BatchOptions& options() const { return plan().options(); }
  std::vector<int64_t> order(int64_t epoch) const { return plan().order(epoch); }
};

using BatchFeedFactory =
    std::function<std::unique_ptr<BatchFeed>(std::shared_ptr<const Dataset> dataset, const BatchOptions& options)>;

}  // namespace taihu
