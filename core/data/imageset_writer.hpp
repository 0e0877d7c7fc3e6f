#pragma once
// A folder or list of images into an LMDB database of Caffe Datum records, as
// Caffe's convert_imageset makes them (and its compute_image_mean, with a
// mean file): what `taihu-convert imageset` runs.
//
// Records are keyed "%08d_<path>" (the path relative to the image folder or
// the list's root) in the (optionally shuffled) order, so the
// database reads in that order. Raw records hold channel-major pixels in
// Caffe's B, G, R order and must all have one size (give a resize where the
// images vary); encoded records keep each file's bytes (re-encoded only when
// resized). Unreadable images are skipped, logged and counted; the database
// is written under a temporary name and renamed when complete.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/data/image_index.hpp"

namespace taihu {

struct ImagesetOptions {
  bool encoded = false;
  int channels = 3;  // 1: grey
  int resize_height = 0;  // both > 0: every image resized to this size
  int resize_width = 0;
  bool shuffle = false;
  uint64_t seed = 0;
  std::filesystem::path mean_file;  // non-empty: also write the mean image there
  std::filesystem::path key_root;   // keys name files relative to this (the folder, or the list's root)
  std::string progress = "auto";    // Progress::parse_mode's names
};

struct ImagesetResult {
  int64_t written = 0;
  int64_t skipped = 0;  // unreadable, or of another size than the first (raw records)
  int height = 0, width = 0;  // of raw records; 0 where encoded sizes vary
};

ImagesetResult write_imageset(const ImageIndex& index, const std::filesystem::path& out,
                              const ImagesetOptions& options);

}  // namespace taihu
