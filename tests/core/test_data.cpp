#include <doctest/doctest.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "core/config/config.hpp"
#include "core/data/batch_source.hpp"
#include "core/data/cifar10.hpp"
#include "core/data/dataset.hpp"
#include "core/data/file_bytes.hpp"
#include "core/data/idx.hpp"
#include "core/data/synthetic.hpp"
#include "support/finishes_within.hpp"

using namespace taihu;
using taihu::testing::finishes_within;
namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<uint8_t>;

// A fresh folder under the system temp dir, removed with its contents.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("taihu_test_data_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

void write_plain(const fs::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

void write_gzip(const fs::path& path, const Bytes& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  REQUIRE(file != nullptr);
  REQUIRE(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  REQUIRE(gzclose(file) == Z_OK);
}

Bytes read_plain(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void put32(Bytes& bytes, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<uint8_t>(value >> shift));
}

uint8_t test_pixel(int64_t image, int64_t offset) { return static_cast<uint8_t>((image * 37 + offset * 5) % 256); }

Bytes idx_images(uint32_t count, uint32_t rows, uint32_t cols) {
  Bytes bytes;
  put32(bytes, 0x00000803);
  put32(bytes, count);
  put32(bytes, rows);
  put32(bytes, cols);
  for (uint32_t i = 0; i < count; ++i)
    for (uint32_t p = 0; p < rows * cols; ++p) bytes.push_back(test_pixel(i, p));
  return bytes;
}

Bytes idx_labels(const Bytes& labels) {
  Bytes bytes;
  put32(bytes, 0x00000801);
  put32(bytes, static_cast<uint32_t>(labels.size()));
  bytes.insert(bytes.end(), labels.begin(), labels.end());
  return bytes;
}

template <class E = Error>
std::string error_of(auto&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<wrong exception type> ") + e.what();
  }
  return "<no error>";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

config::Document data_config(const std::string& body) { return config::Document::parse("[data]\n" + body, "t.ini"); }

std::shared_ptr<const Dataset> dataset_from(const std::string& body, Split split) {
  auto doc = data_config(body);
  auto data = make_dataset(doc, doc.section("data"), split);
  doc.reject_unused();
  return data;
}

// Writes a small Fashion-MNIST-like folder: 6 train and 4 test images of 2x3.
void write_idx_folder(const fs::path& dir, bool gzipped) {
  const auto write = gzipped ? write_gzip : write_plain;
  const std::string ext = gzipped ? ".gz" : "";
  write(dir / ("train-images-idx3-ubyte" + ext), idx_images(6, 2, 3));
  write(dir / ("train-labels-idx1-ubyte" + ext), idx_labels({0, 1, 2, 9, 4, 5}));
  write(dir / ("t10k-images-idx3-ubyte" + ext), idx_images(4, 2, 3));
  write(dir / ("t10k-labels-idx1-ubyte" + ext), idx_labels({3, 3, 7, 8}));
}

std::vector<float> sample_of(const Dataset& data, int64_t index) {
  std::vector<float> out(static_cast<size_t>(data.sample_shape().count()));
  data.sample(index, out.data());
  return out;
}

// Sample i is filled with the value i; label i % classes. Optionally throws
// at one index or sleeps per sample, to exercise BatchSource.
class IndexDataset final : public Dataset {
 public:
  explicit IndexDataset(int64_t size, int64_t fail_at = -1, int sleep_ms = 0)
      : size_(size), fail_at_(fail_at), sleep_ms_(sleep_ms) {}
  int64_t size() const override { return size_; }
  Shape sample_shape() const override { return Shape{2, 3}; }
  int num_classes() const override { return 7; }
  int label(int64_t index) const override { return static_cast<int>(index % 7); }
  void sample(int64_t index, float* out) const override {
    if (index == fail_at_) throw DataError("sample " + std::to_string(index) + " is broken");
    if (sleep_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_));
    std::fill_n(out, 6, static_cast<float>(index));
  }

 private:
  int64_t size_, fail_at_;
  int sleep_ms_;
};

struct Batch {
  std::vector<float> data, labels;
  std::vector<int64_t> shape;
  friend bool operator==(const Batch&, const Batch&) = default;
};

// All batches of `epochs` epochs, checking the end-of-epoch protocol.
std::vector<Batch> drain(BatchSource& source, int epochs) {
  std::vector<Batch> batches;
  Tensor data, labels;
  for (int e = 0; e < epochs; ++e) {
    const int64_t start_epoch = source.epoch();
    while (source.next(data, labels)) {
      batches.push_back({std::vector<float>(data.span().begin(), data.span().end()),
                         std::vector<float>(labels.span().begin(), labels.span().end()), data.shape().dims()});
    }
    CHECK(source.epoch() == start_epoch + 1);
    CHECK(source.batch_index() == 0);
  }
  return batches;
}

}  // namespace

TEST_SUITE("data") {

TEST_CASE("IDX images and labels read back from plain and gzipped files") {
  TempDir dir;
  const auto images = idx_images(5, 3, 4);
  write_plain(dir / "img", images);
  write_gzip(dir / "img.gz", images);
  for (const char* name : {"img", "img.gz"}) {
    CAPTURE(name);
    const auto read = read_idx_images(dir / name);
    CHECK(read.count == 5);
    CHECK(read.rows == 3);
    CHECK(read.cols == 4);
    REQUIRE(read.pixels.size() == 60);
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t p = 0; p < 12; ++p) CHECK(read.pixels[i * 12 + p] == test_pixel(i, p));
  }
  write_gzip(dir / "lab.gz", idx_labels({3, 1, 4, 1, 5}));
  CHECK(read_idx_labels(dir / "lab.gz") == Bytes{3, 1, 4, 1, 5});
  // gzip is recognised by content, not by name.
  write_gzip(dir / "lab_plain_name", idx_labels({2, 7}));
  CHECK(read_idx_labels(dir / "lab_plain_name") == Bytes{2, 7});
}

TEST_CASE("IDX data set applies scale, mean and std per pixel") {
  TempDir dir;
  write_gzip(dir / "img.gz", idx_images(5, 3, 4));
  write_plain(dir / "lab", idx_labels({3, 1, 4, 1, 5}));
  const auto plain = load_idx(dir / "img.gz", dir / "lab", 10, Preprocess{1.0f / 255.0f, {}, {}});
  CHECK(plain->size() == 5);
  CHECK(plain->sample_shape() == Shape{1, 3, 4});
  CHECK(plain->num_classes() == 10);
  CHECK(plain->label(2) == 4);
  auto values = sample_of(*plain, 3);
  for (int p = 0; p < 12; ++p) CHECK(values[p] == doctest::Approx(test_pixel(3, p) / 255.0));

  const auto normalised = load_idx(dir / "img.gz", dir / "lab", 10, Preprocess{0.5f, {10.0f}, {4.0f}}, 2);
  CHECK(normalised->size() == 2);  // limit keeps the first samples
  values = sample_of(*normalised, 1);
  for (int p = 0; p < 12; ++p) CHECK(values[p] == doctest::Approx((test_pixel(1, p) * 0.5 - 10.0) / 4.0));
}

TEST_CASE("[data] builds IDX data sets from a folder, with default or explicit names") {
  TempDir dir;
  write_idx_folder(dir.path(), true);
  const auto train = dataset_from("source = fashion-mnist\ndir = " + dir.path().string() + "\n", Split::train);
  const auto test = dataset_from("source = fashion-mnist\ndir = " + dir.path().string() + "\n", Split::test);
  CHECK(train->size() == 6);
  CHECK(test->size() == 4);
  CHECK(train->sample_shape() == Shape{1, 2, 3});
  CHECK(train->label(3) == 9);
  CHECK(test->label(2) == 7);
  CHECK(sample_of(*train, 5)[4] == doctest::Approx(test_pixel(5, 4) / 255.0));

  // mnist with unzipped files; limits; explicit names; relative dir from the config's folder.
  TempDir plain;
  write_idx_folder(plain.path(), false);
  CHECK(dataset_from("source = mnist\ndir = " + plain.path().string() + "\nlimit_train = 4\nlimit_test = 100\n",
                     Split::train)
            ->size() == 4);
  CHECK(dataset_from("source = mnist\ndir = " + plain.path().string() + "\nlimit_test = 100\n", Split::test)
            ->size() == 4);
  fs::create_directories(dir / "conf");
  {
    std::ofstream out(dir / "conf" / "net.ini");
    out << "[data]\nsource = idx\ndir = ..\nclasses = 10\ntest_images = train-images-idx3-ubyte.gz\n"
           "test_labels = train-labels-idx1-ubyte.gz\nscale = 1\nmean = 1\nstd = 2\nshuffle = false\nprefetch = 2\n";
  }
  auto doc = config::Document::parse_file(dir / "conf" / "net.ini");
  const auto config = DataConfig::read(doc, doc.section("data"));
  CHECK_NOTHROW(doc.reject_unused());
  CHECK(config.prefetch == 2);
  CHECK_FALSE(config.shuffle);
  const auto swapped = make_dataset(config, Split::test);
  CHECK(swapped->size() == 6);
  CHECK(sample_of(*swapped, 2)[1] == doctest::Approx((test_pixel(2, 1) - 1.0) / 2.0));
}

TEST_CASE("missing IDX files say how to get them and which key sets the path") {
  TempDir dir;
  const auto fashion = error_of<DataError>(
      [&] { dataset_from("source = fashion-mnist\ndir = " + dir.path().string() + "\n", Split::train); });
  CHECK(contains(fashion, "apt-get install dataset-fashion-mnist"));
  CHECK(contains(fashion, (dir / "train-images-idx3-ubyte.gz").string()));
  CHECK(contains(fashion, "`dir`"));
  CHECK(contains(fashion, "train_images"));

  const auto mnist =
      error_of<DataError>([&] { dataset_from("source = mnist\ndir = " + dir.path().string() + "\n", Split::test); });
  CHECK(contains(mnist, "MNIST test images"));
  CHECK(contains(mnist, "yann.lecun.com"));
  CHECK(contains(mnist, "`dir`"));
  CHECK(contains(mnist, "test_images"));

  const auto no_dir = error_of<ConfigError>([&] { dataset_from("source = mnist\n", Split::train); });
  CHECK(contains(no_dir, "t.ini"));
  CHECK(contains(no_dir, "dir"));
  CHECK(contains(no_dir, "required for source = mnist"));

  const auto explicit_name = error_of<DataError>([&] {
    dataset_from("source = idx\ndir = " + dir.path().string() + "\ntrain_images = nope.idx\n", Split::train);
  });
  CHECK(contains(explicit_name, (dir / "nope.idx").string()));
  CHECK(contains(explicit_name, "train_images"));
}

TEST_CASE("malformed IDX files are rejected with the file and the fact") {
  TempDir dir;
  const auto images = dir / "images";
  const auto labels = dir / "labels";
  write_plain(images, idx_images(5, 2, 2));
  write_plain(labels, idx_labels({0, 1, 2, 3, 4}));
  const Preprocess pre;

  SUBCASE("wrong magic") {
    const auto msg = error_of<DataError>([&] { load_idx(labels, labels, 10, pre); });
    CHECK(contains(msg, labels.string()));
    CHECK(contains(msg, "magic"));
    CHECK(contains(msg, "0x00000801"));
    CHECK(contains(msg, "0x00000803"));
  }
  SUBCASE("truncated data") {
    auto bytes = idx_images(5, 2, 2);
    bytes.resize(bytes.size() - 3);
    write_plain(images, bytes);
    const auto msg = error_of<DataError>([&] { load_idx(images, labels, 10, pre); });
    CHECK(contains(msg, "truncated"));
    CHECK(contains(msg, "promises 20 bytes"));
    CHECK(contains(msg, "only 17"));
    CHECK(contains(msg, images.string()));
  }
  SUBCASE("truncated header") {
    write_plain(labels, Bytes{0, 0, 8, 1, 0});
    const auto msg = error_of<DataError>([&] { load_idx(images, labels, 10, pre); });
    CHECK(contains(msg, "truncated"));
    CHECK(contains(msg, "8-byte header"));
    CHECK(contains(msg, labels.string()));
  }
  SUBCASE("trailing bytes") {
    auto bytes = idx_labels({0, 1, 2, 3, 4});
    bytes.push_back(0);
    write_plain(labels, bytes);
    CHECK(contains(error_of<DataError>([&] { load_idx(images, labels, 10, pre); }), "1 unexpected bytes"));
  }
  SUBCASE("image and label counts differ") {
    write_plain(labels, idx_labels({0, 1, 2, 3}));
    const auto msg = error_of<DataError>([&] { load_idx(images, labels, 10, pre); });
    CHECK(contains(msg, "count mismatch"));
    CHECK(contains(msg, "5 images"));
    CHECK(contains(msg, "4 labels"));
  }
  SUBCASE("label out of range") {
    write_plain(labels, idx_labels({0, 1, 10, 3, 4}));
    const auto msg = error_of<DataError>([&] { load_idx(images, labels, 10, pre); });
    CHECK(contains(msg, "label 10 of sample 2"));
    CHECK(contains(msg, "10 classes"));
    CHECK_NOTHROW(load_idx(images, labels, 11, pre));
  }
  SUBCASE("corrupted gzip stream") {
    write_gzip(images, idx_images(50, 8, 8));
    auto bytes = read_plain(images);
    REQUIRE(bytes.size() > 40);
    for (size_t i = bytes.size() / 2; i < bytes.size() / 2 + 8; ++i) bytes[i] ^= 0x5a;
    write_plain(images, bytes);
    const auto msg = error_of<DataError>([&] { read_idx_images(images); });
    CHECK(contains(msg, "corrupted gzip stream"));
    CHECK(contains(msg, images.string()));
  }
  SUBCASE("gzip stream cut short") {
    write_gzip(images, idx_images(50, 8, 8));
    auto bytes = read_plain(images);
    bytes.resize(bytes.size() / 2);
    write_plain(images, bytes);
    const auto msg = error_of<DataError>([&] { read_idx_images(images); });
    CHECK(contains(msg, "corrupted gzip stream"));
    CHECK(contains(msg, "unexpected end of file"));
  }
  SUBCASE("missing file") {
    CHECK(contains(error_of<DataError>([&] { read_file_bytes(dir / "absent"); }), "does not exist"));
  }
}

TEST_CASE("[data] rejects bad values and keys that do not apply") {
  const auto bad_source = error_of<ConfigError>([] { dataset_from("source = imagenet\n", Split::train); });
  CHECK(contains(bad_source, "t.ini:2"));
  CHECK(contains(bad_source, "cifar10"));

  auto doc = data_config("source = fashion-mnist\nshape = 1 28 28\n");
  DataConfig::read(doc, doc.section("data"));
  const auto unknown = error_of<ConfigError>([&] { doc.reject_unused(); });
  CHECK(contains(unknown, "shape"));
  CHECK(contains(unknown, "unknown option"));

  const auto mean = error_of<ConfigError>([] { dataset_from("source = cifar10\ndir = /x\nmean = 1 2\n", Split::train); });
  CHECK(contains(mean, "mean"));
  CHECK(contains(mean, "3"));
  CHECK(contains(error_of<ConfigError>([] { dataset_from("source = synthetic\nshape = 4\nstd = 0\n", Split::train); }),
                 "std"));
  CHECK(contains(error_of<ConfigError>([] { dataset_from("source = synthetic\n", Split::train); }), "shape"));
  CHECK(contains(error_of<ConfigError>([] { dataset_from("source = synthetic\nshape = 3 0 2\n", Split::train); }),
                 "positive"));
  CHECK(contains(error_of<ConfigError>([] { dataset_from("prefetch = -1\n", Split::train); }), "prefetch"));
  CHECK(contains(error_of<ConfigError>([] { dataset_from("source = cifar10\n", Split::train); }),
                 "cifar-10-binary"));
}

TEST_CASE("CIFAR-10 records are split into label and channel-major pixels") {
  TempDir dir;
  auto record = [](int label, int seed) {
    Bytes bytes{static_cast<uint8_t>(label)};
    for (int p = 0; p < 3072; ++p) bytes.push_back(static_cast<uint8_t>((p / 1024) * 80 + (p + seed) % 7));
    return bytes;
  };
  auto batch = [&](int first_label, int records) {
    Bytes bytes;
    for (int r = 0; r < records; ++r) {
      const auto one = record((first_label + r) % 10, first_label * 10 + r);
      bytes.insert(bytes.end(), one.begin(), one.end());
    }
    return bytes;
  };
  for (int b = 1; b <= 5; ++b) write_plain(dir / ("data_batch_" + std::to_string(b) + ".bin"), batch(b, 2));
  write_plain(dir / "test_batch.bin", batch(7, 3));

  const auto train = load_cifar10(dir.path(), Split::train, Preprocess{1.0f, {}, {}});
  REQUIRE(train->size() == 10);
  CHECK(train->sample_shape() == Shape{3, 32, 32});
  CHECK(train->num_classes() == 10);
  CHECK(train->label(0) == 1);
  CHECK(train->label(3) == 3);  // second record of data_batch_2
  const auto values = sample_of(*train, 3);
  for (int p : {0, 1, 1023, 1024, 2047, 2048, 3071}) CHECK(values[p] == (p / 1024) * 80 + (p + 21) % 7);

  const auto test = dataset_from("source = cifar10\ndir = " + dir.path().string() +
                                     "\nlimit_train = 3\nmean = 0 80 160\nstd = 1 2 4\n",
                                 Split::test);
  CHECK(test->size() == 3);
  CHECK(test->label(2) == 9);
  CHECK(sample_of(*test, 0)[2048 + 5] == doctest::Approx(((160 + (2048 + 5 + 70) % 7) / 255.0 - 160) / 4.0));
  CHECK(dataset_from("source = cifar10\ndir = " + dir.path().string() + "\nlimit_train = 3\n", Split::train)
            ->size() == 3);

  SUBCASE("truncated record") {
    auto bytes = batch(7, 3);
    bytes.resize(bytes.size() - 100);
    write_plain(dir / "test_batch.bin", bytes);
    const auto msg = error_of<DataError>([&] { load_cifar10(dir.path(), Split::test, {}); });
    CHECK(contains(msg, "truncated"));
    CHECK(contains(msg, "record 2"));
    CHECK(contains(msg, "test_batch.bin"));
  }
  SUBCASE("missing file and folder") {
    fs::remove(dir / "data_batch_4.bin");
    CHECK(contains(error_of<DataError>([&] { load_cifar10(dir.path(), Split::train, {}); }), "data_batch_4.bin"));
    const auto msg = error_of<DataError>([&] { load_cifar10(dir / "nowhere", Split::train, {}); });
    CHECK(contains(msg, "does not exist"));
    CHECK(contains(msg, "cifar-10-binary.tar.gz"));
    CHECK(contains(msg, "`dir`"));
  }
  SUBCASE("label out of range") {
    write_plain(dir / "test_batch.bin", record(10, 0));
    CHECK(contains(error_of<DataError>([&] { load_cifar10(dir.path(), Split::test, {}); }), "label 10"));
  }
}

TEST_CASE("synthetic data is deterministic per (seed, index) and learnable") {
  const Shape shape{3, 8, 8};
  const SyntheticDataset a(shape, 5, 300, Split::train, 42);
  const SyntheticDataset b(shape, 5, 300, Split::train, 42);
  const SyntheticDataset other_seed(shape, 5, 300, Split::train, 43);
  const SyntheticDataset test(shape, 5, 100, Split::test, 42);
  CHECK(a.size() == 300);
  CHECK(a.sample_shape() == shape);
  CHECK(a.num_classes() == 5);
  // Same sample however often and in whatever order it is read.
  CHECK(sample_of(a, 17) == sample_of(b, 17));
  CHECK(sample_of(a, 17) == sample_of(a, 17));
  CHECK(sample_of(a, 17) != sample_of(a, 18));
  CHECK(sample_of(a, 17) != sample_of(other_seed, 17));
  std::set<int> labels;
  int same_label = 0;
  for (int64_t i = 0; i < a.size(); ++i) {
    labels.insert(a.label(i));
    same_label += a.label(i) == other_seed.label(i);
    for (float v : sample_of(a, i)) REQUIRE(std::abs(v) <= 2.0f);
  }
  CHECK(labels.size() == 5);
  CHECK(same_label < 150);

  // Learnable: class centroids of the train split classify the test split.
  const int64_t n = shape.count();
  std::vector<double> centroid(5 * n, 0.0);
  std::vector<int> members(5, 0);
  for (int64_t i = 0; i < a.size(); ++i) {
    const auto x = sample_of(a, i);
    ++members[a.label(i)];
    for (int64_t k = 0; k < n; ++k) centroid[a.label(i) * n + k] += x[k];
  }
  for (int c = 0; c < 5; ++c)
    for (int64_t k = 0; k < n; ++k) centroid[c * n + k] /= std::max(members[c], 1);
  int correct = 0;
  for (int64_t i = 0; i < test.size(); ++i) {
    const auto x = sample_of(test, i);
    int best = 0;
    double best_distance = 1e300;
    for (int c = 0; c < 5; ++c) {
      double d = 0;
      for (int64_t k = 0; k < n; ++k) d += (x[k] - centroid[c * n + k]) * (x[k] - centroid[c * n + k]);
      if (d < best_distance) best_distance = d, best = c;
    }
    correct += best == test.label(i);
  }
  CHECK(correct >= 95);

  // Preprocessing: (raw * scale - mean[c]) / std[c].
  const SyntheticDataset scaled(shape, 5, 300, Split::train, 42, Preprocess{2.0f, {1.0f, 0.0f, -1.0f}, {4.0f}});
  const auto raw = sample_of(a, 9);
  const auto pre = sample_of(scaled, 9);
  for (int64_t k = 0; k < n; ++k) CHECK(pre[k] == doctest::Approx((raw[k] * 2.0 - (1.0 - k / 64)) / 4.0));
}

TEST_CASE("[data] builds synthetic data sets of any shape") {
  const std::string body = "source = synthetic\nshape = 3 20 12\nclasses = 1000\ntrain_size = 50\ntest_size = 20\n"
                           "limit_test = 7\n";
  const auto train = dataset_from(body, Split::train);
  const auto test = dataset_from(body, Split::test);
  CHECK(train->size() == 50);
  CHECK(test->size() == 7);
  CHECK(train->sample_shape() == Shape{3, 20, 12});
  CHECK(train->num_classes() == 1000);
  CHECK(sample_of(*train, 3) != sample_of(*test, 3));
  const auto flat = dataset_from("source = synthetic\nshape = 100\nclasses = 2\n", Split::train);
  CHECK(flat->sample_shape() == Shape{100});
  CHECK(flat->size() == 1024);
}

TEST_CASE("batches cover each sample once per epoch in a seeded order") {
  auto data = std::make_shared<IndexDataset>(50);
  BatchSource source(data, BatchOptions{.batch_size = 7, .shuffle = true, .seed = 5});
  CHECK(source.batches_per_epoch() == 8);
  CHECK(source.size() == 50);
  std::vector<std::vector<int64_t>> orders;
  Tensor x, y;
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::vector<int64_t> seen;
    int batches = 0;
    CHECK(source.epoch() == epoch);
    while (source.next(x, y)) {
      ++batches;
      CHECK(source.batch_index() == batches);
      const int64_t n = x.shape()[0];
      CHECK(n == (batches == 8 ? 1 : 7));
      CHECK(x.shape() == Shape{n, 2, 3});
      CHECK(y.shape() == Shape{n});
      for (int64_t i = 0; i < n; ++i) {
        const auto index = static_cast<int64_t>(x[i * 6]);
        CHECK(x[i * 6 + 5] == static_cast<float>(index));
        CHECK(y[i] == static_cast<float>(index % 7));
        seen.push_back(index);
      }
    }
    CHECK(batches == 8);
    CHECK(seen == source.order(epoch));
    std::vector<int64_t> sorted = seen;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> all(50);
    std::iota(all.begin(), all.end(), 0);
    CHECK(sorted == all);
    orders.push_back(seen);
  }
  CHECK(orders[0] != orders[1]);
  CHECK(orders[1] != orders[2]);

  BatchSource same(data, BatchOptions{.batch_size = 7, .shuffle = true, .seed = 5});
  BatchSource other(data, BatchOptions{.batch_size = 7, .shuffle = true, .seed = 6});
  CHECK(same.order(1) == orders[1]);
  CHECK(other.order(1) != orders[1]);
  BatchSource ordered(data, BatchOptions{.batch_size = 7, .shuffle = false});
  std::vector<int64_t> identity(50);
  std::iota(identity.begin(), identity.end(), 0);
  CHECK(ordered.order(3) == identity);

  BatchSource dropping(data, BatchOptions{.batch_size = 7, .drop_last = true, .seed = 5});
  CHECK(dropping.batches_per_epoch() == 7);
  const auto batches = drain(dropping, 2);
  CHECK(batches.size() == 14);
  for (const auto& batch : batches) CHECK(batch.shape[0] == 7);

  CHECK(contains(error_of<DataError>([&] { BatchSource(data, BatchOptions{.batch_size = 51, .drop_last = true}); }),
                 "50 samples"));
  CHECK_NOTHROW(BatchSource(data, BatchOptions{.batch_size = 51}));
}

TEST_CASE("seek resumes exactly; prefetching yields the same batches") {
  auto data = std::make_shared<IndexDataset>(23);
  const BatchOptions sync{.batch_size = 4, .shuffle = true, .prefetch = 0, .seed = 11};
  BatchSource reference(data, sync);
  const auto all = drain(reference, 3);  // 6 batches per epoch
  REQUIRE(all.size() == 18);
  CHECK(all.back().shape[0] == 3);

  for (int prefetch : {0, 1, 3}) {
    CAPTURE(prefetch);
    BatchOptions options = sync;
    options.prefetch = prefetch;
    BatchSource source(data, options);
    CHECK(drain(source, 3) == all);

    BatchSource resumed(data, options);
    resumed.seek(1, 2);
    Tensor x, y;
    REQUIRE(resumed.next(x, y));
    CHECK(std::vector<float>(x.span().begin(), x.span().end()) == all[6 + 2].data);
    // Seeking back and forth mid-stream, also to an epoch's end.
    resumed.seek(2, 5);
    REQUIRE(resumed.next(x, y));
    CHECK(std::vector<float>(y.span().begin(), y.span().end()) == all[12 + 5].labels);
    resumed.seek(0, 6);
    CHECK_FALSE(resumed.next(x, y));
    CHECK(resumed.epoch() == 1);
    REQUIRE(resumed.next(x, y));
    CHECK(std::vector<float>(x.span().begin(), x.span().end()) == all[6].data);
  }
  CHECK(contains(error_of<DataError>([&] { reference.seek(0, 7); }), "batches 0..6"));
}

TEST_CASE("prefetching shuts down cleanly and rethrows producer errors") {
  SUBCASE("destruction mid-epoch does not hang") {
    auto slow = std::make_shared<IndexDataset>(1000, -1, 1);
    CHECK(finishes_within(std::chrono::seconds(10), [slow] {
      BatchSource never_used(slow, BatchOptions{.batch_size = 4, .prefetch = 2});
      BatchSource one_batch(slow, BatchOptions{.batch_size = 4, .prefetch = 3});
      Tensor x, y;
      one_batch.next(x, y);
      BatchSource full_queue(slow, BatchOptions{.batch_size = 2, .prefetch = 2});
      full_queue.next(x, y);
      std::this_thread::sleep_for(std::chrono::milliseconds(30));  // let the queue fill and block
    }));
  }
  SUBCASE("errors reach the consumer after the good batches") {
    auto broken = std::make_shared<IndexDataset>(20, 13);
    for (int prefetch : {0, 2}) {
      CAPTURE(prefetch);
      BatchSource source(broken, BatchOptions{.batch_size = 5, .shuffle = false, .prefetch = prefetch});
      Tensor x, y;
      CHECK(source.next(x, y));
      CHECK(source.next(x, y));
      CHECK(contains(error_of<DataError>([&] { source.next(x, y); }), "sample 13 is broken"));
      CHECK(source.batch_index() == 2);
      source.seek(0, 3);  // skipping the broken batch recovers
      CHECK(source.next(x, y));
      CHECK(x[0] == 15.0f);
    }
  }
}

TEST_CASE("real Fashion-MNIST reads with 60000/10000 samples of 28x28") {
  const fs::path dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(dir / "train-images-idx3-ubyte.gz") || !fs::exists(dir / "t10k-labels-idx1-ubyte.gz")) {
    MESSAGE("skipped: Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)");
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  const auto train = dataset_from("source = fashion-mnist\n", Split::train);
  const auto test = dataset_from("source = fashion-mnist\n", Split::test);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("read Fashion-MNIST train+test in " << seconds << " s");
  CHECK(train->size() == 60000);
  CHECK(test->size() == 10000);
  CHECK(train->sample_shape() == Shape{1, 28, 28});
  CHECK(train->num_classes() == 10);
  std::vector<int> per_class(10, 0);
  for (int64_t i = 0; i < test->size(); ++i) ++per_class[test->label(i)];
  CHECK(per_class == std::vector<int>(10, 1000));
  const auto x = sample_of(*train, 0);
  CHECK(*std::min_element(x.begin(), x.end()) >= 0.0f);
  CHECK(*std::max_element(x.begin(), x.end()) <= 1.0f);
  CHECK(*std::max_element(x.begin(), x.end()) > 0.5f);
}

}  // TEST_SUITE("data")
