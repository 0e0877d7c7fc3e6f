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

// The order the records are written in: the listing's, or shuffled by options.seed.
std::vector<int64_t> record_order(size_t n, const ImagesetOptions& options) {
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), int64_t{0});
  if (options.shuffle) {
    Rng rng(options.seed);
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  }
  return order;
}

// The image in `bytes`, resized as the options say; when records keep the
// encoded file, `bytes` becomes the resized image's encoding (its own format).
Image prepared_image(std::vector<uint8_t>& bytes, const ImagesetOptions& options) {
  Image image = decode_image(bytes, options.channels);
  const bool resize = options.resize_height > 0 && options.resize_width > 0;
  if (resize && (image.height != options.resize_height || image.width != options.resize_width)) {
    image = resized(image, options.resize_height, options.resize_width);
    if (options.encoded) {
      const auto format = sniff_image_format(bytes);
      bytes = format == ImageFormat::png ? encode_png(image) : encode_jpeg(image, 95);
    }
  }
  return image;
}

// Caffe's mean file: the per-pixel sum of the images written, channel-major in
// Caffe's channel order (B, G, R), divided by their count at the end.
class MeanSum {
 public:
  void add(const Image& image) {
    const size_t plane = static_cast<size_t>(image.height) * image.width;
    const int c = image.channels;
    sum_.resize(plane * c, 0.0);
    for (int ch = 0; ch < c; ++ch) {
      double* to = sum_.data() + (c == 3 ? 2 - ch : ch) * plane;  // B, G, R
      for (size_t p = 0; p < plane; ++p) to[p] += image.pixels[p * c + ch];
    }
  }

  MeanImage mean(int channels, int height, int width, int64_t count) const {
    MeanImage mean;
    mean.channels = channels;
    mean.height = height;
    mean.width = width;
    mean.values.resize(sum_.size());
    for (size_t k = 0; k < sum_.size(); ++k) mean.values[k] = static_cast<float>(sum_[k] / static_cast<double>(count));
    return mean;
  }

 private:
  std::vector<double> sum_;
};

}  // namespace

ImagesetResult write_imageset(const ImageIndex& index, const fs::path& out, const ImagesetOptions& options) {
  require<DataError>(options.channels == 1 || options.channels == 3, "channels must be 1 or 3, got {}",
                     options.channels);
  const std::vector<int64_t> order = record_order(static_cast<size_t>(index.size()), options);
  LmdbWriter writer(out);
  ImagesetResult result;
  MeanSum mean_sum;
  bool uniform = true;  // every written image of one size (for the mean)
  Progress progress("imageset", index.size(), 1, Progress::parse_mode(options.progress, "--progress"), 1000,
                    "img");
  int64_t logged = 0;
  for (size_t n = 0; n < order.size(); ++n) {
    const auto i = static_cast<size_t>(order[n]);
    const fs::path& file = index.files[i];
    const int32_t label = index.labels[i];
    try {
      std::vector<uint8_t> bytes = read_raw_file_bytes(file);
      const Image image = prepared_image(bytes, options);
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
      if (!options.mean_file.empty() && uniform) mean_sum.add(image);
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
    write_mean_file(options.mean_file, mean_sum.mean(options.channels, result.height, result.width, result.written));
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
