#pragma once
// Images made from a formula, for the codec and transform tests.

#include <cstdint>
#include <functional>

#include "core/data/image_codec.hpp"

namespace taihu::testing {

// height x width x channels, interleaved; pixel (y, x, c) = value(y, x, c).
inline Image make_image(int height, int width, int channels, const std::function<int(int, int, int)>& value) {
  Image image{height, width, channels, {}};
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c) image.pixels.push_back(static_cast<uint8_t>(value(y, x, c)));
  return image;
}

}  // namespace taihu::testing
