#include "core/data/file_bytes.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>

#include "core/common/check.hpp"

namespace taihu {

namespace {

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose_r(file); }
};

// The gzip trailer stores the uncompressed size modulo 2^32; used only to
// size the buffer up front, so a wrong guess costs nothing but a regrowth.
// `file_size` is the file's size on disk.
size_t size_hint(const std::filesystem::path& path, std::uintmax_t file_size) {
  std::ifstream in(path, std::ios::binary);
  unsigned char magic[2] = {0, 0};
  in.read(reinterpret_cast<char*>(magic), 2);
  if (!in || magic[0] != 0x1f || magic[1] != 0x8b || file_size < 18) return file_size;
  unsigned char trailer[4];
  in.seekg(-4, std::ios::end);
  in.read(reinterpret_cast<char*>(trailer), 4);
  if (!in) return file_size;
  const size_t stored = uint32_t{trailer[0]} | uint32_t{trailer[1]} << 8 | uint32_t{trailer[2]} << 16 |
                        uint32_t{trailer[3]} << 24;
  // A truncated file ends in arbitrary bytes; deflate never expands more than
  // ~1032:1, so a larger "size" is garbage and must not be allocated.
  return std::min<size_t>(stored, file_size * 1032);
}

}  // namespace

std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path) {
  std::error_code ec;
  require<DataError>(std::filesystem::is_regular_file(path, ec), "data file {} does not exist",
                     path.string());
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  require<DataError>(file != nullptr, "cannot open data file {}: {}", path.string(), std::strerror(errno));
  // zlib keeps an input buffer of this size and an output buffer of twice it:
  // 1 MiB reads the big files in few calls, and a small file (a label file,
  // one of thousands) is not given 3 MiB it never fills.
  const std::uintmax_t file_size = std::filesystem::file_size(path, ec);
  const size_t hint = ec ? 0 : size_hint(path, file_size);
  gzbuffer(file.get(), static_cast<unsigned>(std::clamp<std::uintmax_t>(ec ? 0 : file_size, 8 << 10, 1 << 20)));

  std::vector<uint8_t> bytes;
  // One extra byte so that a correct hint ends in a short read, not a regrowth.
  bytes.resize(std::max<size_t>(hint, 4096) + 1);
  size_t filled = 0;
  for (;;) {
    if (filled == bytes.size()) bytes.resize(bytes.size() * 2);
    const auto chunk = static_cast<unsigned>(std::min<size_t>(bytes.size() - filled, size_t{1} << 30));
    const int got = gzread(file.get(), bytes.data() + filled, chunk);
    if (got <= 0) break;
    filled += static_cast<size_t>(got);
  }
  int status = Z_OK;
  const char* message = gzerror(file.get(), &status);
  if (status == Z_ERRNO) raise<DataError>("cannot read data file {}: {}", path.string(), std::strerror(errno));
  require<DataError>(status == Z_OK, "corrupted gzip stream in {}: {}", path.string(), message);
  bytes.resize(filled);
  return bytes;
}

std::vector<uint8_t> read_raw_file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  require<DataError>(in.good(), "cannot open the file");
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::streamoff>(in.tellg());
  require<DataError>(size >= 0, "cannot read the file");
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), size);
  require<DataError>(in.gcount() == size, "cannot read the file (read {} of {} bytes)", in.gcount(), size);
  return bytes;
}

}  // namespace taihu
