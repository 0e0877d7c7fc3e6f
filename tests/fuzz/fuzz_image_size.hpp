#pragma once
// For the targets that decode images: the sizes image files declare. A header
// may legitimately ask for up to 2^28 pixels (image_codec.cpp's limit), and
// decoding that would only measure malloc (2^28 RGB pixels are 768 MB, past
// the fuzzers' 512 MB limit), so such inputs are skipped, as large numbers
// are in fuzz_net.cpp. Larger sizes are kept: they must be refused before
// anything is allocated.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace taihu::fuzz {

// Whether a JPEG frame header (SOFn) or a PNG IHDR anywhere in `bytes`
// declares more than 2^22 pixels and at most the decoders' 2^28. Anywhere,
// not only where a decoder would read it: a few inputs too many are skipped,
// none too few.
inline bool declares_large_image(std::span<const std::uint8_t> bytes) {
  auto large = [](std::uint64_t height, std::uint64_t width) {
    return height * width > (std::uint64_t{1} << 22) && height * width <= (std::uint64_t{1} << 28);
  };
  auto be16 = [&](std::size_t at) { return std::uint64_t{bytes[at]} << 8 | bytes[at + 1]; };
  auto be32 = [&](std::size_t at) { return be16(at) << 16 | be16(at + 2); };
  for (std::size_t i = 0; i + 9 <= bytes.size(); ++i) {
    // FF Cn, length, precision, height, width; C4, C8 and CC are not frames.
    const std::uint8_t marker = bytes[i + 1];
    if (bytes[i] == 0xff && (marker & 0xf0) == 0xc0 && marker != 0xc4 && marker != 0xc8 && marker != 0xcc &&
        large(be16(i + 5), be16(i + 7)))
      return true;
    // "IHDR", width, height.
    if (i + 12 <= bytes.size() && std::memcmp(bytes.data() + i, "IHDR", 4) == 0 && large(be32(i + 8), be32(i + 4)))
      return true;
  }
  return false;
}

}  // namespace taihu::fuzz
