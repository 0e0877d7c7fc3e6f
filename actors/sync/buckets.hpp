#pragma once
// Fusion buckets: a net's learnable parameters grouped, in the order backward
// produces their gradients (last layer first), into buckets of at most
// `bucket_bytes` each, so that one collective moves many small gradients at
// once and starts as soon as the bucket's lowest layer has run backward.
//
// A layer's params are never split between buckets: a layer larger than
// `bucket_bytes` gets a bucket of its own. bucket_bytes = 0 means one bucket for everything (swCaffe's "pack
// everything"). Each bucket is a contiguous float buffer laid out as its
// params in bucket order; pack() copies the params' diffs into one,
// unpack() writes a (reduced) buffer back, scaled.
//
// Plain C++ (no actors): the worker actor calls it.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/layers/layer.hpp"

namespace taihu {
class Net;
}

namespace taihu::sync {

struct BucketSlice {
  Param* param = nullptr;
  std::size_t offset = 0;  // in floats, within the bucket
  std::size_t count = 0;
};

struct Bucket {
  std::vector<BucketSlice> slices;
  std::size_t elements = 0;
  // The lowest layer index holding one of its params: once backward of that
  // layer has run, every gradient of the bucket is final.
  std::size_t first_layer = 0;
};

class Buckets {
 public:
  Buckets(Net& net, std::size_t bucket_bytes);

  std::size_t size() const { return buckets_.size(); }
  const Bucket& operator[](std::size_t b) const { return buckets_[b]; }
  const std::vector<Bucket>& all() const { return buckets_; }
  std::size_t total_elements() const;

  // Buckets that become complete when backward of `layer` has run.
  const std::vector<std::uint32_t>& ready_after(std::size_t layer) const { return ready_after_[layer]; }

  // Copies bucket b's parameter diffs into `out` (elements() floats).
  void pack(std::size_t b, float* out) const;
  // diff = scale * in, for bucket b's parameters.
  void unpack(std::size_t b, const float* in, float scale) const;

 private:
  std::vector<Bucket> buckets_;
  std::vector<std::vector<std::uint32_t>> ready_after_;  // per layer
};

}  // namespace taihu::sync
