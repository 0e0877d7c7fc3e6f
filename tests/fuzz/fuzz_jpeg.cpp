// The JPEG decoder (libjpeg-turbo): any bytes decode or are a DataError, to
// RGB and to grey, at full size and DCT-scaled, with the sizes that says.
// After each input the thread's decompressor must still decode a good JPEG
// exactly as a fresh one does: a corrupt header once left it broken for the
// next files (image_codec.cpp's ThreadHandle). Headers of more than 2^22
// pixels are skipped (fuzz_image_size.hpp).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <thread>
#include <vector>

#include "core/data/image_codec.hpp"
#include "fuzz_image_size.hpp"
#include "fuzz_support.hpp"

namespace {

// A colour JPEG (4:2:0, its sides not multiples of 16) and its pixels as a
// decompressor that never met a bad file decodes them: on a thread of its own.
struct Good {
  std::vector<std::uint8_t> bytes;
  taihu::Image image;
};

const Good& good() {
  static const Good good = [] {
    Good g;
    taihu::Image image{21, 35, 3, {}};
    image.pixels.resize(21 * 35 * 3);
    for (std::size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<std::uint8_t>(i * 7 % 251);
    g.bytes = taihu::encode_jpeg(image, 90);
    std::thread([&] { g.image = taihu::decode_image(g.bytes, 3); }).join();
    return g;
  }();
  return good;
}

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_jpeg: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taihu;
  const std::span<const std::uint8_t> bytes(data, size);
  if (fuzz::declares_large_image(bytes)) return -1;  // not added to the corpus
  const Good& reference = good();
  std::optional<Image> full, scaled;
  fuzz::expect_clean([&] { full = decode_image(bytes, 3); });
  fuzz::expect_clean([&] { scaled = decode_image(bytes, 1, 8); });
  for (const auto* image : {&full, &scaled}) {
    if (*image && ((*image)->height <= 0 || (*image)->width <= 0 ||
                   (*image)->pixels.size() != std::size_t((*image)->height) * std::size_t((*image)->width) *
                                                  std::size_t((*image)->channels)))
      fail("a decoded image's pixels do not match its size");
  }
  // Scaled: the full size, or smaller with the shorter side still 8 or more.
  if (full && scaled && (scaled->height != full->height || scaled->width != full->width) &&
      (scaled->height > full->height || scaled->width > full->width || std::min(scaled->height, scaled->width) < 8))
    fail("a DCT-scaled decode has the wrong size");
  try {
    const Image again = decode_image(reference.bytes, 3);
    if (again.height != reference.image.height || again.width != reference.image.width ||
        again.pixels != reference.image.pixels)
      fail("the good JPEG decodes differently after this input");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz_jpeg: the good JPEG fails after this input: %s\n", e.what());
    std::abort();
  }
  return 0;
}
