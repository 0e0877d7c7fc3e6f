#include <doctest/doctest.h>
#include <turbojpeg.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/data/image_codec.hpp"
#include "support/error_message.hpp"
#include "support/test_images.hpp"

using namespace taihu;
using taihu::testing::error_message;
using taihu::testing::make_image;

namespace {

using Bytes = std::vector<uint8_t>;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Smooth content, which JPEG keeps well.
Image gradient(int height, int width, int channels) {
  return make_image(height, width, channels,
                    [&](int y, int x, int c) { return x * 150 / width + y * 50 / height + c * 20; });
}

// Content that does not compress, so a truncated file loses image data.
Image noise(int height, int width, int channels) {
  return make_image(height, width, channels,
                    [](int y, int x, int c) { return (y * 7919 + x * 104729 + c * 31) * 2654435761u >> 24; });
}

double mean_abs_error(const Image& a, const Image& b) {
  REQUIRE(a.pixels.size() == b.pixels.size());
  double sum = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) sum += std::abs(int(a.pixels[i]) - int(b.pixels[i]));
  return sum / static_cast<double>(a.pixels.size());
}

uint8_t luma(int r, int g, int b) { return static_cast<uint8_t>((19595 * r + 38470 * g + 7471 * b + 32768) >> 16); }

// A PNG written here rather than by libpng, so the reader is checked against
// the format itself: 16-bit samples, alpha, palettes and tRNS as stored.
void put32(Bytes& out, uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(value >> shift));
}

void chunk(Bytes& out, const char* type, const Bytes& data) {
  put32(out, static_cast<uint32_t>(data.size()));
  const size_t start = out.size();
  out.insert(out.end(), type, type + 4);
  out.insert(out.end(), data.begin(), data.end());
  put32(out, static_cast<uint32_t>(crc32(0, out.data() + start, static_cast<uInt>(out.size() - start))));
}

// `rows`: the packed samples of each row (filter bytes are added here).
Bytes png_file(int width, int height, int bit_depth, int colour_type, const std::vector<Bytes>& rows,
               const Bytes& palette = {}, const Bytes& transparency = {}) {
  Bytes out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  Bytes header;
  put32(header, static_cast<uint32_t>(width));
  put32(header, static_cast<uint32_t>(height));
  header.insert(header.end(), {uint8_t(bit_depth), uint8_t(colour_type), 0, 0, 0});
  chunk(out, "IHDR", header);
  if (!palette.empty()) chunk(out, "PLTE", palette);
  if (!transparency.empty()) chunk(out, "tRNS", transparency);
  if (!rows.empty()) {
    Bytes raw;
    for (const Bytes& row : rows) {
      raw.push_back(0);  // filter: none
      raw.insert(raw.end(), row.begin(), row.end());
    }
    uLongf size = compressBound(static_cast<uLong>(raw.size()));
    Bytes packed(size);
    REQUIRE(compress(packed.data(), &size, raw.data(), static_cast<uLong>(raw.size())) == Z_OK);
    packed.resize(size);
    chunk(out, "IDAT", packed);
  }
  chunk(out, "IEND", {});
  return out;
}

}  // namespace

TEST_CASE("image formats are told by their signature") {
  CHECK(sniff_image_format(encode_png(gradient(4, 4, 3))) == ImageFormat::png);
  CHECK(sniff_image_format(encode_jpeg(gradient(4, 4, 3))) == ImageFormat::jpeg);
  CHECK(sniff_image_format(Bytes{'G', 'I', 'F', '8', '9', 'a'}) == ImageFormat::unknown);
  CHECK(sniff_image_format(Bytes{}) == ImageFormat::unknown);
}

TEST_CASE("PNG images round-trip exactly, grey and RGB") {
  for (int channels : {1, 3}) {
    const Image image = noise(13, 17, channels);
    const Image back = decode_image(encode_png(image), channels);
    CHECK(back.height == 13);
    CHECK(back.width == 17);
    CHECK(back.channels == channels);
    CHECK(back.pixels == image.pixels);
  }
}

TEST_CASE("PNG image colour conversions: RGB to grey by BT.601 weights, grey to RGB by copies") {
  const Image rgb = noise(5, 6, 3);
  const Image grey = decode_image(encode_png(rgb), 1);
  REQUIRE(grey.pixels.size() == 30);
  for (size_t i = 0; i < 30; ++i) {
    CHECK(grey.pixels[i] == luma(rgb.pixels[3 * i], rgb.pixels[3 * i + 1], rgb.pixels[3 * i + 2]));
  }
  const Image grey_in = noise(5, 6, 1);
  const Image spread = decode_image(encode_png(grey_in), 3);
  for (size_t i = 0; i < 30; ++i) {
    CHECK(spread.pixels[3 * i] == grey_in.pixels[i]);
    CHECK(spread.pixels[3 * i + 1] == grey_in.pixels[i]);
    CHECK(spread.pixels[3 * i + 2] == grey_in.pixels[i]);
  }
}

TEST_CASE("PNG images of 16 bits, alpha, palettes and 1-bit grey decode to 8-bit grey or RGB") {
  SUBCASE("16-bit samples keep their high byte") {
    const Bytes file =
        png_file(2, 1, 16, 2, {{0x12, 0x34, 0xab, 0xcd, 0xff, 0xff, 0x00, 0x80, 0x7f, 0xff, 0x01, 0x00}});
    const Image image = decode_image(file, 3);
    CHECK(image.pixels == Bytes{0x12, 0xab, 0xff, 0x00, 0x7f, 0x01});
    const Image grey16 = decode_image(png_file(2, 1, 16, 0, {{0xbe, 0xef, 0x03, 0x04}}), 1);
    CHECK(grey16.pixels == Bytes{0xbe, 0x03});
  }
  SUBCASE("alpha is dropped, the stored colour kept") {
    const Bytes rgba = png_file(2, 1, 8, 6, {{10, 20, 30, 0, 40, 50, 60, 255}});
    CHECK(decode_image(rgba, 3).pixels == Bytes{10, 20, 30, 40, 50, 60});
    CHECK(decode_image(rgba, 1).pixels == Bytes{luma(10, 20, 30), luma(40, 50, 60)});
    const Bytes grey_alpha = png_file(2, 1, 8, 4, {{90, 0, 200, 128}});
    CHECK(decode_image(grey_alpha, 1).pixels == Bytes{90, 200});
    CHECK(decode_image(grey_alpha, 3).pixels == Bytes{90, 90, 90, 200, 200, 200});
  }
  SUBCASE("palette entries, with and without tRNS") {
    const Bytes palette = {255, 0, 0, 0, 128, 255, 7, 8, 9};
    const std::vector<Bytes> rows = {{0, 1, 2}, {2, 2, 0}};
    const Image image = decode_image(png_file(3, 2, 8, 3, rows, palette), 3);
    CHECK(image.pixels == Bytes{255, 0, 0, 0, 128, 255, 7, 8, 9, 7, 8, 9, 7, 8, 9, 255, 0, 0});
    const Image transparent = decode_image(png_file(3, 2, 8, 3, rows, palette, {0, 128}), 3);
    CHECK(transparent.pixels == image.pixels);
    const Image grey = decode_image(png_file(3, 2, 8, 3, rows, palette), 1);
    CHECK(grey.pixels ==
          Bytes{luma(255, 0, 0), luma(0, 128, 255), luma(7, 8, 9), luma(7, 8, 9), luma(7, 8, 9), luma(255, 0, 0)});
  }
  SUBCASE("1-bit grey spreads to 0 and 255") {
    CHECK(decode_image(png_file(3, 1, 1, 0, {{0b10100000}}), 1).pixels == Bytes{255, 0, 255});
  }
}

TEST_CASE("JPEG images round-trip within a small error, grey and RGB") {
  for (int channels : {1, 3}) {
    const Image image = gradient(48, 64, channels);
    const Image back = decode_image(encode_jpeg(image, 95), channels);
    CHECK(back.height == 48);
    CHECK(back.width == 64);
    CHECK(mean_abs_error(image, back) < 1.5);
  }
}

TEST_CASE("JPEG image colour conversions: colour to its luma, grey to three equal channels") {
  const Image rgb = gradient(32, 40, 3);
  const Image grey = decode_image(encode_jpeg(rgb, 95), 1);
  REQUIRE(grey.channels == 1);
  Image expected{32, 40, 1, {}};
  for (size_t i = 0; i < rgb.pixels.size(); i += 3)
    expected.pixels.push_back(luma(rgb.pixels[i], rgb.pixels[i + 1], rgb.pixels[i + 2]));
  CHECK(mean_abs_error(grey, expected) < 1.5);

  const Image spread = decode_image(encode_jpeg(gradient(32, 40, 1), 95), 3);
  REQUIRE(spread.channels == 3);
  for (size_t i = 0; i < spread.pixels.size(); i += 3) {
    REQUIRE(spread.pixels[i] == spread.pixels[i + 1]);
    REQUIRE(spread.pixels[i] == spread.pixels[i + 2]);
  }
}

TEST_CASE("CMYK JPEG images decode as Adobe's inverted ink to RGB and grey") {
  // Stored inverted, as Photoshop writes CMYK: 255 is no ink. Channel values
  // c, m, y under black k give RGB c*k/255, m*k/255, y*k/255.
  const int height = 16, width = 16;
  Bytes ink;
  for (int i = 0; i < height * width; ++i) ink.insert(ink.end(), {200, 100, 50, 128});
  tjhandle handle = tjInitCompress();
  REQUIRE(handle != nullptr);
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  REQUIRE(tjCompress2(handle, ink.data(), width, 0, height, TJPF_CMYK, &jpeg, &size, TJSAMP_444, 100, 0) == 0);
  const Bytes file(jpeg, jpeg + size);
  tjFree(jpeg);
  tjDestroy(handle);

  const Image rgb = decode_image(file, 3);
  const Image grey = decode_image(file, 1);
  for (int i = 0; i < height * width; ++i) {
    CHECK(std::abs(rgb.pixels[3 * i] - 100) <= 2);
    CHECK(std::abs(rgb.pixels[3 * i + 1] - 50) <= 2);
    CHECK(std::abs(rgb.pixels[3 * i + 2] - 25) <= 2);
    CHECK(std::abs(grey.pixels[i] - luma(100, 50, 25)) <= 2);
  }
}

TEST_CASE("JPEG images decode DCT-scaled to the smallest size whose shorter side stays long enough") {
  const Bytes file = encode_jpeg(gradient(480, 640, 3));
  struct Case {
    int min_shorter_side, height, width;
  };
  for (const Case& c : {Case{0, 480, 640}, Case{200, 240, 320}, Case{240, 240, 320}, Case{241, 480, 640},
                        Case{100, 120, 160}, Case{60, 60, 80}, Case{1, 60, 80}, Case{1000, 480, 640}}) {
    CAPTURE(c.min_shorter_side);
    const Image image = decode_image(file, 3, c.min_shorter_side);
    CHECK(image.height == c.height);
    CHECK(image.width == c.width);
    CHECK(image.pixels.size() == size_t(c.height) * size_t(c.width) * 3);
  }
  // Odd sides round up: 1/8 of 101 is 13 (ceil(12.625)).
  const Image odd = decode_image(encode_jpeg(gradient(101, 203, 1)), 1, 10);
  CHECK(odd.height == 13);
  CHECK(odd.width == 26);
  // PNG has no such scaling: full size whatever the request.
  CHECK(decode_image(encode_png(gradient(40, 60, 3)), 3, 10).height == 40);
}

TEST_CASE("truncated, corrupt, empty and unknown image data are DataErrors that say what is wrong") {
  const Bytes jpeg = encode_jpeg(noise(64, 64, 3), 90);
  const std::string cut_jpeg =
      error_message<DataError>([&] { decode_image(std::span(jpeg).first(jpeg.size() * 6 / 10), 3); });
  CHECK(contains(cut_jpeg, "truncated JPEG"));
  CHECK(contains(cut_jpeg, "Premature end"));
  const std::string header_only = error_message<DataError>([&] { decode_image(std::span(jpeg).first(40), 3); });
  CHECK(contains(header_only, "truncated JPEG (40 bytes): the data ends before the image header"));

  const Bytes png = encode_png(noise(64, 64, 3));
  const std::string cut_png = error_message<DataError>([&] { decode_image(std::span(png).first(png.size() / 2), 3); });
  CHECK(contains(cut_png, "truncated PNG"));
  Bytes flipped = png;
  flipped[flipped.size() / 2] ^= 0x55;  // inside IDAT: the CRC no longer matches
  const std::string corrupt_png = error_message<DataError>([&] { decode_image(flipped, 3); });
  CHECK(contains(corrupt_png, "corrupt PNG"));

  const Bytes html = {'<', 'h', 't', 'm', 'l', '>', '\n', 'x', 'y'};
  const std::string unknown = error_message<DataError>([&] { decode_image(html, 3); });
  CHECK(contains(unknown, "not a JPEG or PNG image (first bytes 3c 68 74 6d 6c 3e 0a 78 of 9): text"));
  CHECK(contains(error_message<DataError>([&] { decode_image(Bytes{'G', 'I', 'F', '8', '9', 'a', 0, 0}, 3); }), "GIF"));
  CHECK(contains(error_message<DataError>([&] { decode_image(Bytes{}, 3); }), "empty image data"));
  CHECK(contains(error_message<Error>([&] { decode_image(png, 4); }), "1 (grey) or 3 (RGB)"));
}

TEST_CASE("image headers with absurd sizes are refused before decoding") {
  // The header claims 400 megapixels; the data holds one row's start.
  const std::string huge = error_message<DataError>([] { decode_image(png_file(20000, 20000, 8, 0, {{0, 0}}), 1); });
  CHECK(contains(huge, "20000x20000"));
  CHECK(contains(huge, "too large"));
}

TEST_CASE("images decode concurrently, each thread with its own decompressor") {
  const Bytes jpeg = encode_jpeg(gradient(120, 160, 3));
  const Bytes png = encode_png(noise(30, 40, 3));
  const Image jpeg_expected = decode_image(jpeg, 3, 50);
  const Image png_expected = decode_image(png, 3);
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < mismatches.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        mismatches[t] += decode_image(jpeg, 3, 50).pixels != jpeg_expected.pixels;
        mismatches[t] += decode_image(png, 3).pixels != png_expected.pixels;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int count : mismatches) CHECK(count == 0);
}

namespace {

// Where the header segment with `marker` (0xc4 DHT, 0xdb DQT, 0xda SOS) starts.
size_t find_segment(const Bytes& jpeg, uint8_t marker) {
  size_t at = 2;
  while (at + 4 <= jpeg.size() && jpeg[at] == 0xff) {
    if (jpeg[at + 1] == marker) return at;
    if (jpeg[at + 1] == 0xda) break;
    at += 2 + (size_t{jpeg[at + 2]} << 8 | jpeg[at + 3]);
  }
  FAIL("no segment ", int(marker));
  return 0;
}

}  // namespace

TEST_CASE("a corrupt JPEG does not make the next good ones fail on the same thread's decompressor") {
  const Bytes colour = encode_jpeg(noise(64, 64, 3), 90);
  const Bytes wide = encode_jpeg(gradient(48, 80, 3), 85);
  const Bytes grey = encode_jpeg(noise(40, 30, 1), 90);
  // Each good file decoded on a thread of its own: a decompressor that never failed.
  struct Good {
    const Bytes* bytes;
    int channels, min_shorter_side;
    Image expected;
  };
  std::vector<Good> goods = {{&colour, 3, 0, {}}, {&wide, 1, 0, {}}, {&grey, 3, 0, {}}, {&colour, 3, 16, {}},
                             {&wide, 3, 0, {}}};
  for (Good& good : goods)
    std::thread([&] { good.expected = decode_image(*good.bytes, good.channels, good.min_shorter_side); }).join();

  std::vector<std::pair<std::string, Bytes>> bad;
  // Errors while reading the header: libjpeg-turbo 2.1 left the handle inside a header.
  bad.emplace_back("cut before its scan", Bytes(colour.begin(), colour.begin() + find_segment(colour, 0xda)));
  Bytes huffman = colour;
  std::fill_n(huffman.begin() + find_segment(colour, 0xc4) + 5, 16, 0xff);  // code counts summing past 256
  bad.emplace_back("a bogus Huffman table", huffman);
  Bytes quantisation = colour;
  quantisation[find_segment(colour, 0xdb) + 4] = 0x0f;  // table index 15
  bad.emplace_back("a bogus quantisation table index", quantisation);
  Bytes garbage = colour;
  for (size_t i = 3; i < 64; ++i) garbage[i] = static_cast<uint8_t>(i * 97);
  bad.emplace_back("garbage after the start marker", garbage);
  // Errors while decoding the scan.
  bad.emplace_back("truncated in its scan", Bytes(colour.begin(), colour.begin() + colour.size() * 6 / 10));
  Bytes flipped = colour;
  for (size_t i = flipped.size() / 2; i < flipped.size() / 2 + 32; ++i) flipped[i] ^= 0x5a;
  bad.emplace_back("bytes flipped in its entropy data", flipped);

  for (const auto& entry : bad) {
    const std::string& what = entry.first;  // not a structured binding: clang before 16 cannot capture one
    const Bytes& bytes = entry.second;
    CAPTURE(what);
    std::vector<std::string> failures;
    std::thread([&] {
      auto attempt = [&](const Good& good) {
        try {
          if (decode_image(*good.bytes, good.channels, good.min_shorter_side).pixels != good.expected.pixels)
            failures.push_back("different pixels");
        } catch (const std::exception& e) {
          failures.push_back(e.what());
        }
      };
      attempt(goods[0]);
      std::string error;
      try {
        error = error_message<DataError>([&] { decode_image(bytes, 3); });
      } catch (const std::exception& e) {
        error = e.what();
      }
      if (!contains(error, "JPEG (")) failures.push_back("the bad file's error: " + error);
      for (const Good& good : goods) attempt(good);
    }).join();
    std::string all;
    for (const auto& failure : failures) all += failure + "; ";
    CHECK(all == "");
  }
}
