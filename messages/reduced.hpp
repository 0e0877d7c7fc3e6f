#pragma once
// Shard actor -> its owner (the worker): the bucket's collective of this
// iteration is complete; `buffer` is the result (the buffer of GradientReady,
// handed back), bit-identical on every rank.

#include <cstdint>

#include "messages/tensor_payload.hpp"

namespace taihu::msg {

struct Reduced {
  std::uint32_t bucket = 0;
  std::uint64_t iteration = 0;
  std::int32_t rank = 0;
  TensorPayload buffer;
  // When the shard finished, in ns of the sender's steady clock: timing of
  // communication inside one process only (meaningless across hosts).
  std::int64_t finished_ns = 0;
  // Bytes of payload this rank's shard sent for this bucket and iteration
  // (dense chunks, or packed compressed messages).
  std::uint64_t bytes_sent = 0;
  // CPU time of the shard's thread on its own work before and after the
  // collective (BucketTiming::compress_cpu, decompress_cpu).
  std::int64_t compress_cpu_ns = 0;
  std::int64_t decompress_cpu_ns = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Reduced& x) {
  return f(caf::meta::type_name("taihu::msg::Reduced"), x.bucket, x.iteration, x.rank, x.buffer, x.finished_ns,
           x.bytes_sent, x.compress_cpu_ns, x.decompress_cpu_ns);
}

}  // namespace taihu::msg
