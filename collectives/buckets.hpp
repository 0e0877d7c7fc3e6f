#pragma once
// Fusion buckets: a model's learnable parameters grouped, in the order
// backward produces their gradients (last gradient stage first; a stage is a
// layer of a net, core/net/gradient_stages.hpp), into buckets of at most
// `bucket_bytes` each, so that one collective moves many small gradients at
// once and starts as soon as the bucket's lowest stage has run backward.
//
// A stage's params are never split between buckets: a stage larger than
// `bucket_bytes` gets a bucket of its own. bucket_bytes = 0 means one bucket for everything (swCaffe's "pack
// everything"). Each bucket is a contiguous float buffer laid out as its
// params in bucket order; pack() copies the params' diffs into one,
// unpack() writes a (reduced) buffer back, scaled.
//
// Plain C++ (no actors): the worker actor calls it.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/net/gradient_stages.hpp"

namespace taihu::collectives {

struct BucketSlice {
  Param* param = nullptr;
  std::size_t offset = 0;  // in floats, within the bucket
  std::size_t count = 0;
};

struct Bucket {
  std::vector<BucketSlice> slices;
  std::size_t elements = 0;
  // The lowest stage holding one of its params: once backward of that stage
  // has run, every gradient of the bucket is final.
  std::size_t first_stage = 0;
};

class Buckets {
 public:
  Buckets(std::span<const GradientStage> stages, std::size_t bucket_bytes);
  // A net's layers as the stages.
  Buckets(Net& net, std::size_t bucket_bytes);

  std::size_t size() const { return buckets_.size(); }
  const Bucket& operator[](std::size_t b) const { return buckets_[b]; }
  const std::vector<Bucket>& all() const { return buckets_; }
  std::size_t total_elements() const;

  // Buckets that become complete when backward of `stage` has run.
  const std::vector<std::uint32_t>& ready_after(std::size_t stage) const { return ready_after_[stage]; }

  // Copies bucket b's parameter diffs into `out` (elements() floats).
  void pack(std::size_t b, float* out) const;
  // diff = scale * in, for bucket b's parameters.
  void unpack(std::size_t b, const float* in, float scale) const;

 private:
  std::vector<Bucket> buckets_;
  std::vector<std::vector<std::uint32_t>> ready_after_;  // per stage
};

}  // namespace taihu::collectives
