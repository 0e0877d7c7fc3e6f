// Writes a folder of class folders of synthetic colour JPEGs (torchvision's
// ImageFolder layout, ILSVRC's too), for the tests that train the shipped image
// configs from files: a data set no one has to download.
//
//   taihu_make_images OUT_DIR CLASSES PER_CLASS [SEED]
//
// writes OUT_DIR/class_<c>/<c>_<i>.JPEG. Each class has its own mean colour and
// stripe direction, under noise and a rectangle of another colour, so a net can
// tell the classes apart (a loss that falls means something). Sizes alternate
// between landscape and portrait photo shapes (320x240, 240x320, 300x225), so a
// config's resize to the shorter side and its crops run as on real photos.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>

#include "core/data/image_codec.hpp"

namespace {

taihu::Image draw(int label, int index, std::mt19937& rng) {
  static constexpr int shapes[3][2] = {{240, 320}, {320, 240}, {225, 300}};
  const auto& shape = shapes[index % 3];
  taihu::Image image{shape[0], shape[1], 3, {}};
  image.pixels.resize(static_cast<std::size_t>(image.height) * image.width * 3);
  // The class: a colour on the hue circle and a stripe direction.
  const float hue = 6.2831853f * static_cast<float>(label) / 7.0f;
  const float base[3] = {128 + 80 * std::cos(hue), 128 + 80 * std::cos(hue + 2.0944f),
                         128 + 80 * std::cos(hue + 4.1888f)};
  const bool vertical = label % 2 == 1;
  std::uniform_int_distribution<int> noise(-30, 30), colour(0, 255);
  std::uniform_int_distribution<int> row(0, image.height / 2), col(0, image.width / 2);
  const int r0 = row(rng), c0 = col(rng), r1 = r0 + image.height / 3, c1 = c0 + image.width / 3;
  const int box[3] = {colour(rng), colour(rng), colour(rng)};
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width; ++x) {
      const bool stripe = ((vertical ? x : y) / 12) % 2 == 0;
      const bool in_box = y >= r0 && y < r1 && x >= c0 && x < c1;
      for (int c = 0; c < 3; ++c) {
        const float v = in_box ? static_cast<float>(box[c]) : base[c] + (stripe ? 25.0f : -25.0f);
        image.pixels[(static_cast<std::size_t>(y) * image.width + x) * 3 + c] =
            static_cast<uint8_t>(std::clamp(v + static_cast<float>(noise(rng)), 0.0f, 255.0f));
      }
    }
  return image;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc < 4) {
    std::fputs("usage: taihu_make_images OUT_DIR CLASSES PER_CLASS [SEED]\n", stderr);
    return 2;
  }
  const int classes = std::atoi(argv[2]), per_class = std::atoi(argv[3]);
  if (classes < 1 || per_class < 1) {
    std::fputs("taihu_make_images: CLASSES and PER_CLASS must be positive\n", stderr);
    return 2;
  }
  std::mt19937 rng(argc > 4 ? static_cast<unsigned>(std::atoi(argv[4])) : 1u);
  try {
    for (int c = 0; c < classes; ++c) {
      const fs::path folder = fs::path(argv[1]) / fmt::format("class_{:03d}", c);
      fs::create_directories(folder);
      for (int i = 0; i < per_class; ++i) {
        const auto bytes = taihu::encode_jpeg(draw(c, i, rng), 90);
        const fs::path path = folder / fmt::format("{}_{}.JPEG", c, i);
        std::ofstream file(path, std::ios::binary);
        file.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        if (!file.flush()) throw std::runtime_error("cannot write " + path.string());
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "taihu_make_images: %s\n", e.what());
    return 1;
  }
}
