#pragma once
// A feed's batch loader: it owns the feed's pool of batch buffers (slots) and
// keeps every free one busy, in batch order, with the process's decoders
// (decoder_pool.hpp) doing the reading. The protocol is in batch_loader.hpp.
//
// Slots go free -> filling -> ready -> free:
//  - free: LoadFrom started loading and the slot has no batch: it gets the
//    next batch (epoch, batch) at once, its rows cut into chunks, one
//    DecodeRows request per chunk to the least-loaded decoders;
//  - filling: when all its chunks are back, and every slot given an earlier
//    batch is ready too, it is ready (published to ReadyBatches) — so the
//    consumer gets batches in order, however decoders finish;
//  - ready: the consumer's SlotReleased makes it free again.
// With no slot free, the loader sends nothing: the consumer's pace bounds the
// reading, and memory is slots x the batch's bytes.
//
// A chunk that fails (its answer's failure, or the request's error when a
// decoder died) fails its batch: the batches before it are still published,
// then the failure; nothing after it is, and loading stops until the next
// LoadFrom. A LoadFrom (the consumer's seek, in a new generation) takes the
// ready slots back and leaves the filling ones to come back as stale: their
// memory is written until their chunks are in, and only then free.
//
// The loader is a scheduled actor: it only does bookkeeping, and once per
// epoch computes the epoch's order (a shuffle of the indices: milliseconds
// for a million samples). When it terminates, for whatever reason, the
// consumer learns it (ReadyBatches::loader_stopped) rather than waiting.

#include <caf/fwd.hpp>
#include <caf/typed_actor.hpp>

#include <memory>

#include "actors/feed/decoder_pool.hpp"
#include "actors/feed/ready_batches.hpp"
#include "core/data/batch_plan.hpp"
#include "messages/type_ids.hpp"

namespace taihu::feed {

using BatchLoaderActor = caf::typed_actor<caf::reacts_to<msg::LoadFrom>, caf::reacts_to<msg::SlotReleased>>;

struct LoaderSpec {
  std::shared_ptr<const BatchPlan> plan;
  std::shared_ptr<ReadyBatches> ready;
  std::shared_ptr<Decoders> decoders;
  int slots = 1;
};

BatchLoaderActor spawn_batch_loader(caf::actor_system& system, LoaderSpec spec);

// How many chunks a batch of `rows` rows is cut into for `decoders`
// decoders: one per decoder, but none under min_chunk_rows rows (messages
// cost microseconds, a sample can cost as little); at least one.
inline constexpr std::int64_t min_chunk_rows = 4;
std::int64_t chunks_for(std::int64_t rows, std::size_t decoders);

}  // namespace taihu::feed
