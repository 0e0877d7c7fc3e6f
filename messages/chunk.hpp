#pragma once
// One message of a collective between two shard actors of the same bucket:
// the range [offset, offset + payload.size()) of the bucket, the sender's
// snapshot of it. (sender, seq) names the message within one iteration of
// one bucket, as in collectives/schedule.hpp; the receiver checks the range.
//
// The floats are either in `payload` or, for a message from another process
// of this host, still in the sender's memory (`source`, process-local: never
// serialized; actors/sync/chunk_ops.hpp reads either kind).

#include <cstdint>
#include <memory>

#include "messages/chunk_source.hpp"
#include "messages/tensor_payload.hpp"

namespace taihu::msg {

struct Chunk {
  std::uint32_t bucket = 0;
  std::uint64_t iteration = 0;
  std::int32_t sender = 0;  // rank
  std::uint32_t seq = 0;
  std::uint64_t offset = 0;  // in floats, within the bucket
  TensorPayload payload;
  std::shared_ptr<const ChunkSource> source;  // set: payload is empty

  std::size_t size() const { return source ? source->size() : payload.size(); }
};

// The floats as a payload: reads a source into a fresh buffer and drops the
// source, which releases the sender's memory (actors/sync/chunk_ops.cpp).
const TensorPayload& chunk_payload(Chunk& chunk);

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Chunk& x) {
  if constexpr (!Inspector::writes_state) chunk_payload(x);  // serialized or printed: the floats go along
  return f(caf::meta::type_name("taihu::msg::Chunk"), x.bucket, x.iteration, x.sender, x.seq, x.offset, x.payload);
}

}  // namespace taihu::msg
