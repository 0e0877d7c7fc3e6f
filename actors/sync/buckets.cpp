#include "actors/sync/buckets.hpp"

#include <cstring>

#include "core/net/net.hpp"

namespace taihu::sync {

Buckets::Buckets(Net& net, std::size_t bucket_bytes) {
  ready_after_.resize(net.num_layers());
  Bucket current;
  auto close = [&] {
    if (current.slices.empty()) return;
    ready_after_[current.first_layer].push_back(static_cast<std::uint32_t>(buckets_.size()));
    buckets_.push_back(std::move(current));
    current = Bucket{};
  };
  for (std::size_t layer = net.num_layers(); layer-- > 0;) {
    auto& params = net.layer(layer).params();
    // A layer's params stay together: a bucket that would need only part of
    // a layer waits for that layer's backward anyway.
    std::size_t layer_elements = 0;
    for (const Param& p : params)
      if (p.learnable) layer_elements += static_cast<std::size_t>(p.blob->count());
    if (layer_elements == 0) continue;
    const bool fits = bucket_bytes == 0 || (current.elements + layer_elements) * sizeof(float) <= bucket_bytes;
    if (!current.slices.empty() && !fits) close();
    for (std::size_t k = params.size(); k-- > 0;) {
      Param& p = params[k];
      const auto count = static_cast<std::size_t>(p.blob->count());
      if (!p.learnable || count == 0) continue;
      current.slices.push_back(BucketSlice{&p, current.elements, count});
      current.elements += count;
    }
    current.first_layer = layer;
  }
  close();
}

std::size_t Buckets::total_elements() const {
  std::size_t n = 0;
  for (const auto& b : buckets_) n += b.elements;
  return n;
}

void Buckets::pack(std::size_t b, float* out) const {
  for (const auto& s : buckets_[b].slices) {
    std::memcpy(out + s.offset, s.param->blob->diff().ptr(), s.count * sizeof(float));
  }
}

void Buckets::unpack(std::size_t b, const float* in, float scale) const {
  for (const auto& s : buckets_[b].slices) {
    float* diff = s.param->blob->diff().ptr();
    const float* src = in + s.offset;
    for (std::size_t i = 0; i < s.count; ++i) diff[i] = scale * src[i];
  }
}

}  // namespace taihu::sync
