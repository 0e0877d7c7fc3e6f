#include "core/train/compressor_checkpoint.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "core/common/cereal_bytes.hpp"
#include "core/common/check.hpp"
#include "core/train/checkpoint.hpp"

namespace taihu {
namespace {

constexpr std::string_view magic{"TAIHUCS1", 8};

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
  save_framed(path, magic, encode_bytes(checkpoint));
}

std::vector<std::string> load_rank_compressor_states(const std::filesystem::path& checkpoint,
                                                     const std::vector<std::int32_t>& sources, std::int32_t ranks,
                                                     int64_t iteration, std::size_t buckets, float weight) {
  std::vector<CompressorCheckpoint> files;
  for (const std::int32_t source : sources) {
    const auto path = compressor_checkpoint_path(checkpoint, source);
    files.push_back(load_compressor_checkpoint(path, iteration));
    const CompressorCheckpoint& file = files.back();
    require(file.ranks == ranks && file.rank == source && file.buckets.size() == buckets,
            "'{}' holds rank {} of {} ranks and {} buckets; expected rank {} of {} ranks and {} buckets", path.string(),
            file.rank, file.ranks, file.buckets.size(), source, ranks, buckets);
  }
  std::vector<std::string> states(buckets);
  if (files.empty()) return states;
  for (std::size_t b = 0; b < buckets; ++b) {
    if (files.front().buckets[b].empty()) continue;
    if (files.size() == 1 && weight == 1.0f) {
      states[b] = std::move(files.front().buckets[b]);
      continue;
    }
    std::vector<std::vector<compress::CompressorState>> sources_states;
    for (const auto& file : files) sources_states.push_back(decode_states(file.buckets[b]));
    states[b] = encode_states(merge_states(sources_states, weight));
  }
  return states;
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
  CompressorCheckpoint c = decode_bytes<CompressorCheckpoint>(payload, source);
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


}  // namespace taihu
