#pragma once
// NumPy's .npz: a zip archive of .npy files, one per array, as numpy.load
// reads it. Entries are stored uncompressed (weights barely compress, and
// numpy reads stored entries without copying), each with its CRC-32 (zlib).
// Arrays are little-endian float32 in C order. Archives over 4 GiB would need
// zip64 and are refused.

#include <cstdint>
#include <string>
#include <vector>

namespace taihu::npz {

struct Array {
  std::string name;  // the key numpy.load gives it (".npy" is appended in the archive)
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// One .npy file (format 1.0): magic, header dict, data.
std::string npy_bytes(const Array& array);
// The whole .npz archive.
std::string npz_bytes(const std::vector<Array>& arrays);

}  // namespace taihu::npz
