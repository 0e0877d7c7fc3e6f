#include "collectives/buckets.hpp"

#include <cstring>


namespace taihu::collectives {

Buckets::Buckets(std::span<const GradientStage> stages, std::size_t bucket_bytes) {
  ready_after_.resize(stages.size());
  Bucket current;
  auto close = [&] {
    if (current.slices.empty()) return;
    ready_after_[current.first_stage].push_back(static_cast<std::uint32_t>(buckets_.size()));
    buckets_.push_back(std::move(current));
    current = Bucket{};
  };
  for (std::size_t stage = stages.size(); stage-- > 0;) {
    const auto& params = stages[stage].params;
    // A stage's params stay together: a bucket that would need only part of
    // a stage waits for that stage's backward anyway.
    std::size_t stage_elements = 0;
    for (const Param* p : params) stage_elements += static_cast<std::size_t>(p->blob->count());
    if (stage_elements == 0) continue;
    const bool fits = bucket_bytes == 0 || (current.elements + stage_elements) * sizeof(float) <= bucket_bytes;
    if (!current.slices.empty() && !fits) close();
    for (std::size_t k = params.size(); k-- > 0;) {
      Param* p = params[k];
      const auto count = static_cast<std::size_t>(p->blob->count());
      if (count == 0) continue;
      current.slices.push_back(BucketSlice{p, current.elements, count});
      current.elements += count;
    }
    current.first_stage = stage;
  }
  close();
}

Buckets::Buckets(Net& net, std::size_t bucket_bytes) : Buckets(layer_stages(net), bucket_bytes) {}

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

}  // namespace taihu::collectives
