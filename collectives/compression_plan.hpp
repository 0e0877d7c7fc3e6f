#pragma once
// How each fusion bucket's gradients travel: plain allreduce, or RedSync's
// compressed flow (core/compress) run by a compressed shard actor
// (actors/sync/compressed_shard_actor.hpp). Plain C++: the coordinator and
// the nodes both derive the same plan from the same config.
//
// [compress] (core/compress/policy.hpp) chooses the method per parameter;
// method = none (or no [compress] section) keeps plain allreduce everywhere.
// A bucket with a sparse (or fp16) segment goes through the compressed
// shard's packed allgather, its dense segments included. A bucket whose
// parameters all come out dense keeps its allreduce; when the compressor
// corrects momentum (or clips), each rank's gradient passes through its own
// compressor first, so momentum covers every parameter the same way.
//
// Scaling: the compressed shard compresses the worker's raw gradient
// (scale 1) and returns the dense SUM of every rank's decompressed message;
// the worker divides by N when it unpacks (as after a plain allreduce). The
// pair is linear, so this equals compressing with scale 1/N up to rounding;
// clip_norm then bounds each worker's raw gradient at clip_norm/sqrt(N).
//
// Momentum: compressor momentum > 0 means momentum correction happens in the
// compressor, so [solver] momentum must be 0 (checked here: a config error
// otherwise). Weight decay is then applied by the solver to the reduced
// gradient, outside the momentum.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/compress/compressor.hpp"
#include "core/compress/policy.hpp"
#include "core/config/config.hpp"

namespace taihu::collectives {

class Buckets;
struct Bucket;

struct BucketCompression {
  // Empty: plain allreduce. Else the segments tile the bucket in bucket order.
  std::vector<compress::Segment> segments;
  bool compressed() const { return !segments.empty(); }
  // Every segment dense fp32: the bucket keeps its allreduce (2(P-1)/P·4n
  // bytes a rank, not the allgather's (P-1)·4n); the compressor only applies
  // momentum correction / clipping first, and only when one asks for it.
  bool dense_only() const;
  bool needs_precompress() const;
  // The packed allgather (actors/sync/compressed_shard_actor.hpp) carries it.
  bool allgather() const { return compressed() && !dense_only(); }
  // Entries a message carries per iteration after warm-up (density applied
  // to sparse segments, dense ones count whole), and a short description.
  double expected_entries() const;
  std::string describe() const;
};

// The layers of one bucket as the policy sees them, in bucket order.
// `output_layer`: the name of the net's last layer with parameters (never quantized).
std::vector<compress::LayerInfo> bucket_layers(const Bucket& bucket, const std::string& output_layer);

// Reads [compress] (marking its keys used) and plans every bucket; throws
// ConfigError when compressor momentum > 0 meets [solver] momentum != 0.
std::vector<BucketCompression> plan_compression(const config::Document& doc, const Buckets& buckets, int workers);

// Same, from a policy (tests, benchmarks).
std::vector<BucketCompression> plan_compression(const compress::Policy& policy, const Buckets& buckets, int workers);

// Bytes all ranks together send per iteration for a bucket of n floats with
// dense ring allreduce: P · 2(P-1)/P · 4n.
double dense_ring_bytes_all_ranks(std::size_t elements, int workers);

}  // namespace taihu::collectives
