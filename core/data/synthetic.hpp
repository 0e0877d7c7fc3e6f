#pragma once
// Synthetic samples of any shape and class count, for benchmarking nets whose
// real data (ImageNet) is not at hand. Nothing is stored per sample: sample i
// is regenerated from (seed, split, i) on every read, so a data set of any
// size costs only its class patterns.
//
// A sample is its class's pattern plus uniform noise in [-1, 1). The pattern
// is piecewise constant: each channel is cut into a grid of up to 8x8 cells
// whose values are uniform in [-1, 1], so classes differ in the mean of
// every cell and a small net learns them quickly. Patterns depend only on
// the seed, so the train and test splits share them; labels and noise differ.

#include <cstdint>
#include <vector>

#include "core/data/dataset.hpp"

namespace taihu {

class SyntheticDataset final : public Dataset {
 public:
  SyntheticDataset(Shape sample_shape, int num_classes, int64_t size, Split split, uint64_t seed,
                   const Preprocess& preprocess = {});

  int64_t size() const override { return size_; }
  Shape sample_shape() const override { return shape_; }
  int num_classes() const override { return classes_; }
  int label(int64_t index) const override;
  void sample(int64_t index, float* out) const override;

 private:
  Shape shape_;
  int classes_;
  int64_t size_;
  // The sample seen as channels x rows x cols (leading axes merged into channels).
  int64_t channels_, rows_, cols_;
  int64_t grid_rows_, grid_cols_;
  uint64_t label_seed_, noise_seed_;
  std::vector<float> patterns_;        // classes x channels x grid_rows x grid_cols
  std::vector<int32_t> cell_of_row_;   // row -> grid row
  std::vector<int32_t> cell_of_col_;   // col -> grid col
  std::vector<float> gain_, offset_;   // per preprocessing channel: value * gain + offset
  int64_t preprocess_channels_;
};

}  // namespace taihu
