#include "core/data/image_codec.hpp"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include "core/common/check.hpp"

namespace taihu {

namespace {

// Larger images are refused before any pixel buffer is allocated: a corrupt
// or hostile header must not make a loader thread allocate gigabytes. 2^28
// pixels (16384 x 16384) is far beyond any training image.
constexpr int64_t kMaxPixels = int64_t{1} << 28;

constexpr uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

void check_channels(int channels) {
  require(channels == 1 || channels == 3, "images decode to 1 (grey) or 3 (RGB) channels, not {}", channels);
}

void check_size(std::string_view format, int64_t height, int64_t width) {
  require<DataError>(height > 0 && width > 0, "{} image of {}x{} pixels (height x width) is empty", format, height,
                     width);
  require<DataError>(height * width <= kMaxPixels,
                     "{} image of {}x{} pixels (height x width) is too large: the limit is 2^28 pixels", format, height,
                     width);
}

// "ff d8 ff e0 ..." of the first bytes, for messages about unknown data.
std::string first_bytes(std::span<const uint8_t> bytes) {
  std::string text;
  for (size_t i = 0; i < std::min<size_t>(bytes.size(), 8); ++i) {
    if (i > 0) text += ' ';
    text += fmt::format("{:02x}", bytes[i]);
  }
  return text;
}

// Names common formats that are not JPEG or PNG, so the message says what
// the file is rather than only what it is not.
std::string_view other_format(std::span<const uint8_t> bytes) {
  const std::string_view head(reinterpret_cast<const char*>(bytes.data()), std::min<size_t>(bytes.size(), 12));
  if (head.starts_with("GIF8")) return ": a GIF image";
  if (head.starts_with("BM")) return ": a BMP image, perhaps";
  // (Only a head of 12 bytes has a form at 8: substr past the end throws
  // std::out_of_range, which a 4-byte "RIFF" once made of a DataError.)
  if (head.starts_with("RIFF") && head.size() == 12 && head.substr(8) == "WEBP") return ": a WebP image";
  if (head.starts_with("II*") || head.starts_with(std::string_view("MM\0*", 4))) return ": a TIFF image";
  if (head.starts_with("<")) return ": text, an HTML or XML page perhaps";
  return "";
}

// Dropping or mixing colour: BT.601 luma on the gamma-encoded values, in the
// fixed point of libjpeg's RGB->YCbCr and PIL's convert("L"), so a grey view
// of a PNG matches the Y plane libjpeg gives for a colour JPEG.
void rgb_to_grey(const uint8_t* rgb, uint8_t* grey, size_t pixels) {
  for (size_t i = 0; i < pixels; ++i, rgb += 3) {
    grey[i] = static_cast<uint8_t>((19595u * rgb[0] + 38470u * rgb[1] + 7471u * rgb[2] + 32768u) >> 16);
  }
}

// ---------------------------------------------------------------- JPEG

// TurboJPEG handles allocate libjpeg's state (tens of kilobytes) when made:
// one per thread, made on first use, freed when the thread exits.
//
// A handle that failed is thrown away and the thread's next call makes a new
// one: libjpeg-turbo 2.1's tjDecompressHeader3 leaves an error by longjmp
// without aborting the decompressor, so libjpeg's state stays "inside a
// header" and the next file's markers are read as the rest of the bad one's.
// A corrupt header (a bad Huffman or quantisation table, a missing SOS) then
// made the next good JPEGs on that thread fail, as "truncated ... ends before
// the image header" or with the bad file's own error.
template <tjhandle (*Init)()>
class ThreadHandle {
 public:
  static tjhandle get() {
    ThreadHandle& holder = mine();
    if (holder.handle_ == nullptr) holder.handle_ = Init();
    require(holder.handle_ != nullptr, "cannot start libjpeg-turbo: {}", tjGetErrorStr2(nullptr));
    return holder.handle_;
  }

  // After a failure: the next get() makes a fresh handle.
  static void discard() {
    ThreadHandle& holder = mine();
    if (holder.handle_ != nullptr) tjDestroy(holder.handle_);
    holder.handle_ = nullptr;
  }

 private:
  static ThreadHandle& mine() {
    thread_local ThreadHandle holder;
    return holder;
  }
  ThreadHandle() = default;
  ~ThreadHandle() {
    if (handle_ != nullptr) tjDestroy(handle_);
  }
  tjhandle handle_ = nullptr;
};

using Decompressor = ThreadHandle<tjInitDecompress>;
using Compressor = ThreadHandle<tjInitCompress>;

// libjpeg reports a cut-off file as the warning "Premature end of JPEG file"
// (it pads the stream and would decode grey blocks); any other failure is
// corrupt data.
[[noreturn]] void raise_jpeg_error(tjhandle handle, std::span<const uint8_t> bytes) {
  const std::string message = tjGetErrorStr2(handle);
  if (message.find("Premature end") != std::string::npos) {
    raise<DataError>("truncated JPEG ({} bytes): {}", bytes.size(), message);
  }
  raise<DataError>("corrupt JPEG ({} bytes): {}", bytes.size(), message);
}

// The DCT scales that are pure IDCT size reductions (1/1, 1/2, 1/4, 1/8),
// smallest first. TurboJPEG offers M/8 for every M too, but those use
// libjpeg's plain C IDCTs and save little; these four have SIMD kernels and
// are what PIL's draft() uses.
int scale_denominator(int height, int width, int min_shorter_side) {
  if (min_shorter_side <= 0) return 1;
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  for (int denom : {8, 4, 2}) {
    const bool offered = std::any_of(factors, factors + std::max(count, 0),
                                     [&](const tjscalingfactor& f) { return f.num == 1 && f.denom == denom; });
    const tjscalingfactor factor{1, denom};
    if (offered && std::min(TJSCALED(height, factor), TJSCALED(width, factor)) >= min_shorter_side) {
      return denom;
    }
  }
  return 1;
}

// libjpeg-turbo writes and reads CMYK as Adobe applications store it,
// inverted (255 = no ink), so a channel's intensity is c * k / 255.
void cmyk_to_rgb(const uint8_t* cmyk, uint8_t* rgb, size_t pixels) {
  for (size_t i = 0; i < pixels; ++i, cmyk += 4, rgb += 3) {
    const unsigned k = cmyk[3];
    for (int c = 0; c < 3; ++c) rgb[c] = static_cast<uint8_t>((cmyk[c] * k + 127u) / 255u);
  }
}

Image decode_jpeg(std::span<const uint8_t> bytes, int channels, int min_shorter_side) {
  tjhandle handle = Decompressor::get();
  // Whatever the failure (also one found here, as a header of no size), the
  // handle that met the bad file is not used again.
  struct DiscardOnFailure {
    int exceptions = std::uncaught_exceptions();
    ~DiscardOnFailure() {
      if (std::uncaught_exceptions() > exceptions) Decompressor::discard();
    }
  } discard_on_failure;
  const auto size = static_cast<unsigned long>(bytes.size());
  int width = 0, height = 0, subsampling = 0, colourspace = 0;
  if (tjDecompressHeader3(handle, bytes.data(), size, &width, &height, &subsampling, &colourspace) != 0) {
    raise_jpeg_error(handle, bytes);
  }
  // libjpeg treats a stream that ends before its frame header as a valid
  // "tables-only" one and reports a size of 0.
  require<DataError>(width > 0 && height > 0, "truncated JPEG ({} bytes): the data ends before the image header",
                     bytes.size());
  check_size("JPEG", height, width);

  const tjscalingfactor factor{1, scale_denominator(height, width, min_shorter_side)};
  Image image;
  image.height = TJSCALED(height, factor);
  image.width = TJSCALED(width, factor);
  image.channels = channels;
  const size_t pixels = static_cast<size_t>(image.height) * static_cast<size_t>(image.width);
  image.pixels.resize(pixels * static_cast<size_t>(channels));

  // Warnings are errors: libjpeg "recovers" from a truncated or corrupt
  // stream by filling in grey, which would train on a broken image.
  // LIMITSCANS refuses progressive files built to take minutes to decode.
  // The IDCT stays TurboJPEG's default, the accurate one, as PIL and
  // torchvision decode: TJFLAG_FASTDCT saved only about 5% of the decode
  // time of a 500x375 photo (Huffman decoding dominates, and the accurate
  // IDCT has AVX2 code) for a visibly larger error.
  const int flags = TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS;
  // libjpeg converts YCbCr, RGB and grey to either output, but not CMYK/YCCK.
  const bool cmyk = colourspace == TJCS_CMYK || colourspace == TJCS_YCCK;
  if (!cmyk) {
    const int format = channels == 1 ? TJPF_GRAY : TJPF_RGB;
    if (tjDecompress2(handle, bytes.data(), size, image.pixels.data(), image.width, 0, image.height, format, flags) !=
        0) {
      raise_jpeg_error(handle, bytes);
    }
    return image;
  }
  std::vector<uint8_t> ink(pixels * 4);
  if (tjDecompress2(handle, bytes.data(), size, ink.data(), image.width, 0, image.height, TJPF_CMYK, flags) != 0) {
    raise_jpeg_error(handle, bytes);
  }
  if (channels == 3) {
    cmyk_to_rgb(ink.data(), image.pixels.data(), pixels);
  } else {
    std::vector<uint8_t> rgb(pixels * 3);
    cmyk_to_rgb(ink.data(), rgb.data(), pixels);
    rgb_to_grey(rgb.data(), image.pixels.data(), pixels);
  }
  return image;
}

// ---------------------------------------------------------------- PNG
//
// libpng's full API rather than its simplified png_image one: the simplified
// reader converts by the file's gAMA chunk, treats 16-bit data as linear
// light and makes grey in linear light, so its pixels would differ from what
// PIL, OpenCV and torchvision give for the same file. Here no gamma is
// applied, 16-bit samples keep their high byte, alpha and tRNS are dropped
// (PIL's convert("RGB")), and RGB->grey is rgb_to_grey.
//
// libpng reports errors by longjmp. The functions that call into libpng
// under setjmp (read_png_header, read_png_rows) hold only trivially
// destructible locals, so the jump skips no destructor.

struct PngReader {
  png_structp png = nullptr;
  png_infop info = nullptr;
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t position = 0;
  bool truncated = false;
  char message[256] = {};

  PngReader() = default;
  PngReader(const PngReader&) = delete;
  PngReader& operator=(const PngReader&) = delete;
  ~PngReader() { png_destroy_read_struct(&png, &info, nullptr); }
};

void png_fail(png_structp png, png_const_charp message) {
  auto* reader = static_cast<PngReader*>(png_get_error_ptr(png));
  std::snprintf(reader->message, sizeof reader->message, "%s", message);
  png_longjmp(png, 1);
}

// Warnings (an sRGB profile libpng thinks wrong, a bad ancillary chunk) do
// not affect the pixels.
void png_ignore(png_structp, png_const_charp) {}

void png_read_memory(png_structp png, png_bytep out, size_t count) {
  auto* reader = static_cast<PngReader*>(png_get_io_ptr(png));
  if (reader->size - reader->position < count) {
    reader->truncated = true;
    png_error(png, "the data ends inside a chunk");
  }
  std::copy_n(reader->data + reader->position, count, out);
  reader->position += count;
}

bool read_png_header(PngReader& reader) {
  if (setjmp(png_jmpbuf(reader.png))) return false;
  png_read_info(reader.png, reader.info);
  return true;
}

// Sets the conversions to 8-bit grey or RGB (`out_channels`) and reads every
// row (interlaced files too).
bool read_png_rows(PngReader& reader, int out_channels, png_bytepp rows) {
  png_structp png = reader.png;
  if (setjmp(png_jmpbuf(png))) return false;
  const int colour_type = png_get_color_type(png, reader.info);
  if (png_get_bit_depth(png, reader.info) == 16) png_set_strip_16(png);
  if (colour_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (colour_type == PNG_COLOR_TYPE_GRAY) png_set_expand_gray_1_2_4_to_8(png);
  // Also for tRNS, which palette expansion turns into alpha.
  png_set_strip_alpha(png);
  if ((colour_type & PNG_COLOR_MASK_COLOR) == 0 && out_channels == 3) png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, reader.info);
  if (png_get_rowbytes(png, reader.info) != png_get_image_width(png, reader.info) * size_t(out_channels)) {
    png_error(png, "unexpected row layout after conversion");
  }
  png_read_image(png, rows);
  return true;
}

[[noreturn]] void raise_png_error(const PngReader& reader, std::span<const uint8_t> bytes) {
  if (reader.truncated) raise<DataError>("truncated PNG ({} bytes): {}", bytes.size(), reader.message);
  raise<DataError>("corrupt PNG ({} bytes): {}", bytes.size(), reader.message);
}

Image decode_png(std::span<const uint8_t> bytes, int channels) {
  PngReader reader;
  reader.data = bytes.data();
  reader.size = bytes.size();
  reader.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &reader, png_fail, png_ignore);
  require(reader.png != nullptr, "cannot start libpng (out of memory?)");
  reader.info = png_create_info_struct(reader.png);
  require(reader.info != nullptr, "cannot start libpng (out of memory?)");
  png_set_read_fn(reader.png, &reader, png_read_memory);

  if (!read_png_header(reader)) raise_png_error(reader, bytes);
  Image image;
  image.height = static_cast<int>(png_get_image_height(reader.png, reader.info));
  image.width = static_cast<int>(png_get_image_width(reader.png, reader.info));
  image.channels = channels;
  // (libpng refuses sides over a million itself, so the int conversion holds.)
  check_size("PNG", image.height, image.width);

  const bool colour = (png_get_color_type(reader.png, reader.info) & PNG_COLOR_MASK_COLOR) != 0;
  // Colour to grey is done here after reading RGB, libpng's own would differ.
  const int read_channels = colour ? 3 : channels;
  const size_t pixels = static_cast<size_t>(image.height) * static_cast<size_t>(image.width);
  std::vector<uint8_t> rgb(colour && channels == 1 ? pixels * 3 : 0);
  image.pixels.resize(pixels * static_cast<size_t>(channels));
  uint8_t* target = rgb.empty() ? image.pixels.data() : rgb.data();
  const size_t row_bytes = static_cast<size_t>(image.width) * static_cast<size_t>(read_channels);
  std::vector<png_bytep> rows(static_cast<size_t>(image.height));
  for (size_t y = 0; y < rows.size(); ++y) rows[y] = target + y * row_bytes;

  if (!read_png_rows(reader, read_channels, rows.data())) raise_png_error(reader, bytes);
  if (!rgb.empty()) rgb_to_grey(rgb.data(), image.pixels.data(), pixels);
  return image;
}

void check_image(const Image& image, std::string_view format) {
  require(image.channels == 1 || image.channels == 3, "{} encoding takes 1 or 3 channels, not {}", format,
          image.channels);
  require(image.height > 0 && image.width > 0 && int64_t{image.height} * image.width <= kMaxPixels,
          "{} encoding of an image of {}x{} pixels: empty or too large", format, image.height, image.width);
  require(image.pixels.size() == size_t(image.height) * size_t(image.width) * size_t(image.channels),
          "{} encoding: {} bytes of pixels for {}x{}x{}", format, image.pixels.size(), image.height, image.width,
          image.channels);
}

}  // namespace

ImageFormat sniff_image_format(std::span<const uint8_t> bytes) {
  // JPEG: SOI followed by the first marker's 0xff.
  if (bytes.size() >= 3 && bytes[0] == 0xff && bytes[1] == 0xd8 && bytes[2] == 0xff) return ImageFormat::jpeg;
  if (bytes.size() >= 8 && std::equal(kPngSignature, kPngSignature + 8, bytes.begin())) return ImageFormat::png;
  return ImageFormat::unknown;
}

Image decode_image(std::span<const uint8_t> bytes, int channels, int min_shorter_side) {
  check_channels(channels);
  require<DataError>(!bytes.empty(), "empty image data (0 bytes)");
  switch (sniff_image_format(bytes)) {
    case ImageFormat::jpeg:
      return decode_jpeg(bytes, channels, min_shorter_side);
    case ImageFormat::png:
      return decode_png(bytes, channels);
    case ImageFormat::unknown:
      break;
  }
  raise<DataError>("not a JPEG or PNG image (first bytes {} of {}){}", first_bytes(bytes), bytes.size(),
                   other_format(bytes));
}

std::vector<uint8_t> encode_png(const Image& image) {
  check_image(image, "PNG");
  png_image info{};
  info.version = PNG_IMAGE_VERSION;
  info.width = static_cast<png_uint_32>(image.width);
  info.height = static_cast<png_uint_32>(image.height);
  info.format = image.channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  // The first call measures, the second writes.
  png_alloc_size_t size = 0;
  const bool measured = png_image_write_to_memory(&info, nullptr, &size, 0, image.pixels.data(), 0, nullptr) != 0;
  require(measured, "PNG encoding failed: {}", info.message);
  std::vector<uint8_t> bytes(size);
  const bool written = png_image_write_to_memory(&info, bytes.data(), &size, 0, image.pixels.data(), 0, nullptr) != 0;
  require(written, "PNG encoding failed: {}", info.message);
  bytes.resize(size);
  return bytes;
}

std::vector<uint8_t> encode_jpeg(const Image& image, int quality) {
  check_image(image, "JPEG");
  require(quality >= 1 && quality <= 100, "JPEG quality must be 1 to 100, not {}", quality);
  tjhandle handle = Compressor::get();
  // 4:2:0 chroma as PIL and libjpeg's cjpeg write by default.
  const int subsampling = image.channels == 1 ? TJSAMP_GRAY : TJSAMP_420;
  const int format = image.channels == 1 ? TJPF_GRAY : TJPF_RGB;
  // tjBufSize bounds the output, so TurboJPEG writes straight into `bytes`.
  std::vector<uint8_t> bytes(tjBufSize(image.width, image.height, subsampling));
  unsigned char* out = bytes.data();
  unsigned long size = bytes.size();
  if (tjCompress2(handle, image.pixels.data(), image.width, 0, image.height, format, &out, &size, subsampling, quality,
                  TJFLAG_NOREALLOC | TJFLAG_ACCURATEDCT) != 0) {
    const std::string message = tjGetErrorStr2(handle);
    Compressor::discard();
    raise("JPEG encoding failed: {}", message);
  }
  bytes.resize(size);
  return bytes;
}

}  // namespace taihu
