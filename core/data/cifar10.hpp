#pragma once
// Reader for the binary version of CIFAR-10 (cifar-10-batches-bin):
// data_batch_1.bin .. data_batch_5.bin (train) and test_batch.bin, each a
// sequence of records of 1 label byte + 3072 pixel bytes (3x32x32, channels
// first: 1024 red, 1024 green, 1024 blue).

#include <cstdint>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/data/byte_dataset.hpp"

namespace taihu {

inline constexpr int64_t cifar10_record_bytes = 1 + 3 * 32 * 32;

// The file names of a split, in reading order.
std::vector<std::string> cifar10_files(Split split);

// Reads the split's batch files from `dir`; keeps the first `limit` samples
// (0 = all). Throws DataError for a missing folder or file, a truncated
// record or a label above 9.
std::shared_ptr<ByteDataset> load_cifar10(const std::filesystem::path& dir, Split split,
                                          const Preprocess& preprocess, int64_t limit = 0);

}  // namespace taihu
