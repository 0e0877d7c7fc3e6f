#include "core/train/compressor_checkpoint.hpp"

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/array.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

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
    const DecodeBudget budget(bytes.size());
    cereal::PortableBinaryInputArchive archive(in);
    archive(bounded(value));
  } catch (const std::exception& e) {
    raise("{} cannot be decoded: {}", what, e.what());
  }
  // Every byte is the value's: more is a made-up or foreign payload.
  const auto read = static_cast<std::size_t>(in.tellg());
  require(read == bytes.size(), "{} is malformed: {} bytes follow its {}", what, bytes.size() - read, read);
  return value;
}

std::filesystem::path previous(const std::filesystem::path& path) {
  auto p = path;
  p += ".prev";
  return p;
}

}  // namespace

std::filesystem::path compressor_checkpoint_path(const std::filesystem::path& checkpoint, int rank) {
  auto path = checkpoint;
  path += fmt::format(".compress-{}", rank);
  return path;
}

void save_compressor_checkpoint(const CompressorCheckpoint& checkpoint, const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    std::filesystem::rename(path, previous(path), ec);
    require(!ec, "cannot keep the compressor checkpoint '{}' as '{}': {}", path.string(), previous(path).string(),
            ec.message());
  }
  save_framed(path, magic, encode(checkpoint));
}

void keep_sane_compressor_state(const std::filesystem::path& file, const std::filesystem::path& sane_checkpoint,
                                int rank) {
  const auto sane = compressor_checkpoint_path(sane_checkpoint, rank);
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    std::filesystem::remove(sane, ec);
    spdlog::debug("rank {}: no compressor state '{}' to keep as '{}'", rank, file.string(), sane.string());
    return;
  }
  try {
    keep_checkpoint_as(file, sane);
  } catch (const Error& e) {
    std::filesystem::remove(sane, ec);
    spdlog::warn("rank {}: {}; a resume from '{}' starts this rank's compressor from zero", rank, e.what(),
                 sane_checkpoint.string());
  }
}

CompressorCheckpoint decode_compressor_checkpoint(const std::string& payload, const std::string& source) {
  // (Its rank and ranks are checked against the run that restores it.)
  CompressorCheckpoint c = decode<CompressorCheckpoint>(payload, source);
  require(c.iteration >= 0, "{} is malformed: field 'iteration' is {}, but it counts solver steps (0 or more)", source,
          c.iteration);
  return c;
}

CompressorCheckpoint load_compressor_checkpoint(const std::filesystem::path& path) {
  return decode_compressor_checkpoint(load_framed(path, magic), fmt::format("compressor checkpoint '{}'", path.string()));
}

CompressorCheckpoint load_compressor_checkpoint(const std::filesystem::path& path, int64_t iteration) {
  std::vector<std::string> seen;  // why each candidate is not it
  for (const auto& candidate : {path, previous(path)}) {
    if (!std::filesystem::exists(candidate)) {
      seen.push_back(fmt::format("'{}' does not exist", candidate.string()));
      continue;
    }
    try {
      CompressorCheckpoint file = load_compressor_checkpoint(candidate);
      if (file.iteration == iteration) return file;
      seen.push_back(fmt::format("'{}' holds iteration {}", candidate.string(), file.iteration));
    } catch (const Error& e) {
      seen.push_back(e.what());
    }
  }
  raise("no compressor checkpoint of iteration {}: {}", iteration, fmt::join(seen, "; "));
}

std::string encode_states(const std::vector<compress::CompressorState>& states) { return encode(states); }

std::vector<compress::CompressorState> merge_states(const std::vector<std::vector<compress::CompressorState>>& sources,
                                                    float weight) {
  require(!sources.empty(), "merge_states: no sources");
  std::vector<compress::CompressorState> merged = sources.front();
  for (std::size_t s = 0; s < sources.size(); ++s) {
    require(sources[s].size() == merged.size(), "merge_states: source {} has {} segments, source 0 has {}", s,
            sources[s].size(), merged.size());
    for (std::size_t i = 0; i < merged.size(); ++i)
      require(sources[s][i].residual.size() == merged[i].residual.size() &&
                  sources[s][i].velocity.size() == merged[i].velocity.size(),
              "merge_states: segment {} of source {} holds {} + {} floats, of source 0 {} + {}", i, s,
              sources[s][i].residual.size(), sources[s][i].velocity.size(), merged[i].residual.size(),
              merged[i].velocity.size());
  }
  for (std::size_t i = 0; i < merged.size(); ++i) {
    auto combine = [&](std::vector<float> compress::CompressorState::*field) {
      std::vector<float>& out = merged[i].*field;
      for (std::size_t s = 1; s < sources.size(); ++s) {
        const std::vector<float>& in = sources[s][i].*field;
        for (std::size_t k = 0; k < out.size(); ++k) out[k] += in[k];
      }
      for (float& v : out) v *= weight;
    };
    combine(&compress::CompressorState::residual);
    combine(&compress::CompressorState::velocity);
  }
  return merged;
}

std::vector<compress::CompressorState> decode_states(const std::string& bytes) {
  return decode<std::vector<compress::CompressorState>>(bytes, "compressor state");
}

}  // namespace taihu
