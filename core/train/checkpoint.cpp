#include "core/train/checkpoint.hpp"

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/common/check.hpp"

namespace taihu {

namespace {

constexpr char magic[8] = {'T', 'A', 'I', 'H', 'U', 'C', 'K', '1'};

// Header words are little-endian on every host, like Cereal's portable payload.
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

uint64_t fnv1a(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

void write_all(int fd, const char* data, size_t size, const std::string& path) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      raise("cannot write checkpoint '{}': {}", path, std::strerror(errno));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

}  // namespace

NamedTensor NamedTensor::from(const std::string& name, const Tensor& tensor) {
  NamedTensor t;
  t.name = name;
  t.dims = tensor.shape().dims();
  t.values.assign(tensor.ptr(), tensor.ptr() + tensor.count());
  return t;
}

void NamedTensor::restore_into(Tensor& tensor) const {
  require(Shape(dims) == tensor.shape(), "checkpoint tensor '{}' has shape {}, the model expects {}", name,
          Shape(dims).str(), tensor.shape().str());
  std::copy(values.begin(), values.end(), tensor.ptr());
}

void save_framed(const std::filesystem::path& path, std::string_view magic, std::string_view payload) {
  require(magic.size() == sizeof(uint64_t), "save_framed: the magic is 8 bytes");
  std::string header(magic), trailer;
  put_u64(header, payload.size());
  put_u64(trailer, fnv1a(payload));

  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  const std::string target = path.string();
  const std::string temp = fmt::format("{}.tmp.{}", target, ::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) raise("cannot create checkpoint '{}': {}", temp, std::strerror(errno));
  try {
    write_all(fd, header.data(), header.size(), temp);
    write_all(fd, payload.data(), payload.size(), temp);
    write_all(fd, trailer.data(), trailer.size(), temp);
    if (::fsync(fd) != 0) raise("cannot flush checkpoint '{}': {}", temp, std::strerror(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    raise("cannot move checkpoint into place at '{}': {}", target, std::strerror(err));
  }
  // Persist the rename itself.
  const std::string dir = path.has_parent_path() ? path.parent_path().string() : ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::string load_framed(const std::filesystem::path& path, std::string_view magic) {
  std::ifstream in(path, std::ios::binary);
  require(static_cast<bool>(in), "cannot open checkpoint '{}'", path.string());
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t header = magic.size() + sizeof(uint64_t);
  require(bytes.size() >= header + sizeof(uint64_t) && std::string_view(bytes).substr(0, magic.size()) == magic,
          "'{}' is not a taihu checkpoint of this kind (bad header)", path.string());
  const uint64_t size = get_u64(bytes.data() + magic.size());
  require(bytes.size() - header - sizeof(uint64_t) == size,
          "checkpoint '{}' is truncated or has trailing bytes ({} bytes, expected {})", path.string(),
          bytes.size(), header + size + sizeof(uint64_t));
  const std::string_view payload(bytes.data() + header, size);
  require(fnv1a(payload) == get_u64(bytes.data() + header + size), "checkpoint '{}' is corrupted (checksum mismatch)", path.string());
  return std::string(payload);
}

void save_checkpoint(const Checkpoint& checkpoint, const std::filesystem::path& path) {
  std::ostringstream payload;
  {
    cereal::PortableBinaryOutputArchive archive(payload);
    archive(checkpoint);
  }
  save_framed(path, std::string_view(magic, sizeof magic), payload.str());
}

Checkpoint load_checkpoint(const std::filesystem::path& path) {
  std::istringstream payload{load_framed(path, std::string_view(magic, sizeof magic))};
  Checkpoint checkpoint;
  try {
    cereal::PortableBinaryInputArchive archive(payload);
    archive(checkpoint);
  } catch (const std::exception& e) {
    raise("checkpoint '{}' cannot be decoded: {}", path.string(), e.what());
  }
  return checkpoint;
}

}  // namespace taihu
