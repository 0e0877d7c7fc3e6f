#include "core/data/dataset.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/common/check.hpp"
#include "core/data/cifar10.hpp"
#include "core/data/idx.hpp"
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

}  // namespace

int64_t channels_of(const Shape& sample_shape) { return sample_shape.rank() >= 2 ? sample_shape[0] : 1; }

const char* split_name(Split split) { return split == Split::train ? "train" : "test"; }

DataConfig DataConfig::read(const config::Document& doc, const config::Section& data) {
  DataConfig config;
  config.source = data.get_choice("source", {"fashion-mnist", "mnist", "idx", "cifar10", "synthetic"}, "fashion-mnist");
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
