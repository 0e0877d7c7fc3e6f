#pragma once
// How stored 8-bit values become a sample's floats.

#include <vector>

namespace taihu {

// (raw * scale - mean[c]) / std[c]; mean and std hold nothing, one value for
// all channels, or one per channel.
struct Preprocess {
  float scale = 1.0f;
  std::vector<float> mean;
  std::vector<float> std;
};

}  // namespace taihu
