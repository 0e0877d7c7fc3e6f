#include "core/train/checkpoint.hpp"

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>
#include <fcntl.h>
#include <signal.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/common/check.hpp"

namespace taihu {

namespace {

// The last byte is the format (Checkpoint::format); files of format 1 still load.
constexpr char magic[8] = {'T', 'A', 'I', 'H', 'U', 'C', 'K', '2'};
constexpr char magic_format_1[8] = {'T', 'A', 'I', 'H', 'U', 'C', 'K', '1'};

bool starts_with(const std::filesystem::path& path, std::string_view prefix) {
  std::ifstream in(path, std::ios::binary);
  std::string head(prefix.size(), '\0');
  return in.read(head.data(), static_cast<std::streamsize>(head.size())) && head == prefix;
}

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

// A save cut short (the process killed between creating its temporary file
// and renaming it) leaves "<path>.tmp.<pid>": removed at the next save of the
// same path, unless that process still runs (it may be saving right now).
void remove_stale_temporaries(const std::filesystem::path& path) {
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  const std::string prefix = path.filename().string() + ".tmp.";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0 || !entry.is_regular_file(ec)) continue;  // a save writes files only
    const std::string pid = name.substr(prefix.size());
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto owner = static_cast<pid_t>(std::stoll(pid));
    if (owner != ::getpid() && ::kill(owner, 0) == 0) continue;  // alive
    std::filesystem::remove(entry.path(), ec);
  }
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

// The fields that place a checkpoint in its run, on their own: counts are
// never negative, times and sums are numbers.
void check_position_fields(const Checkpoint& c, const std::string& source) {
  const auto counted = [&](const char* field, int64_t value, const char* what) {
    require(value >= 0, "checkpoint {} is malformed: field '{}' is {}, but it counts {} (0 or more)", source, field,
            value, what);
  };
  counted("iteration", c.iteration, "solver steps");
  counted("epoch", c.epoch, "completed epochs");
  counted("batch", c.batch, "the batches done in the current epoch");
  require(std::isfinite(c.elapsed_seconds) && c.elapsed_seconds >= 0,
          "checkpoint {} is malformed: field 'elapsed_seconds' is {}, not a duration", source, c.elapsed_seconds);
  require(std::isfinite(c.epoch_loss_sum), "checkpoint {} is malformed: field 'epoch_loss_sum' is {}, not a number",
          source, c.epoch_loss_sum);
}

}  // namespace

NamedTensor NamedTensor::from(const std::string& name, const Tensor& tensor) {
  NamedTensor t;
  t.name = name;
  t.dims = tensor.shape().dims();
  t.values.assign(tensor.ptr(), tensor.ptr() + tensor.count());
  return t;
}

std::string NamedTensor::inconsistency() const {
  // The element count of the shape, with every step checked, so that no
  // shape a file can name overflows.
  constexpr uint64_t limit = uint64_t{1} << 40;
  uint64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0 || static_cast<uint64_t>(d) > limit || (d > 0 && count > limit / static_cast<uint64_t>(d)))
      return fmt::format("tensor '{}' has an impossible shape [{}]", name, fmt::join(dims, ", "));
    count *= static_cast<uint64_t>(d);
  }
  if (count != values.size())
    return fmt::format("tensor '{}' holds {} values, but its shape [{}] has {}", name, values.size(),
                       fmt::join(dims, ", "), count);
  return {};
}

void NamedTensor::restore_into(Tensor& tensor) const {
  const std::string problem = inconsistency();
  require(problem.empty(), "checkpoint {}", problem);
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
  remove_stale_temporaries(path);
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
  std::error_code ec;
  require(!std::filesystem::is_directory(path, ec), "'{}' is a folder, not a checkpoint file (name the .ckpt file)",
          path.string());
  std::ifstream in(path, std::ios::binary);
  require(static_cast<bool>(in), "cannot open checkpoint '{}': {}", path.string(),
          std::filesystem::exists(path, ec) ? "permission denied" : "no such file");
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

std::string encode_checkpoint(const Checkpoint& checkpoint) {
  std::ostringstream payload;
  {
    cereal::PortableBinaryOutputArchive archive(payload);
    archive(checkpoint);
  }
  return std::move(payload).str();
}

Checkpoint decode_checkpoint(const std::string& payload, const std::string& source, int format) {
  require(format == 1 || format == Checkpoint::format, "checkpoint {}: unknown format {}", source, format);
  std::istringstream in{payload};
  Checkpoint checkpoint;
  try {
    const DecodeBudget budget(payload.size());
    cereal::PortableBinaryInputArchive archive(in);
    if (format == 1)
      checkpoint.serialize_format_1(archive);
    else
      archive(checkpoint);
  } catch (const std::exception& e) {
    raise("checkpoint {} cannot be decoded: {}", source, e.what());
  }
  // A file whose checksum holds may still be made up: every byte must be the
  // checkpoint's, its position must be one a run can stand at, and every
  // tensor must agree with its own shape before anything is copied from it.
  const auto read = static_cast<std::size_t>(in.tellg());
  require(read == payload.size(), "checkpoint {} is malformed: {} bytes follow the checkpoint's {}", source,
          payload.size() - read, read);
  check_position_fields(checkpoint, source);
  for (const auto* tensors : {&checkpoint.params, &checkpoint.solver_state})
    for (const NamedTensor& t : *tensors) {
      const std::string problem = t.inconsistency();
      require(problem.empty(), "checkpoint {} is malformed: {}", source, problem);
    }
  return checkpoint;
}

void check_position(const Checkpoint& c, const std::string& source, int64_t epochs, int64_t per_epoch) {
  // A position of another configuration (batch size, workers, data set)
  // would seek past the epoch's end, or resume a solver whose schedule is
  // long over (a learning rate of 0 under poly or cosine, without a word).
  require<ConfigError>(c.batch <= per_epoch,
                       "checkpoint {}: field 'batch' is {} (batches done in epoch {}), but an epoch of this run has "
                       "{} batches: the checkpoint is not of this configuration (batch_size, workers or the data "
                       "differ)",
                       source, c.batch, c.epoch + 1, per_epoch);
  const int64_t planned = epochs > INT64_MAX / std::max<int64_t>(per_epoch, 1) ? INT64_MAX : epochs * per_epoch;
  require<ConfigError>(c.iteration <= planned,
                       "checkpoint {}: field 'iteration' is {}, more than the {} iterations of this whole run ({} "
                       "epochs of {} batches): the checkpoint is not of this configuration",
                       source, c.iteration, planned, epochs, per_epoch);
}

void save_checkpoint(const Checkpoint& checkpoint, const std::filesystem::path& path) {
  save_framed(path, std::string_view(magic, sizeof magic), encode_checkpoint(checkpoint));
}

void keep_checkpoint_as(const std::filesystem::path& from, const std::filesystem::path& to) {
  remove_stale_temporaries(to);
  const std::string temp = fmt::format("{}.tmp.{}", to.string(), ::getpid());
  std::error_code ec;
  std::filesystem::remove(temp, ec);
  std::filesystem::create_hard_link(from, temp, ec);
  if (ec) std::filesystem::copy_file(from, temp, std::filesystem::copy_options::overwrite_existing, ec);
  if (!ec) std::filesystem::rename(temp, to, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    raise("cannot keep checkpoint '{}' as '{}': {}", from.string(), to.string(), ec.message());
  }
}

Checkpoint load_checkpoint(const std::filesystem::path& path) {
  const std::string_view format_1(magic_format_1, sizeof magic_format_1);
  const bool old = starts_with(path, format_1);
  return decode_checkpoint(load_framed(path, old ? format_1 : std::string_view(magic, sizeof magic)),
                           fmt::format("'{}'", path.string()), old ? 1 : Checkpoint::format);
}

}  // namespace taihu
