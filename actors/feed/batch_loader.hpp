#pragma once
// The streaming feed as message flow: BatchFeeds (core/data/batch_feed.hpp)
// whose batches are read by actors of the process's actor system. Every
// replica of taihu-train, taihu-node and the Python Trainer reads through
// them (actors/compute/replica_services.hpp).
//
// Per feed, one batch loader (batch_loader_actor.hpp) owns the feed's
// BatchPlan and max(1, prefetch) batch buffers; per process, one pool of
// decoder actors (decoder_pool.hpp) reads for all feeds. The consumer, a
// replica's worker thread, takes finished batches in order (ReadyBatches).
//
// Protocol (messages/batch_loading.hpp):
//   feed -> loader     LoadFrom{generation, epoch, batch}   at the first next() and
//                      the first after each seek(): drop what is prepared, load from there
//   loader -> decoder  DecodeRows{work, first, last}        a chunk of a batch's rows,
//                      -> RowsDecoded{failure}              written into the slot's memory
//   loader -> feed     ReadyBatches::publish / fail          a slot complete, in batch order
//   feed -> loader     SlotReleased{generation, slot}        copied out: refill it
//   feed -> loader     exit (user_shutdown)                  when the feed is destroyed
//
// The batches are exactly BatchSource's (the same BatchPlan), for any number
// of decoders, slots and shards: each row is a pure function of (seed, epoch,
// position), whichever decoder writes it, and the loader publishes in order.
// next() answers false once at each epoch's end, as BatchSource does, while
// the loader reads on into the next epoch. Reading errors come back from
// next() after the batches completed before them (a DataError as DataError,
// with its message); a decoder or loader that dies fails next() too.
//
// Destroying a feed stops its loader and waits for nothing: a decoder on one
// of its chunks finishes it into memory that the chunk's message co-owns,
// and skips the feed's queued chunks. The system must outlive its feeds.

#include <caf/fwd.hpp>

#include <memory>

#include "core/data/batch_feed.hpp"

namespace taihu::feed {

// Feeds on `system`; the decoder pool is made by the first feed that needs
// it (BatchOptions::decoders actors, 0: 1) and shared while any feed lives.
BatchFeedFactory actor_batch_feeds(caf::actor_system& system);

// One such feed. Throws DataError for bad options, as BatchSource does.
std::unique_ptr<BatchFeed> make_actor_batch_feed(caf::actor_system& system, std::shared_ptr<const Dataset> dataset,
                                                 const BatchOptions& options);

}  // namespace taihu::feed
