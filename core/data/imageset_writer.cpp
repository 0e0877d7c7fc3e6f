#include "core/data/imageset_writer.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <numeric>

#include "core/common/check.hpp"
#include "core/common/random.hpp"
#include "core/data/caffe_datum.hpp"
#include "core/data/file_bytes.hpp"
#include "core/data/image_transform.hpp"
#include "core/data/lmdb_database.hpp"
#include "core/common/progress.hpp"

namespace taihu {

namespace fs = std::filesystem;

namespace {

// `image` resized to height x width, through the training transform's resize
// (scale 1: floats of the pixel values), rounded back to bytes.
Image resized(const Image& image, int height, int width) {
  TransformConfig config;
  config.channels = image.channels;
  config.resize_height = height;
  config.resize_width = width;
  const ImageTransform transform(config);
  std::vector<float> planes(static_cast<size_t>(image.channels) * height * width);
  transform.apply(image, planes.data(), 0);
  Image out;
  out.height = height;
  out.width = width;
  out.channels = image.channels;
  out.pixels.resize(planes.size());
  const size_t plane = static_cast<size_t>(height) * width;
  for (int c = 0; c < image.channels; ++c)
    for (size_t i = 0; i < plane; ++i)
      out.pixels[i * image.channels + c] =
          static_cast<uint8_t>(std::clamp(std::lround(planes[c * plane + i]), 0L, 255L));
  return out;
}

}  // namespace

ImagesetResult write_imageset(const ImageIndex& index, const fs::path& out, const ImagesetOptions& options) {
  require<DataError>(options.channels == 1 || options.channels == 3, "channels must be 1 or 3, got {}",
                     options.channels);
  const bool resize = options.resize_height > 0 && options.resize_width > 0;
  std::vector<int64_t> order(static_cast<size_t>(index.size()));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (options.shuffle) {
    Rng rng(options.seed);
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  }

  LmdbWriter writer(out);
  ImagesetResult result;
  std::vector<double> mean_sum;  // channel-major, Caffe's channel order
  bool uniform = true;           // every written image of one size (for the mean)
  Progress progress("imageset", index.size(), 1, Progress::parse_mode(options.progress, "--progress"), 1000,
                    "img");
  int64_t logged = 0;
  for (size_t n = 0; n < order.size(); ++n) {
    const auto i = static_cast<size_t>(order[n]);
    const fs::path& file = index.files[i];
    const int32_t label = index.labels[i];
    try {
      std::vector<uint8_t> bytes = read_raw_file_bytes(file);
      Image image = decode_image(bytes, options.channels);
      if (resize && (image.height != options.resize_height || image.width != options.resize_width)) {
        image = resized(image, options.resize_height, options.resize_width);
        if (options.encoded) {
          const auto format = sniff_image_format(bytes);
          bytes = format == ImageFormat::png ? encode_png(image) : encode_jpeg(image, 95);
        }
      }
      if (result.written == 0) {
        result.height = image.height;
        result.width = image.width;
      } else if (image.height != result.height || image.width != result.width) {
        // Raw records of several sizes could not be batched by Caffe's readers.
        require<DataError>(options.encoded, "{} x {}, where the first image was {} x {} (raw records need one size: "
                           "give --resize=H,W, or --encoded)", image.height, image.width, result.height, result.width);
        uniform = false;
      }
      const fs::path name = options.key_root.empty() ? file : file.lexically_relative(options.key_root);
      const std::string key = fmt::format("{:08d}_{}", n, name.empty() ? file.string() : name.string());
      writer.put(key, options.encoded ? encoded_datum(bytes, label) : raw_datum(image, label));
      ++result.written;
      if (!options.mean_file.empty() && uniform) {
        const size_t plane = static_cast<size_t>(image.height) * image.width;
        const int c = image.channels;
        mean_sum.resize(plane * c, 0.0);
        for (int ch = 0; ch < c; ++ch) {
          double* to = mean_sum.data() + (c == 3 ? 2 - ch : ch) * plane;  // B, G, R
          for (size_t p = 0; p < plane; ++p) to[p] += image.pixels[p * c + ch];
        }
      }
    } catch (const DataError& e) {
      ++result.skipped;
      if (logged++ < 20) spdlog::warn("skipped {}: {}", file.string(), e.what());
    }
    progress.update(static_cast<int64_t>(n) + 1, "");
  }
  require<DataError>(result.written > 0, "no image could be converted ({} skipped)", result.skipped);
  if (!uniform) result.height = result.width = 0;
  if (!options.mean_file.empty()) {
    require<DataError>(uniform, "a mean image needs images of one size: give --resize=H,W");
    MeanImage mean;
    mean.channels = options.channels;
    mean.height = result.height;
    mean.width = result.width;
    mean.values.resize(mean_sum.size());
    for (size_t k = 0; k < mean_sum.size(); ++k)
      mean.values[k] = static_cast<float>(mean_sum[k] / static_cast<double>(result.written));
    write_mean_file(options.mean_file, mean);
  }
  // The class names beside the records (label, then name), for people and tools.
  std::string classes;
  for (size_t c = 0; c < index.classes.size(); ++c) classes += fmt::format("{} {}\n", c, index.classes[c]);
  writer.attach("classes.txt", classes);
  writer.finish();
  progress.finish(fmt::format("{} images -> {} ({} skipped)", result.written, out.string(), result.skipped));
  return result;
}

}  // namespace taihu
