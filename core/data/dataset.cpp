#include "core/data/dataset.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/common/check.hpp"
#include "core/data/caffe_datum.hpp"
#include "core/data/cifar10.hpp"
#include "core/data/idx.hpp"
#include "core/data/image_dataset.hpp"
#include "core/data/image_index.hpp"
#include "core/data/lmdb_database.hpp"
#include "core/data/synthetic.hpp"

namespace taihu {

namespace {

namespace fs = std::filesystem;

constexpr const char* fashion_mnist_dir = "/usr/share/datasets/fashion-mnist";
constexpr uint64_t synthetic_seed = 0;

struct IdxNames {
  const char* key;
  const char* base;  // standard file name, without .gz
  const char* what;
};
constexpr IdxNames idx_names[] = {{"train_images", "train-images-idx3-ubyte", "train images"},
                                  {"train_labels", "train-labels-idx1-ubyte", "train labels"},
                                  {"test_images", "t10k-images-idx3-ubyte", "test images"},
                                  {"test_labels", "t10k-labels-idx1-ubyte", "test labels"}};

bool is_idx_source(const std::string& source) {
  return source == "fashion-mnist" || source == "mnist" || source == "idx";
}

constexpr DataFile DataConfig::*idx_files[] = {&DataConfig::train_images, &DataConfig::train_labels,
                                               &DataConfig::test_images, &DataConfig::test_labels};

std::vector<float> read_per_channel(const config::Section& data, const char* key, int64_t channels) {
  auto values = data.get_list_or<float>(key, {});
  if (!values.empty() && values.size() != 1 && static_cast<int64_t>(values.size()) != channels)
    throw data.error(key, fmt::format("has {} values; give one for all channels or one per channel ({})",
                                      values.size(), channels));
  for (float v : values)
    if (!std::isfinite(v)) throw data.error(key, "values must be finite");
  return values;
}

int64_t read_count(const config::Section& data, const char* key, int64_t fallback, int64_t minimum,
                   int64_t maximum = std::numeric_limits<int64_t>::max()) {
  const auto value = data.get_or<int64_t>(key, fallback);
  if (value < minimum) throw data.error(key, fmt::format("must be at least {}, got {}", minimum, value));
  if (value > maximum) throw data.error(key, fmt::format("must be at most {}, got {}", maximum, value));
  return value;
}

// The path of an idx file, or a DataError that says how to get it.
fs::path locate(const DataConfig& config, const DataFile& file, const char* what) {
  std::vector<fs::path> tried;
  if (!file.exact) tried.push_back(fs::path(file.path.string() + ".gz"));
  tried.push_back(file.path);
  std::error_code ec;
  for (const auto& path : tried)
    if (fs::is_regular_file(path, ec)) return path;

  const std::string tried_text =
      tried.size() == 1 ? tried[0].string() : fmt::format("{} and {}", tried[0].string(), tried[1].string());
  if (config.source == "fashion-mnist")
    raise<DataError>(
        "Fashion-MNIST {} not found (looked for {}). Install the data set with `apt-get install "
        "dataset-fashion-mnist` (it puts the files in {}), or set `dir` (or `{}`) in [data] to where they are.",
        what, tried_text, fashion_mnist_dir, file.key);
  if (config.source == "mnist")
    raise<DataError>(
        "MNIST {} not found (looked for {}). Download train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
        "t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz (gzipped or not) from "
        "https://yann.lecun.com/exdb/mnist/ into the folder that `dir` in [data] names, or set `{}` to the file.",
        what, tried_text, file.key);
  raise<DataError>("IDX {} not found (looked for {}); set `{}` in [data] (relative to `dir`) to an existing file.",
                   what, tried_text, file.key);
}

bool is_stored_image_source(const std::string& source) { return source == "images" || source == "lmdb"; }

// `key = S` or `key = H W`: one side for both (crop) or the shorter side
// (resize, with `shorter`), or both sides.
void read_size(const config::Section& data, const char* key, int& height, int& width, int* shorter) {
  if (!data.has(key)) return;
  const auto sides = data.get_list<int64_t>(key);
  if (sides.size() != 1 && sides.size() != 2)
    throw data.error(key, fmt::format("give one size or two (height width), got {} values", sides.size()));
  for (auto side : sides)
    if (side <= 0 || side > 65535) throw data.error(key, fmt::format("sizes must lie in 1..65535, got {}", side));
  if (sides.size() == 1 && shorter) {
    *shorter = static_cast<int>(sides[0]);
  } else {
    height = static_cast<int>(sides[0]);
    width = static_cast<int>(sides.back());
  }
}

// [data] of source = images or lmdb: the splits and the transform.
void read_image_source(const config::Document& doc, const config::Section& data, DataConfig& config) {
  for (const char* key : {"train", "test"})
    if (!data.has(key))
      throw data.error(key, config.source == "images"
                                ? "required for source = images: a folder of class folders (train/cat/1.jpg, ...) "
                                  "or a list file of `path label` lines"
                                : "required for source = lmdb: an LMDB database of Caffe Datum records (make one "
                                  "from a folder of images with `taihu-convert imageset`)");
  config.train_path = doc.resolve(data.get<fs::path>("train"));
  config.test_path = doc.resolve(data.get<fs::path>("test"));
  if (config.source == "images" && data.has("root")) config.root = doc.resolve(data.get<fs::path>("root"));
  if (config.source == "lmdb") {
    if (!data.has("classes"))
      throw data.error("classes", "required for source = lmdb: the labels are inside the records");
    config.classes = static_cast<int>(read_count(data, "classes", 0, 1, INT32_MAX));
  } else {
    config.classes = static_cast<int>(read_count(data, "classes", 0, 0, INT32_MAX));
  }
  TransformConfig& t = config.transform;
  t.channels = static_cast<int>(data.get_or<int64_t>("channels", 3));
  if (t.channels != 1 && t.channels != 3) throw data.error("channels", fmt::format("must be 1 or 3, got {}", t.channels));
  read_size(data, "resize", t.resize_height, t.resize_width, &t.resize_shorter);
  read_size(data, "crop", t.crop_height, t.crop_width, nullptr);
  t.mirror = data.get_or<bool>("mirror", false);
  t.bgr = data.get_choice("channel_order", {"rgb", "bgr"}, "rgb") == "bgr";
  if (data.has("mean_file")) {
    const fs::path file = doc.resolve(data.get<fs::path>("mean_file"));
    MeanImage mean;
    try {
      mean = read_mean_file(file);
    } catch (const DataError& e) {
      throw data.error("mean_file", e.what());
    }
    if (mean.channels != t.channels)
      throw data.error("mean_file", fmt::format("'{}' is a mean of {} channel(s), the data have {}", file.string(),
                                                mean.channels, t.channels));
    // Caffe's mean files are in its channel order, B, G, R; the transform
    // takes them in the output's order.
    if (t.channels == 3 && !t.bgr) {
      const size_t plane = static_cast<size_t>(mean.height) * static_cast<size_t>(mean.width);
      std::swap_ranges(mean.values.begin(), mean.values.begin() + static_cast<std::ptrdiff_t>(plane),
                       mean.values.begin() + static_cast<std::ptrdiff_t>(2 * plane));
    }
    t.mean_image = std::move(mean.values);
    t.mean_height = mean.height;
    t.mean_width = mean.width;
  }
}

// The data set of one split of source = images or lmdb.
std::shared_ptr<const Dataset> load_stored_images(const DataConfig& config, Split split, int64_t limit,
                                                  const std::vector<std::string>& train_classes) {
  const bool train = split == Split::train;
  const fs::path& path = train ? config.train_path : config.test_path;
  TransformConfig transform = config.transform;
  transform.preprocess = config.preprocess;
  const std::string what = fmt::format("{} images in {}", split_name(split), path.string());
  if (config.source == "lmdb") {
    auto database = std::make_shared<const LmdbReader>(path);
    return std::make_shared<ImageDataset>(lmdb_records(std::move(database), transform.channels), transform,
                                          config.classes, what, limit);
  }
  std::error_code ec;
  ImageIndex index;
  if (fs::is_directory(path, ec)) {
    index = list_image_folder(path, train_classes);
  } else {
    require<DataError>(fs::exists(path, ec), "{} images: '{}' does not exist (give a folder of class folders or a list "
                       "file of `path label` lines)", split_name(split), path.string());
    index = read_image_list(path, config.root.empty() ? path.parent_path() : config.root, config.classes);
  }
  int classes = config.classes;
  if (classes == 0) classes = static_cast<int>(std::max(index.classes.size(), train_classes.size()));
  return std::make_shared<ImageDataset>(image_file_records(std::move(index), transform.channels), transform, classes,
                                        what, limit);
}

}  // namespace

int64_t channels_of(const Shape& sample_shape) { return sample_shape.rank() >= 2 ? sample_shape[0] : 1; }

const char* split_name(Split split) { return split == Split::train ? "train" : "test"; }

DataConfig DataConfig::read(const config::Document& doc, const config::Section& data) {
  DataConfig config;
  config.source = data.get_choice("source", {"fashion-mnist", "mnist", "idx", "cifar10", "images", "lmdb", "synthetic"},
                                  "fashion-mnist");
  int64_t channels = 1;

  if (is_idx_source(config.source)) {
    if (data.has("dir")) {
      config.dir = doc.resolve(data.get<fs::path>("dir"));
    } else if (config.source == "fashion-mnist") {
      config.dir = fashion_mnist_dir;
    } else if (config.source == "mnist") {
      throw data.error("dir",
                       "required for source = mnist: the folder holding the MNIST IDX files "
                       "(train-images-idx3-ubyte.gz etc., from https://yann.lecun.com/exdb/mnist/)");
    } else {
      config.dir = doc.resolve(".");
    }
    for (int which = 0; which < 4; ++which) {
      const auto& names = idx_names[which];
      DataFile& file = config.*idx_files[which];
      file.key = names.key;
      file.exact = data.has(names.key);
      file.path = config.dir / (file.exact ? data.get<fs::path>(names.key) : fs::path(names.base));
    }
    if (config.source == "idx") {
      config.classes = static_cast<int>(read_count(data, "classes", 10, 1));
      if (config.classes > 256) throw data.error("classes", "IDX labels are bytes: at most 256 classes");
    }
  } else if (config.source == "cifar10") {
    if (!data.has("dir"))
      throw data.error("dir",
                       "required for source = cifar10: the cifar-10-batches-bin folder of the binary version "
                       "(https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz)");
    config.dir = doc.resolve(data.get<fs::path>("dir"));
    channels = 3;
  } else if (is_stored_image_source(config.source)) {
    read_image_source(doc, data, config);
    channels = config.transform.channels;
  } else {  // synthetic
    const auto dims = data.get_list<int64_t>("shape");
    for (auto d : dims)
      if (d <= 0) throw data.error("shape", fmt::format("dimensions must be positive, got {}", d));
    if (dims.empty()) throw data.error("shape", "needs at least one dimension");
    config.shape = Shape(dims);
    channels = channels_of(config.shape);
    config.classes = static_cast<int>(read_count(data, "classes", 10, 1));
    config.train_size = read_count(data, "train_size", config.train_size, 1);
    config.test_size = read_count(data, "test_size", config.test_size, 1);
  }

  const bool bytes = config.source != "synthetic";
  config.preprocess.scale = data.get_or<float>("scale", bytes ? 1.0f / 255.0f : 1.0f);
  if (!std::isfinite(config.preprocess.scale) || config.preprocess.scale == 0.0f)
    throw data.error("scale", "must be a finite, non-zero number");
  config.preprocess.mean = read_per_channel(data, "mean", channels);
  config.preprocess.std = read_per_channel(data, "std", channels);
  for (float s : config.preprocess.std)
    if (s == 0.0f) throw data.error("std", "values must not be zero");

  // Batches read ahead; more than a few hundred buys nothing and could not be held.
  config.prefetch = static_cast<int>(read_count(data, "prefetch", config.prefetch, 0, 256));
  config.decoders = static_cast<int>(read_count(data, "decoders", config.decoders, 1, 256));
  config.shuffle = data.get_or<bool>("shuffle", config.shuffle);
  config.limit_train = read_count(data, "limit_train", 0, 0);
  config.limit_test = read_count(data, "limit_test", 0, 0);
  return config;
}

std::shared_ptr<const Dataset> make_dataset(const DataConfig& config, Split split) {
  const bool train = split == Split::train;
  const int64_t limit = train ? config.limit_train : config.limit_test;
  if (is_idx_source(config.source)) {
    const int first = train ? 0 : 2;
    const auto images = locate(config, config.*idx_files[first], idx_names[first].what);
    const auto labels = locate(config, config.*idx_files[first + 1], idx_names[first + 1].what);
    return load_idx(images, labels, config.classes, config.preprocess, limit);
  }
  if (config.source == "cifar10") return load_cifar10(config.dir, split, config.preprocess, limit);
  if (is_stored_image_source(config.source)) {
    // A test folder's class folders take the training folder's labels, by name.
    std::vector<std::string> classes;
    if (!train && config.source == "images" && fs::is_directory(config.train_path) && fs::is_directory(config.test_path))
      classes = image_folder_classes(config.train_path);
    return load_stored_images(config, split, limit, classes);
  }
  require<DataError>(config.source == "synthetic", "unknown data source '{}'", config.source);
  int64_t size = train ? config.train_size : config.test_size;
  if (limit > 0) size = std::min(size, limit);
  return std::make_shared<SyntheticDataset>(config.shape, config.classes, size, split, synthetic_seed,
                                            config.preprocess);
}

std::shared_ptr<const Dataset> make_dataset(const config::Document& doc, const config::Section& data,
                                            Split split) {
  return make_dataset(DataConfig::read(doc, data), split);
}

}  // namespace taihu
