#include "core/data/synthetic.hpp"

#include <algorithm>

#include "core/common/check.hpp"
#include "core/common/random.hpp"
#include "core/data/byte_dataset.hpp"

namespace taihu {

namespace {

constexpr int64_t max_grid = 8;

uint64_t mix(uint64_t seed, int64_t index) {
  uint64_t state = seed ^ (static_cast<uint64_t>(index) * 0xd1b54a32d192ed03ULL);
  return splitmix64(state);
}

}  // namespace

SyntheticDataset::SyntheticDataset(Shape sample_shape, int num_classes, int64_t size, Split split, uint64_t seed,
                                   const Preprocess& preprocess)
    : shape_(std::move(sample_shape)), classes_(num_classes), size_(size) {
  require<DataError>(shape_.rank() >= 1 && shape_.count() > 0, "synthetic samples need a non-empty shape, got {}",
                     shape_.str());
  require<DataError>(classes_ >= 1, "synthetic data needs at least one class, got {}", classes_);
  require<DataError>(size_ >= 0, "synthetic data set size must not be negative, got {}", size_);
  const size_t rank = shape_.rank();
  cols_ = shape_[rank - 1];
  rows_ = rank >= 3 ? shape_[rank - 2] : 1;
  channels_ = shape_.count() / (rows_ * cols_);
  grid_rows_ = std::min(rows_, max_grid);
  grid_cols_ = std::min(cols_, max_grid);
  for (int64_t r = 0; r < rows_; ++r) cell_of_row_.push_back(static_cast<int32_t>(r * grid_rows_ / rows_));
  for (int64_t c = 0; c < cols_; ++c) cell_of_col_.push_back(static_cast<int32_t>(c * grid_cols_ / cols_));

  Rng pattern_rng(derive_seed(seed, "synthetic.pattern"));
  patterns_.resize(static_cast<size_t>(classes_ * channels_ * grid_rows_ * grid_cols_));
  for (auto& value : patterns_) value = pattern_rng.uniform(-1.0f, 1.0f);
  const std::string stream = std::string("synthetic.") + split_name(split);
  label_seed_ = derive_seed(seed, stream + ".label");
  noise_seed_ = derive_seed(seed, stream + ".noise");

  preprocess_channels_ = channels_of(shape_);
  check_preprocess(preprocess, preprocess_channels_);
  for (int64_t c = 0; c < preprocess_channels_; ++c) {
    const auto pick = [&](const std::vector<float>& values, float fallback) {
      return values.empty() ? fallback : values[values.size() == 1 ? 0 : static_cast<size_t>(c)];
    };
    const float stddev = pick(preprocess.std, 1.0f);
    gain_.push_back(preprocess.scale / stddev);
    offset_.push_back(-pick(preprocess.mean, 0.0f) / stddev);
  }
}

int SyntheticDataset::label(int64_t index) const {
  return static_cast<int>(mix(label_seed_, index) % static_cast<uint64_t>(classes_));
}

void SyntheticDataset::sample(int64_t index, float* out) const {
  const int64_t cls = label(index);
  Rng rng(mix(noise_seed_, index));
  // Four noise values per 64 random bits, uniform in [-1, 1).
  uint64_t bits = 0;
  int left = 0;
  const auto noise = [&] {
    if (left == 0) {
      bits = rng();
      left = 4;
    }
    const float value = static_cast<float>(bits & 0xffff) * (2.0f / 65536.0f) - 1.0f;
    bits >>= 16;
    --left;
    return value;
  };
  float* dst = out;
  for (int64_t c = 0; c < channels_; ++c) {
    const float* channel_pattern = patterns_.data() + (cls * channels_ + c) * grid_rows_ * grid_cols_;
    for (int64_t r = 0; r < rows_; ++r) {
      const float* row_pattern = channel_pattern + cell_of_row_[r] * grid_cols_;
      for (int64_t col = 0; col < cols_; ++col) dst[col] = row_pattern[cell_of_col_[col]] + noise();
      dst += cols_;
    }
  }
  const int64_t per_channel = shape_.count() / preprocess_channels_;
  for (int64_t c = 0; c < preprocess_channels_; ++c) {
    if (gain_[c] == 1.0f && offset_[c] == 0.0f) continue;
    float* p = out + c * per_channel;
    const float gain = gain_[c], offset = offset_[c];
    for (int64_t i = 0; i < per_channel; ++i) p[i] = p[i] * gain + offset;
  }
}

}  // namespace taihu
