#pragma once
// The decoder actors of a process: they fill rows of batches (BatchPlan::fill,
// msg::DecodeRows -> msg::RowsDecoded) for every batch loader of the process
// (batch_loader_actor.hpp) — train and test feeds, all replicas.
//
// Reading and decoding a sample blocks for up to milliseconds (files, image
// decoding, augmentation), and CAF cannot preempt a handler, so decoders are
// detached actors, a thread each: they never hold a scheduler thread that the
// gradient shards need.
//
// A decoder serves several feeds, so one feed's trouble must not end it: an
// exception of the reading (a DataError, or any other) becomes the answer's
// failure, and the decoder goes on. A decoder that dies nevertheless (killed)
// answers nothing more; its requests fail, and each loader reports that to
// its feed's consumer instead of leaving it waiting.
//
// Lifetime: the pool is shared by the feeds that use it (shared_ptr). The
// first feed of an actor system creates it, with its `decoders` figure; the
// feeds made while it lives reuse it; when the last one goes, the pool tells
// its decoders to exit — each finishes at most the chunk it is on (its queue
// holds only work of gone feeds, which it skips) — so the system's shutdown,
// which waits for every actor, never waits for an idle decoder. The system
// must outlive the feeds.

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "messages/type_ids.hpp"

namespace taihu::feed {

using DecoderActor = caf::typed_actor<caf::replies_to<msg::DecodeRows>::with<msg::RowsDecoded>>;

// The decoders' handles and how busy each is: what a loader needs to send
// work, shared by the pool and the loaders using it (a loader may outlive
// its feed by a few messages; the pool must not live on with it).
class Decoders {
 public:
  Decoders(caf::actor_system& system, int count);

  std::size_t size() const { return actors_.size(); }
  const std::vector<DecoderActor>& actors() const { return actors_; }

  // The decoder with the fewest chunks queued, counting one more there until
  // that decoder has done it. Least-loaded rather than round-robin because
  // feeds share the decoders: a feed's chunks then go to decoders that are
  // not busy with another feed's. Within one feed the two agree (a batch's
  // chunks cost about the same). Ties go round in turn. Thread-safe: loaders
  // call it from their handlers.
  const DecoderActor& pick();

 private:
  std::vector<DecoderActor> actors_;
  // Per decoder, shared with it: chunks sent to it and not yet done.
  std::vector<std::shared_ptr<std::atomic<int>>> queued_;
  std::atomic<std::size_t> turn_{0};
};

// The owner of a system's decoders: the feeds hold it, and the last one to go
// takes it along, which tells the decoders to exit.
class DecoderPool {
 public:
  // The pool of `system`'s feeds, made with `decoders` actors (0: 1) if it
  // has none now.
  static std::shared_ptr<DecoderPool> of(caf::actor_system& system, int decoders);

  DecoderPool(caf::actor_system& system, int decoders);
  ~DecoderPool();
  DecoderPool(const DecoderPool&) = delete;
  DecoderPool& operator=(const DecoderPool&) = delete;

  const std::shared_ptr<Decoders>& decoders() const { return decoders_; }
  std::size_t size() const { return decoders_->size(); }

 private:
  std::shared_ptr<Decoders> decoders_;
};

}  // namespace taihu::feed
