#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/data/image_transform.hpp"
#include "support/error_message.hpp"
#include "support/test_images.hpp"

using namespace taihu;
using taihu::testing::error_message;
using taihu::testing::make_image;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

uint8_t pixel(const Image& image, int y, int x, int c = 0) {
  return image.pixels[(static_cast<size_t>(y) * image.width + x) * image.channels + c];
}

std::vector<float> run(const ImageTransform& transform, const Image& image, uint64_t draw = 0) {
  std::vector<float> out(static_cast<size_t>(transform.output_shape().count()), -1e9f);
  transform.apply(image, out.data(), draw);
  return out;
}

TransformConfig grey_config() {
  TransformConfig config;
  config.channels = 1;
  return config;
}

// A grey image whose pixel at (y, x) is y * 16 + x: a window's first value
// gives its position.
Image positions(int height, int width) {
  return make_image(height, width, 1, [](int y, int x, int) { return y * 16 + x; });
}

// Crop offset and flip of an output taken from positions(): the top-left
// and top-right values tell them apart.
struct View {
  int top, left;
  bool flipped;
};
View view_of(const std::vector<float>& out, int width) {
  const int first = static_cast<int>(out[0]), last = static_cast<int>(out[static_cast<size_t>(width) - 1]);
  const bool flipped = first > last;
  const int origin = flipped ? last : first;
  return {origin / 16, origin % 16, flipped};
}

}  // namespace

TEST_CASE("image transform: a fixed-size grey image passes through as scale * pixel") {
  TransformConfig config = grey_config();
  config.preprocess.scale = 1.0f / 255;
  const ImageTransform transform(config, 28, 28);
  CHECK(transform.output_shape() == Shape{1, 28, 28});
  CHECK(transform.decode_shorter_side() == 0);
  const Image image = make_image(28, 28, 1, [](int y, int x, int) { return (y * 28 + x) % 256; });
  const auto out = run(transform, image, 12345);
  for (size_t i = 0; i < out.size(); ++i) CHECK(out[i] == doctest::Approx(image.pixels[i] / 255.0f));
}

TEST_CASE("image transform: the evaluation view is the exact centre crop (Caffe's offsets)") {
  TransformConfig config = grey_config();
  config.crop_height = 3;
  config.crop_width = 4;
  const ImageTransform transform(config);
  CHECK(transform.output_shape() == Shape{1, 3, 4});
  const Image image = positions(8, 11);
  const auto out = run(transform, image);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 4; ++x) CHECK(out[static_cast<size_t>(y * 4 + x)] == pixel(image, y + 2, x + 3));
}

TEST_CASE("image transform: random crops follow the draw, vary across draws and stay inside the image") {
  TransformConfig config = grey_config();
  config.crop_height = 4;
  config.crop_width = 5;
  const ImageTransform transform(config);
  const Image image = positions(10, 12);
  std::set<std::pair<int, int>> offsets;
  for (uint64_t draw = 1; draw <= 200; ++draw) {
    const auto out = run(transform, image, draw);
    CHECK(run(transform, image, draw) == out);
    const View view = view_of(out, 5);
    CHECK(!view.flipped);  // mirror is off
    REQUIRE(view.top >= 0);
    REQUIRE(view.top <= 6);
    REQUIRE(view.left >= 0);
    REQUIRE(view.left <= 7);
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 5; ++x)
        REQUIRE(out[static_cast<size_t>(y * 5 + x)] == pixel(image, view.top + y, view.left + x));
    offsets.insert({view.top, view.left});
  }
  CHECK(offsets.size() == 7 * 8);  // 200 draws reach all 56 offsets
}

TEST_CASE("image transform: mirroring flips rows exactly, for about half the draws, never when evaluating") {
  TransformConfig config;
  config.channels = 3;
  config.mirror = true;
  const ImageTransform transform(config, 5, 7);
  const Image image = make_image(5, 7, 3, [](int y, int x, int c) { return y * 40 + x * 5 + c; });
  const auto plain = run(transform, image, 0);
  for (size_t i = 0; i < plain.size(); ++i) REQUIRE(plain[i] == pixel(image, int(i / 7 % 5), int(i % 7), int(i / 35)));
  int flips = 0;
  for (uint64_t draw = 1; draw <= 100; ++draw) {
    const auto out = run(transform, image, draw);
    if (out == plain) continue;
    ++flips;
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 5; ++y)
        for (int x = 0; x < 7; ++x) REQUIRE(out[size_t((c * 5 + y) * 7 + x)] == pixel(image, y, 6 - x, c));
  }
  CHECK(flips > 30);
  CHECK(flips < 70);
}

TEST_CASE("image transform: resizing keeps a constant image constant, down and up") {
  for (const auto& sizes :
       std::vector<std::array<int, 4>>{{100, 80, 25, 20}, {37, 53, 11, 29}, {10, 10, 31, 17}, {64, 48, 64, 12}}) {
    const int from_h = sizes[0], from_w = sizes[1], to_h = sizes[2], to_w = sizes[3];
    CAPTURE(from_h);
    CAPTURE(to_w);
    TransformConfig config;
    config.resize_height = to_h;
    config.resize_width = to_w;
    const ImageTransform transform(config);
    CHECK(transform.output_shape() == Shape{3, to_h, to_w});
    const auto out = run(transform, make_image(from_h, from_w, 3, [](int, int, int c) { return 90 + c * 70; }));
    for (size_t i = 0; i < out.size(); ++i) REQUIRE(out[i] == doctest::Approx(90 + 70 * int(i / size_t(to_h * to_w))));
  }
}

TEST_CASE("image transform: a 2x downscale uses PIL's bilinear taps 1/8, 3/8, 3/8, 1/8") {
  TransformConfig config = grey_config();
  config.resize_height = 1;
  config.resize_width = 4;
  const ImageTransform transform(config);
  const int row[8] = {0, 80, 16, 240, 8, 64, 128, 32};
  const Image image = make_image(1, 8, 1, [&](int, int x, int) { return row[x]; });
  const auto out = run(transform, image);
  // Output 0 misses the tap left of the image: 3/8, 3/8, 1/8 renormalised.
  CHECK(out[0] == doctest::Approx((3 * 0 + 3 * 80 + 16) / 7.0));
  CHECK(out[1] == doctest::Approx((80 + 3 * 16 + 3 * 240 + 8) / 8.0));
  CHECK(out[2] == doctest::Approx((240 + 3 * 8 + 3 * 64 + 128) / 8.0));
  CHECK(out[3] == doctest::Approx((64 + 3 * 128 + 3 * 32) / 7.0));
}

TEST_CASE("image transform: a 4x downscale of a smooth image approximates the box average (antialiasing)") {
  TransformConfig config = grey_config();
  config.resize_height = 16;
  config.resize_width = 16;
  const ImageTransform transform(config);
  const Image image = make_image(64, 64, 1, [](int y, int x, int) {
    return static_cast<int>(127.5 + 100 * std::sin(x * 0.05) * std::cos(y * 0.04));
  });
  const auto out = run(transform, image);
  double worst = 0;
  for (int y = 1; y < 15; ++y) {
    for (int x = 1; x < 15; ++x) {
      double box = 0;
      for (int dy = 0; dy < 4; ++dy)
        for (int dx = 0; dx < 4; ++dx) box += pixel(image, 4 * y + dy, 4 * x + dx);
      worst = std::max(worst, std::abs(out[size_t(y * 16 + x)] - box / 16));
    }
  }
  CHECK(worst < 2.0);
  // Alternating columns (the worst case for aliasing) average to grey.
  const auto stripes = run(transform, make_image(64, 64, 1, [](int, int x, int) { return x % 2 * 200; }));
  for (float value : stripes) REQUIRE(std::abs(value - 100) < 8);
}

TEST_CASE("image transform: the shorter side resizes as torchvision's, the longer truncated") {
  for (auto [h, w, shorter, out_h, out_w] : std::vector<std::array<int, 5>>{
           {300, 200, 100, 150, 100}, {200, 300, 100, 100, 150}, {375, 500, 256, 256, 341}, {64, 64, 32, 32, 32}}) {
    TransformConfig config;
    config.resize_shorter = shorter;
    const ImageTransform transform(config, h, w);
    CHECK(transform.output_shape() == Shape{3, out_h, out_w});
    CHECK(run(transform, make_image(h, w, 3, [](int, int, int) { return 7; }))[0] == doctest::Approx(7));
  }
}

TEST_CASE("image transform: normalisation applies mean image, scale, mean and std per channel") {
  TransformConfig config;
  config.crop_height = 3;
  config.crop_width = 4;
  config.preprocess.scale = 0.5f;
  config.preprocess.mean = {1.0f, 2.0f, 3.0f};
  config.preprocess.std = {2.0f, 4.0f, 8.0f};
  config.mean_height = 9;
  config.mean_width = 10;
  for (int i = 0; i < 3 * 9 * 10; ++i) config.mean_image.push_back(static_cast<float>(i % 7) * 1.5f);
  const ImageTransform transform(config);
  const Image image = make_image(9, 10, 3, [](int y, int x, int c) { return y * 16 + x + 100 * c; });
  // The grey positions image under the same draw gives the crop's offset.
  TransformConfig locate = grey_config();
  locate.crop_height = 3;
  locate.crop_width = 4;
  const ImageTransform locator(locate);
  for (uint64_t draw : {0, 3, 77}) {
    const View view = view_of(run(locator, positions(9, 10), draw), 4);
    const auto out = run(transform, image, draw);
    for (int c = 0; c < 3; ++c) {
      for (int y = 0; y < 3; ++y) {
        for (int x = 0; x < 4; ++x) {
          const int sy = view.top + y, sx = view.left + x;
          const float m = config.mean_image[size_t((c * 9 + sy) * 10 + sx)];
          const float expected = ((pixel(image, sy, sx, c) - m) * 0.5f - config.preprocess.mean[size_t(c)]) /
                                 config.preprocess.std[size_t(c)];
          REQUIRE(out[size_t((c * 3 + y) * 4 + x)] == doctest::Approx(expected));
        }
      }
    }
  }
}

TEST_CASE("image transform: bgr reverses the channels; mean and std are in output order") {
  TransformConfig config;
  config.bgr = true;
  config.preprocess.mean = {10.0f, 20.0f, 30.0f};  // B, G, R
  const ImageTransform transform(config, 2, 2);
  const Image image = make_image(2, 2, 3, [](int, int, int c) { return 100 * (c + 1); });  // R 100, G 200, B 300 % 256
  const auto out = run(transform, image);
  for (int i = 0; i < 4; ++i) {
    CHECK(out[size_t(i)] == doctest::Approx(300 % 256 - 10));  // B
    CHECK(out[size_t(4 + i)] == doctest::Approx(200 - 20));    // G
    CHECK(out[size_t(8 + i)] == doctest::Approx(100 - 30));    // R
  }
}

TEST_CASE("image transform: the decoder may scale JPEGs only where the output cannot change") {
  TransformConfig config;
  config.resize_shorter = 256;
  config.crop_height = config.crop_width = 224;
  CHECK(ImageTransform(config).decode_shorter_side() == 256);
  config.crop_width = 300;  // wider than the shorter side: the longer side's rounding matters
  CHECK(ImageTransform(config).decode_shorter_side() == 0);
  config.crop_height = config.crop_width = 0;
  CHECK(ImageTransform(config, 500, 375).decode_shorter_side() == 0);  // no crop
  TransformConfig exact;
  exact.resize_height = 100;
  exact.resize_width = 250;
  CHECK(ImageTransform(exact).decode_shorter_side() == 250);
  CHECK(ImageTransform(TransformConfig{}, 32, 32).decode_shorter_side() == 0);
}

TEST_CASE("image transform: configurations and images that cannot give the output are DataErrors") {
  CHECK(contains(error_message<DataError>([] { ImageTransform{TransformConfig{}}; }),
                 "images vary in size: set crop or an exact resize"));
  TransformConfig shorter;
  shorter.resize_shorter = 64;
  CHECK(contains(error_message<DataError>([&] { ImageTransform{shorter}; }), "images vary in size"));

  TransformConfig crop = grey_config();
  crop.crop_height = crop.crop_width = 32;
  CHECK(contains(error_message<DataError>([&] { ImageTransform(crop, 28, 28); }),
                 "the crop 32x32 is larger than the input image 28x28"));
  const ImageTransform cropping(crop);
  std::vector<float> out(32 * 32);
  const std::string small = error_message<DataError>([&] { cropping.apply(positions(30, 40), out.data(), 0); });
  CHECK(contains(small, "the image 30x40 is smaller than the crop 32x32"));
  const std::string channels = error_message<DataError>(
      [&] { cropping.apply(make_image(40, 40, 3, [](int, int, int) { return 0; }), out.data(), 0); });
  CHECK(contains(channels, "3 channels"));

  TransformConfig fixed = grey_config();
  const ImageTransform fixed_size(fixed, 28, 28);
  const std::string other = error_message<DataError>([&] { fixed_size.apply(positions(28, 30), out.data(), 0); });
  CHECK(contains(other, "28x30"));
  CHECK(contains(other, "28x28"));

  TransformConfig mean = crop;
  mean.mean_height = mean.mean_width = 40;
  mean.mean_image.assign(40 * 40, 0.0f);
  CHECK(contains(error_message<DataError>([&] { ImageTransform(mean, 36, 36); }),
                 "the mean image is 40x40 but the input image is 36x36"));
  const ImageTransform varying(mean);
  const std::string mismatch = error_message<DataError>([&] { varying.apply(positions(36, 40), out.data(), 0); });
  CHECK(contains(mismatch, "the mean image is 40x40 but the image 36x40"));
  mean.mean_image.resize(5);
  CHECK(contains(error_message<DataError>([&] { ImageTransform{mean}; }), "holds 5 values, not 1x40x40"));

  TransformConfig both;
  both.resize_shorter = 10;
  both.resize_height = both.resize_width = 10;
  CHECK(contains(error_message<DataError>([&] { ImageTransform{both}; }), "not both"));
  TransformConfig stds = crop;
  stds.preprocess.std = {1.0f, 2.0f};
  CHECK(contains(error_message<DataError>([&] { ImageTransform{stds}; }), "2 values of std"));
}
