#include "core/data/idx.hpp"

#include "core/common/check.hpp"
#include "core/data/file_bytes.hpp"

namespace taihu {

namespace {

uint32_t big_endian32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}

// Validates magic and length of an IDX file with `rank` dimensions; returns
// the dimensions and strips the header from `bytes`.
std::vector<int64_t> take_header(std::vector<uint8_t>& bytes, const std::filesystem::path& path, uint32_t magic,
                                 const char* what) {
  require<DataError>(bytes.size() >= 4, "IDX {} file {} is truncated: {} bytes, too short for a magic number", what,
                     path.string(), bytes.size());
  const uint32_t found = big_endian32(bytes.data());
  require<DataError>(found == magic, "{} is not an IDX {} file: magic number 0x{:08x}, expected 0x{:08x}",
                     path.string(), what, found, magic);
  const size_t rank = magic & 0xff;
  const size_t header = 4 + 4 * rank;
  require<DataError>(bytes.size() >= header, "IDX {} file {} is truncated: {} bytes, shorter than its {}-byte header",
                     what, path.string(), bytes.size(), header);
  std::vector<int64_t> dims(rank);
  unsigned __int128 product = 1;  // cannot overflow for three 32-bit sizes
  for (size_t d = 0; d < rank; ++d) {
    dims[d] = big_endian32(bytes.data() + 4 + 4 * d);
    product *= static_cast<uint64_t>(dims[d]);
  }
  const uint64_t payload = product > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(product);
  const uint64_t available = bytes.size() - header;
  require<DataError>(available >= payload,
                     "IDX {} file {} is truncated: its header promises {} bytes of data, the file has only {}", what,
                     path.string(), payload, available);
  require<DataError>(available == payload,
                     "IDX {} file {} has {} unexpected bytes after the {} bytes its header promises", what,
                     path.string(), available - payload, payload);
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(header));
  return dims;
}

}  // namespace

IdxImages read_idx_images(const std::filesystem::path& path) {
  auto bytes = read_file_bytes(path);
  const auto dims = take_header(bytes, path, idx_images_magic, "image");
  require<DataError>(dims[1] > 0 && dims[2] > 0, "IDX image file {} declares empty {}x{} images", path.string(),
                     dims[1], dims[2]);
  return IdxImages{dims[0], dims[1], dims[2], std::move(bytes)};
}

std::vector<uint8_t> read_idx_labels(const std::filesystem::path& path) {
  auto bytes = read_file_bytes(path);
  take_header(bytes, path, idx_labels_magic, "label");
  return bytes;
}

std::shared_ptr<ByteDataset> load_idx(const std::filesystem::path& images_path,
                                      const std::filesystem::path& labels_path, int classes,
                                      const Preprocess& preprocess, int64_t limit) {
  auto images = read_idx_images(images_path);
  auto labels = read_idx_labels(labels_path);
  require<DataError>(images.count == static_cast<int64_t>(labels.size()),
                     "image/label count mismatch: {} has {} images but {} has {} labels", images_path.string(),
                     images.count, labels_path.string(), labels.size());
  for (size_t i = 0; i < labels.size(); ++i)
    require<DataError>(labels[i] < classes, "label {} of sample {} in {} is out of range: expected 0..{} ({} classes)",
                       labels[i], i, labels_path.string(), classes - 1, classes);
  auto data = std::make_shared<ByteDataset>(Shape{1, images.rows, images.cols}, classes, std::move(images.pixels),
                                            std::move(labels), preprocess);
  if (limit > 0) data->truncate(limit);
  return data;
}

}  // namespace taihu
