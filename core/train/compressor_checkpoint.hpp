#pragma once
// A rank's gradient-compressor state in a data-parallel checkpoint. Residuals
// and compressor momentum differ per rank, so every rank writes its own file
// next to the model checkpoint (`<checkpoint>.compress-<rank>`) at the same
// iteration; a resumed run loads them and continues exactly where it stopped.
//
// The ranks write their files before rank 0 writes the model checkpoint, and
// each keeps the file it replaces as `<file>.prev`: a save that a failure cut
// short leaves every rank a file of the model checkpoint's iteration.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/compress/compressor_states.hpp"

namespace taihu {

struct CompressorCheckpoint {
  int64_t iteration = 0;  // solver steps taken: the model checkpoint's
  int rank = 0;
  int ranks = 0;
  std::vector<std::string> buckets;  // by bucket: encode_states() of its shard (compressor_states.hpp); empty: not compressed

  template <class Archive>
  void serialize(Archive& archive) {
    archive(iteration, rank, ranks, bounded(buckets));
  }
};

std::filesystem::path compressor_checkpoint_path(const std::filesystem::path& checkpoint, int rank);
// Atomic like save_checkpoint; moves a file already at `path` to `<path>.prev`
// first. load checks the framing and names the file.
void save_compressor_checkpoint(const CompressorCheckpoint& checkpoint, const std::filesystem::path& path);
CompressorCheckpoint load_compressor_checkpoint(const std::filesystem::path& path);
// The payload inside the framing; `source` names it in errors.
CompressorCheckpoint decode_compressor_checkpoint(const std::string& payload, const std::string& source);
// The file of `iteration`: `path`, else `<path>.prev`. Throws taihu::Error
// saying what is there when neither holds it.
CompressorCheckpoint load_compressor_checkpoint(const std::filesystem::path& path, int64_t iteration);

// What each bucket's shard of a rank takes to go on from the model checkpoint
// `checkpoint` at `iteration`: the files of the old ranks `sources` (this
// rank when resuming; the old ranks of its node after an elastic regroup,
// of `ranks` ranks then), each checked to be that rank's of `ranks` with
// `buckets` buckets, their states merged with `weight` (merge_states; one
// file at weight 1 passes as it is). By bucket, encode_states() bytes, empty
// for a bucket without compression. Throws taihu::Error saying why they
// cannot be used, so that the caller starts from zero saying so.
std::vector<std::string> load_rank_compressor_states(const std::filesystem::path& checkpoint,
                                                     const std::vector<std::int32_t>& sources, std::int32_t ranks,
                                                     int64_t iteration, std::size_t buckets, float weight);

// Before a save replaces `file` (this rank's state of the checkpoint now on
// disk), keeps it as this rank's file of `sane_checkpoint` (a hard link; see
// loss_check.hpp). Best effort, so training goes on: a rank without such a
// file (a regroup changed the ranks since, or a save was cut short) removes a
// stale one there instead, and a resume from the sane checkpoint starts that
// rank's compressor from zero, with the warning the restore gives.
void keep_sane_compressor_state(const std::filesystem::path& file, const std::filesystem::path& sane_checkpoint,
                                int rank);

}  // namespace taihu
