#pragma once
// Data sets of stored images, read and decoded sample by sample as batches
// ask for them: image files (a folder of class folders or a list file,
// image_index.hpp) or the Datum records of an LMDB database (Caffe's image
// sets). Each sample passes through an ImageTransform: the training view is
// augmented by the sample's draw key, the evaluation view is centred.
//
// Nothing is held in memory but the index, so the data may be far larger
// than RAM, and each rank reads only the samples of its own share.
//
// A file or record that cannot be used (unreadable, truncated, not an image,
// of the wrong size, a label out of range) is logged once and counted; the
// batch takes another sample in its place (batch_plan.hpp).

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

#include "core/data/dataset.hpp"
#include "core/data/image_codec.hpp"
#include "core/data/image_index.hpp"
#include "core/data/image_transform.hpp"

namespace taihu {

class LmdbReader;

// Where the images of an ImageDataset come from.
class ImageRecords {
 public:
  virtual ~ImageRecords() = default;
  virtual int64_t size() const = 0;
  // What a log line calls record `index` (a file path, a database key).
  virtual std::string name(int64_t index) const = 0;
  // Decodes record `index` into `image` and returns its label. Throws
  // DataError if the record cannot be read. Safe from several threads.
  virtual int32_t read(int64_t index, int min_shorter_side, Image& image) const = 0;
  // The label without decoding.
  virtual int32_t label(int64_t index) const = 0;
  // Left out while listing (ImageIndex's counts).
  virtual int64_t left_out() const { return 0; }
};

// Image files, by an ImageIndex.
std::unique_ptr<ImageRecords> image_file_records(ImageIndex index, int channels);
// The records of an LMDB database, raw or encoded Datums.
std::unique_ptr<ImageRecords> lmdb_records(std::shared_ptr<const LmdbReader> database, int channels);

class ImageDataset final : public Dataset {
 public:
  // `classes`: labels must lie in [0, classes). `what` names the data in
  // messages ("train images in /data/train"). The first record is read to
  // learn the stored image size where the transform needs it; throws
  // DataError if none of the first records can be read.
  ImageDataset(std::unique_ptr<ImageRecords> records, const TransformConfig& transform, int classes, std::string what,
               int64_t limit = 0);

  int64_t size() const override { return size_; }
  Shape sample_shape() const override { return transform_->output_shape(); }
  int num_classes() const override { return classes_; }
  int label(int64_t index) const override;
  void sample(int64_t index, float* out) const override;
  int read_sample(int64_t index, float* out, uint64_t draw) const override;
  int64_t skipped() const override;
  int64_t left_out() const override { return records_->left_out(); }

  const ImageRecords& records() const { return *records_; }

 private:
  // Logs and counts record `index` as unusable, once.
  void skip(int64_t index, const std::string& why) const;

  std::unique_ptr<ImageRecords> records_;
  std::unique_ptr<ImageTransform> transform_;
  int classes_;
  std::string what_;
  int64_t size_;
  int decode_shorter_side_ = 0;
  mutable std::mutex skipped_mutex_;
  mutable std::unordered_set<int64_t> skipped_;
};

}  // namespace taihu
