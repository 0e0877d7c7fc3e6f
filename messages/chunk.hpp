#pragma once
// One message of a collective between two shard actors of the same bucket:
// the range [offset, offset + payload.size()) of the bucket, the sender's
// snapshot of it. (sender, seq) names the message within one iteration of
// one bucket, as in actors/sync/schedule.hpp; the receiver checks the range.

#include <cstdint>

#include "messages/tensor_payload.hpp"

namespace taihu::msg {

struct Chunk {
  std::uint32_t bucket = 0;
  std::uint64_t iteration = 0;
  std::int32_t sender = 0;  // rank
  std::uint32_t seq = 0;
  std::uint64_t offset = 0;  // in floats, within the bucket
  TensorPayload payload;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Chunk& x) {
  return f(caf::meta::type_name("taihu::msg::Chunk"), x.bucket, x.iteration, x.sender, x.seq, x.offset, x.payload);
}

}  // namespace taihu::msg
