#pragma once
// An in-memory data set of 8-bit samples (IDX and CIFAR images): raw bytes
// are kept (4x smaller than floats) and preprocessed when a sample is read.

#include <array>
#include <cstdint>
#include <vector>

#include "core/data/dataset.hpp"

namespace taihu {

class ByteDataset final : public Dataset {
 public:
  // `pixels` holds labels.size() samples of sample_shape.count() bytes each.
  // Labels must already be validated against num_classes.
  ByteDataset(Shape sample_shape, int num_classes, std::vector<uint8_t> pixels, std::vector<uint8_t> labels,
              const Preprocess& preprocess);

  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  Shape sample_shape() const override { return shape_; }
  int num_classes() const override { return classes_; }
  int label(int64_t index) const override { return labels_[static_cast<size_t>(index)]; }
  void sample(int64_t index, float* out) const override;

  // Keeps only the first `count` samples (no-op if count >= size()).
  void truncate(int64_t count);

 private:
  Shape shape_;
  int classes_;
  int64_t sample_bytes_;
  int64_t channel_bytes_;
  std::vector<uint8_t> pixels_;
  std::vector<uint8_t> labels_;
  // Preprocessed value of every byte, per channel: one table lookup per pixel.
  std::vector<std::array<float, 256>> tables_;
};

// Throws DataError unless mean and std fit `channels` (none, one or one each).
void check_preprocess(const Preprocess& preprocess, int64_t channels);

}  // namespace taihu
