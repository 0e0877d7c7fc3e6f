#include "actors/feed/decoder_pool.hpp"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <exception>
#include <map>
#include <mutex>

#include <spdlog/spdlog.h>

#include "core/blas/blas.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/common/error.hpp"
#include "core/kernels/compute_threads.hpp"

namespace taihu::feed {
namespace {

struct DecoderState {
  static inline const char* name = "taihu.decoder";
  std::shared_ptr<std::atomic<int>> queued;  // the pool's count of this decoder's chunks
};

using Self = DecoderActor::stateful_pointer<DecoderState>;

// Never throws: a failure is the answer (see the header on why).
msg::RowsDecoded decode(const msg::DecodeRows& job) {
  if (!job.work) return {"a DecodeRows without its batch (messages/batch_loading.hpp: in-process only)", false};
  const msg::BatchWork& work = *job.work;
  // A seek or the feed's end made the batch stale while the job was queued.
  if (!work.wanted()) return {};
  try {
    work.plan->fill(work.epoch, *work.order, work.rows, job.first, job.last, work.buffer->data.data(),
                    work.buffer->labels.data());
  } catch (const DataError& e) {
    return {e.what(), true};
  } catch (const std::exception& e) {
    return {e.what(), false};
  }
  return {};
}

DecoderActor::behavior_type decoder(Self self, std::shared_ptr<std::atomic<int>> queued) {
  self->state.queued = std::move(queued);
  return {
      [=](const msg::DecodeRows& job) {
        msg::RowsDecoded answer = decode(job);
        self->state.queued->fetch_sub(1, std::memory_order_relaxed);
        return answer;
      },
  };
}

// The pools in use, by actor system. A weak entry: the feeds own their pool.
std::mutex pools_mutex;
std::map<const caf::actor_system*, std::weak_ptr<DecoderPool>> pools;

}  // namespace

std::shared_ptr<DecoderPool> DecoderPool::of(caf::actor_system& system, int decoders) {
  std::lock_guard lock(pools_mutex);
  std::erase_if(pools, [](const auto& entry) { return entry.second.expired(); });
  std::weak_ptr<DecoderPool>& entry = pools[&system];
  if (auto pool = entry.lock()) return pool;
  auto pool = std::make_shared<DecoderPool>(system, decoders);
  entry = pool;
  // Decoders are threads beside the compute threads, on the same cores.
  const int cores = blas::available_cores(), count = static_cast<int>(pool->decoders()->size());
  spdlog::info("batch input: {} decoder actor(s) beside {} BLAS thread(s) per replica, {} core(s)", count,
               compute_threads(), cores);
  if (count >= cores)
    spdlog::warn("[data] decoders = {} takes every core ({}) from compute: batches are read faster than they "
                 "can be used unless decoding is the bottleneck (the report's data.wait_share says)",
                 count, cores);
  return pool;
}

Decoders::Decoders(caf::actor_system& system, int count) {
  for (int k = 0; k < std::max(1, count); ++k) {
    queued_.push_back(std::make_shared<std::atomic<int>>(0));
    actors_.push_back(system.spawn<caf::detached>(decoder, queued_.back()));
  }
}

const DecoderActor& Decoders::pick() {
  const std::size_t n = actors_.size();
  const std::size_t start = turn_.fetch_add(1, std::memory_order_relaxed) % n;
  std::size_t best = start;
  for (std::size_t i = 1; i < n; ++i) {
    const std::size_t k = (start + i) % n;
    if (queued_[k]->load(std::memory_order_relaxed) < queued_[best]->load(std::memory_order_relaxed)) best = k;
  }
  queued_[best]->fetch_add(1, std::memory_order_relaxed);
  return actors_[best];
}

DecoderPool::DecoderPool(caf::actor_system& system, int decoders)
    : decoders_(std::make_shared<Decoders>(system, decoders)) {}

DecoderPool::~DecoderPool() {
  for (const auto& d : decoders_->actors()) caf::anon_send_exit(d, caf::exit_reason::user_shutdown);
}

}  // namespace taihu::feed
