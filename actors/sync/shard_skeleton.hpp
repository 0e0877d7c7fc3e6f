#pragma once
// What every kind of shard actor (the plain allreduce, shard_actor.cpp; the
// compressed one, compressed_shard_actor.cpp) does alike, written once: the
// shard_actor protocol's handlers, the queue of inputs by iteration, the
// wait for chunks (polling a router that can be polled), the end of an
// iteration (Reduced to the owner, then the next queued input) and the
// counters. What differs is the reduction, a class R given to
// `shard_behavior`:
//
//   static constexpr const char* actor_name;
//   ShardId id() const;
//   bool compresses() const;                  // has compressor states to save and restore
//   bool peers_optional(bool routed) const;   // ShardInit may carry no peers
//   void begin(msg::GradientReady ready);     // takes the input, starts its steps
//   bool advance(ShardInbox&, SendChunk);     // runs steps until one waits; true: all done
//   msg::TensorPayload finish(iteration);     // the result, once all steps are done
//   bool arrives_early(const msg::Chunk&, bool current) const;
//                                             // throws for a chunk no step takes
//   msg::ShardStats stats(const ShardCounters&) const;
//   std::string states() const;               // compressor states (empty: none)
//   void restore(const std::string& bytes);   // throws taihu::Error for another layout
//
// A reduction may throw from any of them: the shard ends with the reason
// (actors/exception_reason.hpp), which its owner sees through a monitor.

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "actors/exception_reason.hpp"
#include "actors/sync/chunk_poller.hpp"
#include "actors/sync/send_chunk.hpp"
#include "actors/sync/shard_actor.hpp"
#include "actors/sync/shard_inbox.hpp"
#include "core/common/check.hpp"
#include "core/common/thread_cpu_time.hpp"
#include "messages/type_ids.hpp"

namespace taihu::sync {

// Which shard: its bucket and rank, for the owner and for messages.
struct ShardId {
  std::uint32_t bucket = 0;
  int rank = 0;
  int ranks = 1;
  std::size_t elements = 0;
};

// Counted by the skeleton, reported by the reduction (ShardStats).
struct ShardCounters {
  std::uint64_t chunks_sent = 0;
  std::uint64_t early_chunks = 0;  // arrived before their step was waiting for them
  std::uint64_t bytes_sent = 0;
};

// How a reduction hands a chunk to rank `to` (its peer's shard or the router).
using SendChunk = std::function<void(int to, msg::Chunk chunk)>;

template <class Reduction>
struct ShardCore {
  static inline const char* name = Reduction::actor_name;

  std::shared_ptr<ChunkRouter> router;  // null in-process; first, so that it outlives what holds its memory
  std::shared_ptr<Reduction> reduction;  // this actor's only (shared: spawn arguments are copied)
  ChunkPoller poller;                   // after `router`: gives its hold back before the router goes
  ShardInbox inbox;                     // inputs and early chunks

  // The running iteration, if any.
  bool running = false;
  std::uint64_t iteration = 0;
  std::uint64_t iteration_bytes = 0;  // payload this rank sent in the running iteration
  std::int64_t compress_cpu_ns = 0;   // the reduction's begin, in the running iteration
  ShardCounters counters;
  SendChunk send;  // bound to this actor once
};

namespace skeleton_detail {

template <class Reduction>
using Self = shard_actor::stateful_base<ShardCore<Reduction>>;

template <class Reduction>
void start_next(Self<Reduction>* self);

// Runs the reduction's steps until one waits for a chunk that has not
// arrived (then looks for it through a pollable router rather than sleep,
// chunk_poller.hpp); after the last step hands the result to the owner and
// starts a queued iteration.
template <class Reduction>
void advance(Self<Reduction>* self) {
  auto& s = self->state;
  if (!s.reduction->advance(s.inbox, s.send)) {
    if (s.poller.wait()) self->send(self, msg::poll_atom_v);
    return;
  }
  const std::int64_t cpu_before_finish = thread_cpu_ns();
  msg::TensorPayload result = s.reduction->finish(s.iteration);
  const std::int64_t decompress_cpu_ns = thread_cpu_ns() - cpu_before_finish;
  s.poller.release();
  s.running = false;
  s.inbox.complete(s.iteration);
  const ShardId id = s.reduction->id();
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  self->send(s.inbox.owner(), msg::Reduced{id.bucket, s.iteration, id.rank, std::move(result),
                                           std::chrono::duration_cast<std::chrono::nanoseconds>(now).count(),
                                           s.iteration_bytes, s.compress_cpu_ns, decompress_cpu_ns});
  start_next(self);
}

template <class Reduction>
void start_next(Self<Reduction>* self) {
  auto& s = self->state;
  if (!s.inbox.wired() || s.running || !s.inbox.has_input()) return;
  msg::GradientReady ready = s.inbox.next_input();
  s.running = true;
  s.iteration = ready.iteration;
  s.iteration_bytes = 0;
  const std::int64_t cpu_before_begin = thread_cpu_ns();
  s.reduction->begin(std::move(ready));
  s.compress_cpu_ns = thread_cpu_ns() - cpu_before_begin;
  advance(self);
}

}  // namespace skeleton_detail

// The behaviour of a shard whose reduction is `reduction`; `router` as
// ChunkRouter says (null: in-process). `label` names it in messages
// ("shard", "compressed shard").
template <class Reduction>
shard_actor::behavior_type shard_behavior(skeleton_detail::Self<Reduction>* self, std::shared_ptr<Reduction> reduction,
                                          std::shared_ptr<ChunkRouter> router, const char* label) {
  using namespace skeleton_detail;
  auto& st = self->state;
  st.router = std::move(router);
  st.reduction = std::move(reduction);
  st.poller.attach(st.router.get());
  const ShardId id = st.reduction->id();
  st.inbox.init(fmt::format("{} {}/{}", label, id.bucket, id.rank), id.bucket, id.elements, id.ranks);
  st.send = [self](int to, msg::Chunk chunk) {
    auto& s = self->state;
    const std::uint64_t bytes = chunk.size() * sizeof(float);
    s.iteration_bytes += bytes;
    s.counters.bytes_sent += bytes;
    ++s.counters.chunks_sent;
    send_chunk(self, s.router.get(), s.inbox, to, std::move(chunk));
  };
  // The reason travels in the down_msg, so an owner can say which shard failed and why.
  self->set_exception_handler(exception_reason);
  return {
      [=](msg::ShardInit& init) {
        auto& s = self->state;
        s.inbox.wire(std::move(init), s.reduction->peers_optional(s.router != nullptr));
        start_next(self);
      },
      [=](msg::GradientReady& ready) {
        auto& s = self->state;
        s.inbox.queue(std::move(ready), s.running ? std::optional{s.iteration} : std::nullopt);
        start_next(self);
      },
      [=](msg::Chunk& chunk) {
        auto& s = self->state;
        const bool current = s.running && chunk.iteration == s.iteration;
        if (s.reduction->arrives_early(chunk, current)) ++s.counters.early_chunks;
        s.inbox.keep(std::move(chunk));
        if (current) advance(self);
      },
      [=](msg::poll_atom) {
        if (self->state.poller.poll(self->state.running)) self->send(self, msg::poll_atom_v);
      },
      [=](msg::stats_atom) { return self->state.reduction->stats(self->state.counters); },
      // The compressor states (residuals and momentum), for checkpoints; empty: none.
      [=](msg::compressor_atom) { return self->state.reduction->states(); },
      [=](msg::compressor_atom, const std::string& bytes) {
        auto& s = self->state;
        require(s.reduction->compresses(), "{}: compressor state for a shard without a compressor", s.inbox.name());
        require(!s.running && !s.inbox.has_input(), "{}: compressor state restored mid-iteration", s.inbox.name());
        // States of another layout (e.g. after a regroup that re-planned the
        // compression): the shard goes on from where it is, and says so.
        try {
          s.reduction->restore(bytes);
        } catch (const Error& e) {
          spdlog::warn("{}: compressor state not restored: {}", s.inbox.name(), e.what());
          return false;
        }
        return true;
      },
  };
}

}  // namespace taihu::sync
