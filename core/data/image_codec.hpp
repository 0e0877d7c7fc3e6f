#pragma once
// Compressed images (JPEG, PNG) to 8-bit pixels and back, through Debian's
// libjpeg-turbo (its TurboJPEG API: SIMD decoding, and DCT-domain scaling
// that decodes a large JPEG straight at 1/2, 1/4 or 1/8 of its size) and
// libpng. The encoders serve taihu-convert and tests that write image data.

#include <cstdint>
#include <span>
#include <vector>

namespace taihu {

// Pixels row by row, channels interleaved (height x width x channels).
struct Image {
  int height = 0;
  int width = 0;
  int channels = 0;  // 1 (grey) or 3 (RGB)
  std::vector<uint8_t> pixels;
};

enum class ImageFormat { unknown, jpeg, png };

// By the file's signature, not its name.
ImageFormat sniff_image_format(std::span<const uint8_t> bytes);

// Decodes a JPEG or PNG into `channels` channels (1: grey, 3: RGB; colour is
// converted either way, alpha dropped, 16-bit PNG reduced to 8). With
// `min_shorter_side` > 0 a JPEG may be decoded at a DCT scale (1/2, 1/4, 1/8)
// as long as its shorter side stays at least that long. Throws DataError
// saying what is wrong: not an image, truncated, corrupt, too large.
Image decode_image(std::span<const uint8_t> bytes, int channels, int min_shorter_side = 0);

std::vector<uint8_t> encode_png(const Image& image);
std::vector<uint8_t> encode_jpeg(const Image& image, int quality = 90);

}  // namespace taihu
