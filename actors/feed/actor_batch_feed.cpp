// The consumer's side of the actor feed (batch_loader.hpp): a BatchFeed that
// lives with a replica's worker, takes its loader's finished batches in order
// and hands their slots back. The worker's step awaits them (next_async);
// next() is for callers outside an actor (an evaluation pass, a test).

#include <caf/actor_system.hpp>
#include <caf/send.hpp>

#include <algorithm>
#include <chrono>

#include "actors/feed/batch_loader.hpp"
#include "actors/feed/batch_loader_actor.hpp"
#include "actors/feed/decoder_pool.hpp"
#include "actors/feed/ready_batches.hpp"
#include "core/common/check.hpp"
#include "core/common/sync_wait.hpp"
#include "messages/type_ids.hpp"

namespace taihu::feed {
namespace {

class ActorBatchFeed final : public BatchFeed {
 public:
  ActorBatchFeed(caf::actor_system& system, std::shared_ptr<const Dataset> dataset, const BatchOptions& options)
      : plan_(std::make_shared<const BatchPlan>(std::move(dataset), options)),
        pool_(DecoderPool::of(system, options.decoders)),
        loader_(spawn_batch_loader(system,
                                   LoaderSpec{plan_, ready_, pool_->decoders(), std::max(1, options.prefetch)})) {
    ready_->restart();
  }

  // Waits for nothing: chunks in progress own the memory they write (messages/batch_loading.hpp).
  ~ActorBatchFeed() override {
    ready_->close();
    caf::anon_send_exit(loader_, caf::exit_reason::user_shutdown);
  }

  ActorBatchFeed(const ActorBatchFeed&) = delete;
  ActorBatchFeed& operator=(const ActorBatchFeed&) = delete;

  bool next(Tensor& data, Tensor& labels) override { return async::sync_wait(next_async(data, labels)); }

  async::Task<bool> next_async(Tensor& data, Tensor& labels) override {
    if (batch_ >= plan_->batches_per_epoch()) {
      ++epoch_;
      batch_ = 0;
      co_return false;
    }
    // As BatchSource's thread, the loader starts when the first batch is
    // wanted, not at construction or seek: nothing is read that nobody takes.
    if (!loading_) {
      caf::anon_send(loader_, msg::LoadFrom{ready_->generation(), epoch_, batch_});
      loading_ = true;
    }
    const auto asked = std::chrono::steady_clock::now();
    const ReadyBatch ready = co_await ready_->take();
    wait_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
    require(ready.epoch == epoch_ && ready.batch == batch_,
            "internal error: batch {} of epoch {} arrived for batch {} of epoch {}", ready.batch, ready.epoch, batch_,
            epoch_);
    // A copy, not a swap of storage: the caller's tensors are often a net's
    // input blobs, whose storage other tensors may share (Tensor::share).
    plan_->shape(data, labels, ready.rows);
    std::copy_n(ready.buffer->data.data(), ready.rows * plan_->sample_shape().count(), data.ptr());
    std::copy_n(ready.buffer->labels.data(), ready.rows, labels.ptr());
    caf::anon_send(loader_, msg::SlotReleased{ready_->generation(), ready.slot});
    ++batch_;
    co_return true;
  }

  int64_t epoch() const override { return epoch_; }
  int64_t batch_index() const override { return batch_; }

  void seek(int64_t epoch, int64_t batch) override {
    // Epochs numbered from 1 in messages, as the log numbers them.
    require<DataError>(epoch >= 0 && batch >= 0 && batch <= plan_->batches_per_epoch(),
                       "cannot seek to batch {} of epoch {}: an epoch has batches 0..{}", batch, epoch + 1,
                       plan_->batches_per_epoch());
    // A new generation at once, so that decoders skip the old one's queued chunks.
    ready_->restart();
    loading_ = false;
    epoch_ = epoch;
    batch_ = batch;
  }

  const BatchPlan& plan() const override { return *plan_; }
  double wait_seconds() const override { return wait_seconds_; }

 private:
  std::shared_ptr<const BatchPlan> plan_;
  std::shared_ptr<ReadyBatches> ready_ = std::make_shared<ReadyBatches>();
  std::shared_ptr<DecoderPool> pool_;  // shared with the process's other feeds
  BatchLoaderActor loader_;
  int64_t epoch_ = 0;
  int64_t batch_ = 0;
  bool loading_ = false;  // LoadFrom sent for the current generation
  double wait_seconds_ = 0.0;
};

}  // namespace

std::unique_ptr<BatchFeed> make_actor_batch_feed(caf::actor_system& system, std::shared_ptr<const Dataset> dataset,
                                                 const BatchOptions& options) {
  return std::make_unique<ActorBatchFeed>(system, std::move(dataset), options);
}

BatchFeedFactory actor_batch_feeds(caf::actor_system& system) {
  return [&system](std::shared_ptr<const Dataset> dataset, const BatchOptions& options) {
    return make_actor_batch_feed(system, std::move(dataset), options);
  };
}

}  // namespace taihu::feed
