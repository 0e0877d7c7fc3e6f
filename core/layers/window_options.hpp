#pragma once
// Reads the per-axis window options shared by Convolution and Pooling, with
// Caffe's spellings: `kernel_size = 3` (both axes), `kernel_size = 3 5`
// (height, width) or `kernel_h = 3` + `kernel_w = 5`; likewise stride, pad and
// dilation.

#include <cstdint>
#include <optional>
#include <string>

#include "core/config/config.hpp"

namespace taihu {

struct HeightWidth {
  int64_t h = 0;
  int64_t w = 0;
};

// Reads `key` (one or two values) or `<prefix>_h` and `<prefix>_w`; returns
// `fallback` when none is given (ConfigError if there is no fallback).
// Values must be >= `minimum`.
HeightWidth read_height_width(const config::Section& options, const std::string& key, const std::string& prefix,
                              std::optional<int64_t> fallback, int64_t minimum);

}  // namespace taihu
