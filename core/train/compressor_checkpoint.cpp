#include "core/train/compressor_checkpoint.hpp"

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <fmt/format.h>

#include <sstream>

#include "core/common/check.hpp"
#include "core/train/checkpoint.hpp"

namespace taihu {
namespace {

constexpr std::string_view magic{"TAIHUCS1", 8};

template <class T>
std::string encode(const T& value) {
  std::ostringstream out;
  {
    cereal::PortableBinaryOutputArchive archive(out);
    archive(value);
  }
  return out.str();
}

template <class T>
T decode(const std::string& bytes, std::string_view what) {
  std::istringstream in{bytes};
  T value;
  try {
    cereal::PortableBinaryInputArchive archive(in);
    archive(value);
  } catch (const std::exception& e) {
    raise("{} cannot be decoded: {}", what, e.what());
  }
  return value;
}

}  // namespace

std::filesystem::path compressor_checkpoint_path(const std::filesystem::path& checkpoint, int rank) {
  auto path = checkpoint;
  path += fmt::format(".compress-{}", rank);
  return path;
}

void save_compressor_checkpoint(const CompressorCheckpoint& checkpoint, const std::filesystem::path& path) {
  save_framed(path, magic, encode(checkpoint));
}

CompressorCheckpoint load_compressor_checkpoint(const std::filesystem::path& path) {
  return decode<CompressorCheckpoint>(load_framed(path, magic), fmt::format("compressor checkpoint '{}'", path.string()));
}

std::string encode_states(const std::vector<compress::CompressorState>& states) { return encode(states); }

std::vector<compress::CompressorState> decode_states(const std::string& bytes) {
  return decode<std::vector<compress::CompressorState>>(bytes, "compressor state");
}

}  // namespace taihu
