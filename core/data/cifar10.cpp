#include "core/data/cifar10.hpp"

#include <algorithm>
#include <cstring>

#include "core/common/check.hpp"
#include "core/data/file_bytes.hpp"

namespace taihu {

namespace {

constexpr int cifar10_classes = 10;
constexpr const char* cifar10_help =
    "download the binary version (https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz), extract it and "
    "set `dir` in [data] to its cifar-10-batches-bin folder";

}  // namespace

std::vector<std::string> cifar10_files(Split split) {
  if (split == Split::test) return {"test_batch.bin"};
  return {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin"};
}

std::shared_ptr<ByteDataset> load_cifar10(const std::filesystem::path& dir, Split split,
                                          const Preprocess& preprocess, int64_t limit) {
  std::error_code ec;
  require<DataError>(std::filesystem::is_directory(dir, ec), "CIFAR-10 folder {} does not exist; {}", dir.string(),
                     cifar10_help);
  constexpr int64_t pixel_bytes = cifar10_record_bytes - 1;
  std::vector<uint8_t> pixels;
  std::vector<uint8_t> labels;
  for (const auto& name : cifar10_files(split)) {
    if (limit > 0 && static_cast<int64_t>(labels.size()) >= limit) break;
    const auto path = dir / name;
    require<DataError>(std::filesystem::is_regular_file(path, ec), "CIFAR-10 file {} does not exist; {}",
                       path.string(), cifar10_help);
    const auto bytes = read_file_bytes(path);
    const auto size = static_cast<int64_t>(bytes.size());
    require<DataError>(size > 0, "CIFAR-10 file {} is empty", path.string());
    require<DataError>(size % cifar10_record_bytes == 0,
                       "CIFAR-10 file {} is truncated: {} bytes end in the middle of record {} (records are {} "
                       "bytes: 1 label + 3x32x32 pixels)",
                       path.string(), size, size / cifar10_record_bytes, cifar10_record_bytes);
    int64_t records = size / cifar10_record_bytes;
    if (limit > 0) records = std::min(records, limit - static_cast<int64_t>(labels.size()));
    const size_t first_pixel = pixels.size();
    pixels.resize(first_pixel + static_cast<size_t>(records * pixel_bytes));
    for (int64_t r = 0; r < records; ++r) {
      const uint8_t* record = bytes.data() + r * cifar10_record_bytes;
      require<DataError>(record[0] < cifar10_classes,
                         "label {} of record {} in CIFAR-10 file {} is out of range: expected 0..9", record[0], r,
                         path.string());
      labels.push_back(record[0]);
      std::memcpy(pixels.data() + first_pixel + r * pixel_bytes, record + 1, pixel_bytes);
    }
  }
  return std::make_shared<ByteDataset>(Shape{3, 32, 32}, cifar10_classes, std::move(pixels), std::move(labels),
                                       preprocess);
}

}  // namespace taihu
