// The PNG decoder (libpng): any bytes decode or are a DataError, to RGB and
// to grey (16-bit, palettes, tRNS, alpha and interlacing converted), and an
// image decoded has the size its IHDR says. Headers of more than 2^22 pixels
// are skipped (fuzz_image_size.hpp).
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "core/data/image_codec.hpp"
#include "fuzz_image_size.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taihu;
  const std::span<const std::uint8_t> bytes(data, size);
  if (fuzz::declares_large_image(bytes)) return -1;  // not added to the corpus
  for (const int channels : {3, 1}) {
    std::optional<Image> image;
    fuzz::expect_clean([&] { image = decode_image(bytes, channels); });
    if (!image || sniff_image_format(bytes) != ImageFormat::png) continue;
    auto be32 = [&](std::size_t at) {
      return std::uint32_t{data[at]} << 24 | std::uint32_t{data[at + 1]} << 16 | std::uint32_t{data[at + 2]} << 8 |
             data[at + 3];
    };
    // The IHDR chunk comes first: its width at byte 16, its height at 20.
    if (size < 24 || std::uint32_t(image->width) != be32(16) || std::uint32_t(image->height) != be32(20) ||
        image->channels != channels ||
        image->pixels.size() != std::size_t(image->height) * std::size_t(image->width) * std::size_t(channels)) {
      std::fprintf(stderr, "fuzz_png: a decoded image of %dx%dx%d (%zu bytes) is not what its IHDR says\n",
                   image->height, image->width, image->channels, image->pixels.size());
      std::abort();
    }
  }
  return 0;
}
