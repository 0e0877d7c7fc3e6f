#include "core/data/image_dataset.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/common/check.hpp"
#include "core/data/caffe_datum.hpp"
#include "core/data/file_bytes.hpp"
#include "core/data/lmdb_database.hpp"

namespace taihu {

namespace {

constexpr int64_t logged_skips = 20;  // then only counted

class FileRecords final : public ImageRecords {
 public:
  FileRecords(ImageIndex index, int channels) : index_(std::move(index)), channels_(channels) {}
  int64_t size() const override { return index_.size(); }
  std::string name(int64_t index) const override { return index_.files[static_cast<size_t>(index)].string(); }
  int32_t label(int64_t index) const override { return index_.labels[static_cast<size_t>(index)]; }
  int64_t left_out() const override { return index_.left_out(); }
  int32_t read(int64_t index, int min_shorter_side, Image& image) const override {
    const auto bytes = read_raw_file_bytes(index_.files[static_cast<size_t>(index)]);
    image = decode_image(bytes, channels_, min_shorter_side);
    return label(index);
  }

 private:
  ImageIndex index_;
  int channels_;
};

class LmdbRecords final : public ImageRecords {
 public:
  LmdbRecords(std::shared_ptr<const LmdbReader> database, int channels)
      : database_(std::move(database)), channels_(channels) {}
  int64_t size() const override { return database_->size(); }
  std::string name(int64_t index) const override {
    return fmt::format("record '{}' of {}", database_->key(index), database_->path().string());
  }
  int32_t label(int64_t index) const override {
    int32_t label = 0;
    database_->read(index, [&](std::span<const uint8_t> record) { label = parse_datum_header(record).label; });
    return label;
  }
  int32_t read(int64_t index, int min_shorter_side, Image& image) const override {
    int32_t label = 0;
    database_->read(index, [&](std::span<const uint8_t> record) {
      DatumImage datum = parse_datum(record, channels_, min_shorter_side);
      image = std::move(datum.image);
      label = datum.label;
    });
    return label;
  }

 private:
  std::shared_ptr<const LmdbReader> database_;
  int channels_;
};

}  // namespace

std::unique_ptr<ImageRecords> image_file_records(ImageIndex index, int channels) {
  return std::make_unique<FileRecords>(std::move(index), channels);
}

std::unique_ptr<ImageRecords> lmdb_records(std::shared_ptr<const LmdbReader> database, int channels) {
  return std::make_unique<LmdbRecords>(std::move(database), channels);
}

ImageDataset::ImageDataset(std::unique_ptr<ImageRecords> records, const TransformConfig& transform, int classes,
                           std::string what, int64_t limit)
    : records_(std::move(records)), classes_(classes), what_(std::move(what)) {
  size_ = records_->size();
  if (limit > 0) size_ = std::min(size_, limit);
  require<DataError>(size_ > 0, "{}: no images", what_);
  require<DataError>(classes_ > 0, "{}: the number of classes must be positive", what_);
  // The stored size matters where neither a crop nor an exact resize fixes
  // the sample shape (or a mean image must match it): learnt from the first
  // readable record; others of another size are skipped.
  int height = 0, width = 0;
  const bool fixed = (transform.crop_height > 0 && transform.crop_width > 0) ||
                     (transform.resize_height > 0 && transform.resize_width > 0);
  if (!fixed || (!transform.mean_image.empty() && transform.resize_shorter == 0 && transform.resize_height == 0)) {
    std::string first_error;
    for (int64_t i = 0; i < std::min<int64_t>(size_, 16) && height == 0; ++i) {
      try {
        Image image;
        records_->read(i, 0, image);
        height = image.height;
        width = image.width;
      } catch (const DataError& e) {
        if (first_error.empty()) first_error = fmt::format("{}: {}", records_->name(i), e.what());
      }
    }
    require<DataError>(height > 0, "{}: none of the first images can be read ({})", what_, first_error);
  }
  transform_ = std::make_unique<ImageTransform>(transform, height, width);
  decode_shorter_side_ = transform_->decode_shorter_side();
}

int ImageDataset::label(int64_t index) const { return records_->label(index); }

void ImageDataset::sample(int64_t index, float* out) const {
  if (read_sample(index, out, 0) < 0)
    raise<DataError>("{}: {} cannot be read (see the warning above)", what_, records_->name(index));
}

int ImageDataset::read_sample(int64_t index, float* out, uint64_t draw) const {
  Image image;
  int32_t label = 0;
  try {
    label = records_->read(index, decode_shorter_side_, image);
    if (label < 0 || label >= classes_) {
      skip(index, fmt::format("label {} is out of range (the data set has {} classes)", label, classes_));
      return -1;
    }
    transform_->apply(image, out, draw);
  } catch (const DataError& e) {
    skip(index, e.what());
    return -1;
  }
  return label;
}

void ImageDataset::skip(int64_t index, const std::string& why) const {
  std::lock_guard lock(skipped_mutex_);
  if (!skipped_.insert(index).second) return;
  const auto count = static_cast<int64_t>(skipped_.size());
  if (count <= logged_skips)
    spdlog::warn("{}: skipped {}: {}", what_, records_->name(index), why);
  if (count == logged_skips)
    spdlog::warn("{}: {} images skipped; further ones are counted (in the report) but not logged", what_, count);
}

int64_t ImageDataset::skipped() const {
  std::lock_guard lock(skipped_mutex_);
  return static_cast<int64_t>(skipped_.size());
}

}  // namespace taihu
