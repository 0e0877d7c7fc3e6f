#include "core/data/byte_dataset.hpp"

#include <algorithm>

#include "core/common/check.hpp"

namespace taihu {

void check_preprocess(const Preprocess& preprocess, int64_t channels) {
  const auto fits = [&](const std::vector<float>& values) {
    return values.empty() || values.size() == 1 || static_cast<int64_t>(values.size()) == channels;
  };
  require<DataError>(fits(preprocess.mean), "mean has {} values but samples have {} channels",
                     preprocess.mean.size(), channels);
  require<DataError>(fits(preprocess.std), "std has {} values but samples have {} channels",
                     preprocess.std.size(), channels);
}

ByteDataset::ByteDataset(Shape sample_shape, int num_classes, std::vector<uint8_t> pixels,
                         std::vector<uint8_t> labels, const Preprocess& preprocess)
    : shape_(std::move(sample_shape)),
      classes_(num_classes),
      sample_bytes_(shape_.count()),
      pixels_(std::move(pixels)),
      labels_(std::move(labels)) {
  const int64_t channels = channels_of(shape_);
  channel_bytes_ = sample_bytes_ / channels;
  require<DataError>(static_cast<int64_t>(pixels_.size()) == sample_bytes_ * size(),
                     "{} bytes of samples do not match {} labels of shape {}", pixels_.size(), labels_.size(),
                     shape_.str());
  check_preprocess(preprocess, channels);
  tables_.resize(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    const auto pick = [&](const std::vector<float>& values, float fallback) {
      return values.empty() ? fallback : values[values.size() == 1 ? 0 : static_cast<size_t>(c)];
    };
    const float mean = pick(preprocess.mean, 0.0f);
    const float stddev = pick(preprocess.std, 1.0f);
    for (int v = 0; v < 256; ++v) tables_[c][v] = (static_cast<float>(v) * preprocess.scale - mean) / stddev;
  }
}

void ByteDataset::sample(int64_t index, float* out) const {
  const uint8_t* in = pixels_.data() + index * sample_bytes_;
  for (const auto& table : tables_) {
    for (int64_t i = 0; i < channel_bytes_; ++i) out[i] = table[in[i]];
    in += channel_bytes_;
    out += channel_bytes_;
  }
}

void ByteDataset::truncate(int64_t count) {
  if (count >= size()) return;
  labels_.resize(static_cast<size_t>(count));
  pixels_.resize(static_cast<size_t>(count * sample_bytes_));
  labels_.shrink_to_fit();
  pixels_.shrink_to_fit();
}

}  // namespace taihu
