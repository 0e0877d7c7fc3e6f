#pragma once
// The streaming feed's protocol (actors/feed/batch_loader.hpp): a replica's
// feed tells its batch loader where to read from (LoadFrom) and which batch
// buffer it has copied out (SlotReleased); the loader asks the process's
// decoder actors to fill rows of a batch (DecodeRows, answered RowsDecoded).
//
// In-process only. DecodeRows carries the batch's plan, order and memory as
// pointers (no floats are copied into messages): the loader and its decoders
// always share a process. Their inspect() functions therefore write only the
// figures, for logs; a DecodeRows read back from bytes has no work, and a
// decoder refuses it.

#include <caf/meta/type_name.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/data/batch_plan.hpp"

namespace taihu::msg {

// One slot of a loader's pool: room for its fullest batch (rows x sample
// floats, row-major) and a label per row.
struct BatchBuffer {
  std::vector<float> data;
  std::vector<float> labels;
};

// A batch given to a slot, shared by the DecodeRows of its chunks. They
// co-own the slot's memory, the plan and the order, so a decoder still
// filling rows after the feed is gone writes into memory that still exists.
struct BatchWork {
  std::shared_ptr<const BatchPlan> plan;
  std::shared_ptr<const std::vector<std::int64_t>> order;  // plan->order(epoch)
  std::shared_ptr<BatchBuffer> buffer;
  std::int64_t epoch = 0;
  BatchPlan::Rows rows;
  // The feed's generation now (it moves on at a seek and when the feed
  // goes), and the one this batch belongs to: a decoder skips a chunk that
  // nobody will take any more.
  std::shared_ptr<const std::atomic<std::uint64_t>> current;
  std::uint64_t generation = 0;

  bool wanted() const { return current->load(std::memory_order_relaxed) == generation; }
};

// Loader -> decoder: write rows [first, last) of the batch (0-based within
// its rows) into its buffer. Answered with RowsDecoded.
struct DecodeRows {
  std::shared_ptr<const BatchWork> work;
  std::int64_t first = 0;
  std::int64_t last = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, DecodeRows& x) {
  return f(caf::meta::type_name("taihu::msg::DecodeRows"), x.first, x.last);
}

// Decoder -> loader: the rows are written, or, with a failure, they are not:
// the exception's message, and whether it was a DataError (a sample that
// cannot be read) or anything else.
struct RowsDecoded {
  std::string failure;  // empty: written (or skipped, the batch being unwanted)
  bool data_error = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RowsDecoded& x) {
  return f(caf::meta::type_name("taihu::msg::RowsDecoded"), x.failure, x.data_error);
}

// Feed -> loader: drop everything prepared and fill the slots from batch
// `batch` of epoch `epoch` on (batch == batches per epoch: the next epoch's
// start), as generation `generation` (the feed's count of restarts).
struct LoadFrom {
  std::uint64_t generation = 0;
  std::int64_t epoch = 0;
  std::int64_t batch = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, LoadFrom& x) {
  return f(caf::meta::type_name("taihu::msg::LoadFrom"), x.generation, x.epoch, x.batch);
}

// Feed -> loader: the consumer has copied slot `slot` out; it may be refilled.
struct SlotReleased {
  std::uint64_t generation = 0;
  std::uint32_t slot = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, SlotReleased& x) {
  return f(caf::meta::type_name("taihu::msg::SlotReleased"), x.generation, x.slot);
}

}  // namespace taihu::msg
