#pragma once
// Where a batch loader (batch_loader_actor.hpp) leaves finished batches for
// its feed's consumer, a replica's worker step that awaits the next one
// (core/common/pending.hpp): taken at once when it is there, or else handed
// to the waiting step by the loader when it is published. The one place the
// actor side and the consumer meet: a mutex, held for moments only.
//
// Generations keep a restarted feed clean: the consumer begins one at every
// seek (restart()), and whatever the loader hands in for an older one (it
// learns of the seek only when LoadFrom arrives) is ignored here; the loader
// takes those slots back itself.
//
// Plain C++; the loader calls the "loader side" from its handlers (never
// blocking), the consumer the rest.

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/common/pending.hpp"
#include "messages/batch_loading.hpp"

namespace taihu::feed {

// A batch of one slot, complete.
struct ReadyBatch {
  std::uint32_t slot = 0;
  std::int64_t epoch = 0;
  std::int64_t batch = 0;
  std::int64_t rows = 0;
  std::shared_ptr<const msg::BatchBuffer> buffer;
};

// Why no more batches come: the reading failed (`data`: a DataError, which
// next() rethrows as one), or the loader stopped.
struct FeedFailure {
  std::string message;
  bool data = false;
};

class ReadyBatches {
 public:
  ReadyBatches();

  // Consumer side.
  // Drops every batch and failure; returns the new generation (1, 2, ...).
  std::uint64_t restart();
  // No generation is current any more: the feed is going.
  void close();
  std::uint64_t generation() const { return generation_; }
  // Shared with the decoders' work, which they skip once it is stale.
  std::shared_ptr<const std::atomic<std::uint64_t>> current() const { return current_; }
  // The next batch, when it is there. Batches completed before a failure
  // come first; then the failure is thrown (DataError or Error) until the
  // next restart(). One take at a time.
  async::Pending<ReadyBatch> take();

  // Loader side; stale generations are ignored.
  void publish(std::uint64_t generation, ReadyBatch batch);
  void fail(std::uint64_t generation, FeedFailure failure);
  // The loader is gone (any generation): a consumer waiting now, or later, fails.
  void loader_stopped(std::string reason);

 private:
  // Answers `take` with the next batch or the failure, if there is one yet
  // (under the lock: completing only hands the step to its Resumer).
  bool answer_locked(const async::Completion<ReadyBatch>& take);

  std::mutex mutex_;
  std::optional<async::Completion<ReadyBatch>> waiting_;  // a take that found nothing yet
  std::uint64_t generation_ = 0;  // guarded by mutex_, mirrored in *current_
  std::shared_ptr<std::atomic<std::uint64_t>> current_;
  std::deque<ReadyBatch> ready_;
  std::optional<FeedFailure> failure_;
  std::optional<std::string> stopped_;
};

}  // namespace taihu::feed
