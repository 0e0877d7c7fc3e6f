#pragma once
// Readers for the IDX format of MNIST and Fashion-MNIST: a big-endian header
// (magic 0x00000803 for images, 0x00000801 for labels, then one 32-bit size
// per dimension) followed by uint8 values. Plain and gzipped files both work.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/data/byte_dataset.hpp"

namespace taihu {

inline constexpr uint32_t idx_images_magic = 0x00000803;
inline constexpr uint32_t idx_labels_magic = 0x00000801;

struct IdxImages {
  int64_t count = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> pixels;  // count x rows x cols
};

// Throw DataError naming the file for a wrong magic or a truncated file.
IdxImages read_idx_images(const std::filesystem::path& path);
std::vector<uint8_t> read_idx_labels(const std::filesystem::path& path);

// Images and labels as one data set of 1 x rows x cols samples. Checks that
// the counts match and every label is below `classes`; keeps the first
// `limit` samples (0 = all).
std::shared_ptr<ByteDataset> load_idx(const std::filesystem::path& images, const std::filesystem::path& labels,
                                      int classes, const Preprocess& preprocess, int64_t limit = 0);

}  // namespace taihu
