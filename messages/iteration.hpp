#pragma once
// One training iteration between the coordinator and a worker
// (actors/compute/worker.hpp): Iterate starts it (it carries no tensors); the
// worker answers IterationDone once every bucket of its gradient is reduced
// and the solver has stepped.

#include <caf/fwd.hpp>
#include <caf/meta/type_name.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace taihu::msg {

struct Iterate {
  std::uint64_t iteration = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Iterate& x) {
  return f(caf::meta::type_name("taihu::msg::Iterate"), x.iteration);
}

// One bucket of one worker's iteration (seconds): what taihu-sim's buckets
// take (simulation.buckets, compress_seconds, decompress_seconds, unpack_seconds).
struct BucketTiming {
  double ready = 0;  // start of forward -> backward handed the bucket to its collective
  double done = 0;   // start of forward -> the shard had the bucket's sum
  // CPU time of the work on this rank's gradient around the collective (the
  // threads' own clocks, so waiting for a core does not count): the shard's
  // before it (RedSync's compressor step, momentum correction; a plain
  // allreduce: about 0) and after it (the sum of the gathered messages); then
  // the worker's unpacking of the sum into the parameters' gradients, which
  // waits for the worker's backward to end (its thread computes it).
  double compress_cpu = 0;
  double decompress_cpu = 0;
  double unpack_cpu = 0;
};

// Figure by figure, the larger of two workers' (the slowest worker's bucket).
inline BucketTiming slowest(const BucketTiming& a, const BucketTiming& b) {
  return {std::max(a.ready, b.ready), std::max(a.done, b.done), std::max(a.compress_cpu, b.compress_cpu),
          std::max(a.decompress_cpu, b.decompress_cpu), std::max(a.unpack_cpu, b.unpack_cpu)};
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, BucketTiming& x) {
  return f(caf::meta::type_name("taihu::msg::BucketTiming"), x.ready, x.done, x.compress_cpu, x.decompress_cpu,
           x.unpack_cpu);
}

// Where a worker's time went in one iteration (seconds) and what it did.
struct IterationStats {
  double forward_seconds = 0;
  double backward_seconds = 0;
  double update_seconds = 0;
  // Backward finished -> last bucket reduced: communication not hidden.
  double exposed_comm_seconds = 0;
  std::uint64_t samples = 0;
  std::uint64_t vertices = 0;  // of the input graphs (dynamic models)
  // Buckets' collectives, from GradientReady sent to reduced, summed; and the
  // part of that which ran while backward was still computing.
  double comm_seconds = 0;
  double hidden_comm_seconds = 0;
  // Payload bytes this rank's shards sent for all buckets (Reduced::bytes_sent).
  std::uint64_t bytes_sent = 0;
  float learning_rate = 0;  // of this iteration's solver step
  // Of forward_seconds: waiting for a batch the feed had not ready yet.
  double data_wait_seconds = 0;
  std::vector<BucketTiming> buckets;
  // The step suspended, awaiting a compute slot, its batch, a device's core
  // groups or the graph runtime: the worker's thread free for other messages.
  double await_seconds = 0;
  // Reduced buckets the worker took while its step was suspended (rather
  // than after its backward).
  std::uint64_t reduced_during_step = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, IterationStats& x) {
  return f(caf::meta::type_name("taihu::msg::IterationStats"), x.forward_seconds, x.backward_seconds, x.update_seconds,
           x.exposed_comm_seconds, x.samples, x.vertices, x.comm_seconds, x.hidden_comm_seconds, x.bytes_sent,
           x.learning_rate, x.data_wait_seconds, x.buckets, x.await_seconds, x.reduced_during_step);
}

struct IterationDone {
  std::uint64_t iteration = 0;
  std::int32_t rank = 0;
  float loss = 0;
  IterationStats stats;
};

// On the wire the loss goes as its bits: CAF 0.17's portable float encoding
// does not keep NaN and infinity, and a NaN loss must stop training on a
// coordinator in another process too (iteration.cpp).
caf::error inspect(caf::serializer& f, IterationDone& x);
caf::error inspect(caf::deserializer& f, IterationDone& x);

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, IterationDone& x) {
  return f(caf::meta::type_name("taihu::msg::IterationDone"), x.iteration, x.rank, x.loss, x.stats);
}

}  // namespace taihu::msg
