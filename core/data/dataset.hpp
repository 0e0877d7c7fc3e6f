#pragma once
// Data sets are random-access collections of (sample, label) pairs held in
// memory; BatchSource (batch_source.hpp) turns one into shuffled, prefetched
// mini-batches.
//
//   [data]
//   source = fashion-mnist | mnist | idx | cifar10 | images | lmdb | synthetic
//   dir = /usr/share/datasets/fashion-mnist   # default only for fashion-mnist
//   train_images = train-images-idx3-ubyte.gz  # idx sources; relative to dir
//   train_labels = ...   test_images = ...   test_labels = ...
//   classes = 10         # idx and synthetic
//   scale = 0.00392157   # default 1/255 for byte sources, 1 for synthetic
//   mean = 0.5           # one value, or one per channel (optional)
//   std = 0.25           # likewise
//   shape = 3 224 224    # synthetic: sample shape
//   train_size = 1024    test_size = 256        # synthetic
//   prefetch = 4         # batch buffers filled ahead (the feed's bounded pool)
//   decoders = 1         # decoder actors of the process (batch_feed.hpp)
//   shuffle = true
//   limit_train = 0      limit_test = 0         # first N samples only; 0 = all
//
// Stored images (image_dataset.hpp), read as batches need them:
//   source = images      # JPEG/PNG files
//   train = train/       # a folder of class folders, or a list file of
//   test = val/          #   `path label` lines; relative to the config's folder
//   root = /data/imgs    # list files: what their paths are relative to
//                        #   (default: the list file's folder)
//   source = lmdb        # Caffe's image LMDBs (Datum records, raw or encoded)
//   train = train_lmdb   test = val_lmdb
//   classes = 1000       # lmdb: required; list files: default 1 + the largest label
//   channels = 3         # 1 (grey) or 3; images are converted
//   resize = 256         # the shorter side (aspect kept); or `resize = H W`
//   crop = 224           # or `crop = H W`: random when training, centred when testing
//   mirror = false       # random horizontal flips when training
//   mean_file = mean.binaryproto   # Caffe's mean image, subtracted before `scale`
//   channel_order = rgb  # or bgr: Caffe's order, for models trained in Caffe
//
// Every option is read by DataConfig::read, so a caller that rejects unused
// keys afterwards reports typos. Options that do not apply to the chosen
// source are left unread and therefore reported too.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/data/image_transform.hpp"
#include "core/data/preprocess.hpp"
#include "core/tensor/shape.hpp"

namespace taihu {

enum class Split { train, test };

const char* split_name(Split split);

// Channels for preprocessing: the first axis of a sample of rank >= 2, else 1.
int64_t channels_of(const Shape& sample_shape);

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // Shape of one sample, without the batch axis (e.g. 1x28x28).
  virtual Shape sample_shape() const = 0;
  virtual int num_classes() const = 0;
  virtual int label(int64_t index) const = 0;
  // Writes sample `index` (sample_shape().count() preprocessed floats) to `out`:
  // the evaluation view (no random augmentation). Safe to call concurrently
  // from several threads; throws DataError where the sample cannot be read.
  virtual void sample(int64_t index, float* out) const = 0;

  // What a training batch reads: sample `index` with the random augmentation
  // seeded by `draw` (0: none, as sample()), and its label. Data sets read
  // from files return -1 for a sample that cannot be read (a corrupt image or
  // record), after counting it in skipped() and logging it once; the batch
  // then takes another sample in its place (batch_plan.hpp).
  virtual int read_sample(int64_t index, float* out, uint64_t draw) const {
    (void)draw;
    sample(index, out);
    return label(index);
  }
  // Distinct samples found unreadable so far.
  virtual int64_t skipped() const { return 0; }
  // What listing the data left out: files that are not images, empty class
  // folders, malformed list lines or labels out of range.
  virtual int64_t left_out() const { return 0; }
};

// A file an idx source reads, and the config key that names it.
struct DataFile {
  std::filesystem::path path;
  std::string key;     // e.g. "train_images"
  bool exact = false;  // false for default names: path.gz is tried, then path
};

// The [data] section, parsed and validated.
struct DataConfig {
  std::string source = "fashion-mnist";
  std::filesystem::path dir;  // resolved against the config file's folder
  // Files of idx sources (fashion-mnist, mnist, idx); unused otherwise.
  DataFile train_images, train_labels, test_images, test_labels;
  int classes = 10;
  Preprocess preprocess;
  Shape shape;  // synthetic only
  int64_t train_size = 1024;
  int64_t test_size = 256;
  // images, lmdb: where the splits are, and the transform (its preprocess
  // unused: `preprocess` above is the one).
  std::filesystem::path train_path, test_path;
  std::filesystem::path root;  // list files; empty: each list's folder
  TransformConfig transform;
  int prefetch = 4;
  int decoders = 1;
  bool shuffle = true;
  int64_t limit_train = 0;
  int64_t limit_test = 0;

  // Reads every key that applies to the chosen source; throws ConfigError
  // naming file, line and key for bad values.
  static DataConfig read(const config::Document& doc, const config::Section& data);
};

std::shared_ptr<const Dataset> make_dataset(const DataConfig& config, Split split);

// Builds the data set described by a [data] section, for the given split.
// Errors name the config key; a missing file says how to get the data.
std::shared_ptr<const Dataset> make_dataset(const config::Document& doc, const config::Section& data,
                                            Split split);

}  // namespace taihu
