#include "core/data/image_transform.hpp"

#include <algorithm>
#include <string>

#include "core/common/check.hpp"
#include "core/common/random.hpp"
#include "core/data/image_resize.hpp"

namespace taihu {

namespace {

// Height x width; 0 x 0 where not known before an image is seen.
struct Size {
  int height = 0;
  int width = 0;
  bool known() const { return height > 0; }
  friend bool operator==(const Size&, const Size&) = default;
};

std::string text(Size size) { return fmt::format("{}x{}", size.height, size.width); }

bool cropping(const TransformConfig& config) { return config.crop_height > 0; }
bool resizing(const TransformConfig& config) { return config.resize_height > 0 || config.resize_shorter > 0; }

// torchvision's Resize(int): the shorter side becomes `shorter`, the longer
// keeps the aspect ratio, truncated (int(shorter * long / short)).
Size resize_shorter_side(Size in, int shorter) {
  if (in.height <= in.width) {
    const auto width = static_cast<int64_t>(shorter) * in.width / in.height;
    return {shorter, static_cast<int>(std::max<int64_t>(width, 1))};
  }
  const auto height = static_cast<int64_t>(shorter) * in.height / in.width;
  return {static_cast<int>(std::max<int64_t>(height, 1)), shorter};
}

// The size after the resize step, for an image (or the fixed input) of size `in`.
Size resized_size(const TransformConfig& config, Size in) {
  if (config.resize_height > 0) return {config.resize_height, config.resize_width};
  if (!in.known()) return {};
  if (config.resize_shorter > 0) return resize_shorter_side(in, config.resize_shorter);
  return in;
}

// The output's height x width: the crop, else the resized image, which is
// fixed only by an exact resize or a fixed input size.
Size output_size(const TransformConfig& config, Size input) {
  if (cropping(config)) return {config.crop_height, config.crop_width};
  return resized_size(config, input);
}

// Per output channel: the image channel it reads (BGR reverses them) and
// the normalisation ((p - m) * scale - mean) / std folded into
// (p - m) * gain + bias. mean and std are in output channel order.
struct ChannelPlan {
  int source[3] = {0, 1, 2};
  float gain[3] = {1, 1, 1};
  float bias[3] = {0, 0, 0};
};

ChannelPlan channel_plan(const TransformConfig& config) {
  const Preprocess& pre = config.preprocess;
  ChannelPlan plan;
  for (int c = 0; c < config.channels; ++c) {
    const auto at = static_cast<size_t>(c);
    const float mean = pre.mean.empty() ? 0.0f : pre.mean.size() == 1 ? pre.mean[0] : pre.mean[at];
    const float deviation = pre.std.empty() ? 1.0f : pre.std.size() == 1 ? pre.std[0] : pre.std[at];
    plan.source[c] = config.bgr ? config.channels - 1 - c : c;
    plan.gain[c] = pre.scale / deviation;
    plan.bias[c] = -mean / deviation;
  }
  return plan;
}

// Where normalised values go: channel planes of the output (out_height x
// `width` floats each), and the mean image's values for the window.
struct Target {
  float* out = nullptr;  // channel 0, first row to write
  size_t plane = 0;      // floats per output channel
  int width = 0;
  const float* mean = nullptr;  // channel 0 at the window's first pixel; null: no mean image
  size_t mean_stride = 0;       // floats per mean image row
  size_t mean_plane = 0;        // floats per mean image channel
  ChannelPlan channels;
};

// Normalises `rows` rows of the window (channels interleaved, rows `stride`
// values apart) into the channel planes, mirrored when Flip. As in Caffe,
// the mean image is taken at the source pixel, before the flip. Channels and
// flip are template arguments so the inner loops carry no branch.
template <int C, bool Flip, class T>
void emit(const T* window, size_t stride, int rows, const Target& target) {
  const int width = target.width;
  for (int y = 0; y < rows; ++y) {
    for (int oc = 0; oc < C; ++oc) {
      const T* in = window + static_cast<size_t>(y) * stride + target.channels.source[oc];
      float* out = target.out + static_cast<size_t>(oc) * target.plane + static_cast<size_t>(y) * width;
      const float gain = target.channels.gain[oc];
      const float bias = target.channels.bias[oc];
      if (target.mean == nullptr) {
        for (int x = 0; x < width; ++x) {
          const int s = Flip ? width - 1 - x : x;
          out[x] = static_cast<float>(in[s * C]) * gain + bias;
        }
      } else {
        const float* mean =
            target.mean + static_cast<size_t>(oc) * target.mean_plane + static_cast<size_t>(y) * target.mean_stride;
        for (int x = 0; x < width; ++x) {
          const int s = Flip ? width - 1 - x : x;
          out[x] = (static_cast<float>(in[s * C]) - mean[s]) * gain + bias;
        }
      }
    }
  }
}

template <class T>
void emit(int channels, bool flip, const T* window, size_t stride, int rows, const Target& target) {
  if (channels == 1) {
    flip ? emit<1, true>(window, stride, rows, target) : emit<1, false>(window, stride, rows, target);
  } else {
    flip ? emit<3, true>(window, stride, rows, target) : emit<3, false>(window, stride, rows, target);
  }
}

}  // namespace

ImageTransform::ImageTransform(TransformConfig config, int input_height, int input_width)
    : config_(std::move(config)), input_height_(input_height), input_width_(input_width) {
  const TransformConfig& c = config_;
  require<DataError>(c.channels == 1 || c.channels == 3, "images have 1 or 3 channels, not {}", c.channels);
  require<DataError>(c.resize_shorter >= 0 && c.resize_height >= 0 && c.resize_width >= 0 && c.crop_height >= 0 &&
                         c.crop_width >= 0 && input_height >= 0 && input_width >= 0,
                     "image sizes must not be negative");
  require<DataError>((c.resize_height > 0) == (c.resize_width > 0),
                     "an exact resize needs both its height and width (got {}x{})", c.resize_height, c.resize_width);
  require<DataError>(c.resize_shorter == 0 || c.resize_height == 0,
                     "resize the shorter side ({}) or resize exactly ({}x{}), not both", c.resize_shorter,
                     c.resize_height, c.resize_width);
  require<DataError>((c.crop_height > 0) == (c.crop_width > 0), "a crop needs both its height and width (got {}x{})",
                     c.crop_height, c.crop_width);
  require<DataError>((input_height > 0) == (input_width > 0), "a fixed input size needs both sides (got {}x{})",
                     input_height, input_width);

  const Preprocess& pre = c.preprocess;
  const auto channels = static_cast<size_t>(c.channels);
  for (const auto* values : {&pre.mean, &pre.std}) {
    require<DataError>(values->size() <= 1 || values->size() == channels,
                       "{} values of {} for {}-channel images: give one, or one per channel", values->size(),
                       values == &pre.mean ? "mean" : "std", c.channels);
  }
  require<DataError>(std::none_of(pre.std.begin(), pre.std.end(), [](float s) { return s == 0.0f; }),
                     "std must not be 0");

  const Size resized = resized_size(c, {input_height, input_width});
  const Size output = output_size(c, {input_height, input_width});
  require<DataError>(output.known(),
                     "images vary in size: set crop or an exact resize, so that every sample has one shape");
  if (cropping(c) && resized.known()) {
    require<DataError>(c.crop_height <= resized.height && c.crop_width <= resized.width,
                       "the crop {} is larger than the {} image {}", text(output), resizing(c) ? "resized" : "input",
                       text(resized));
  }
  if (!c.mean_image.empty()) {
    require<DataError>(
        c.mean_height > 0 && c.mean_width > 0 &&
            c.mean_image.size() == channels * static_cast<size_t>(c.mean_height) * static_cast<size_t>(c.mean_width),
        "the mean image holds {} values, not {}x{}x{}", c.mean_image.size(), c.channels, c.mean_height, c.mean_width);
    const Size mean{c.mean_height, c.mean_width};
    require<DataError>(!resized.known() || mean == resized,
                       "the mean image is {} but the {} image is {}: they must be of one size", text(mean),
                       resizing(c) ? "resized" : "input", text(resized));
  }
}

Shape ImageTransform::output_shape() const {
  const Size output = output_size(config_, {input_height_, input_width_});
  return Shape{config_.channels, output.height, output.width};
}

// A DCT-scaled decode is harmless where the decoded image still gets
// downscaled to a size that does not depend on the scale:
//  - an exact resize H x W: a decoded shorter side >= max(H, W) keeps both
//    decoded sides >= both target sides, whatever the orientation;
//  - a shorter-side resize to S, cropped to at most S x S: the decoded image
//    still has shorter side >= S. The resized longer side may come out one
//    pixel off the full-size decode's (rounding of the scaled size), which
//    only shifts the crop's range; so not without a crop (the output shape
//    would change) nor with a mean image (whose size must match exactly).
int ImageTransform::decode_shorter_side() const {
  const TransformConfig& c = config_;
  if (c.resize_height > 0) return std::max(c.resize_height, c.resize_width);
  if (c.resize_shorter > 0 && cropping(c) && c.mean_image.empty() && c.crop_height <= c.resize_shorter &&
      c.crop_width <= c.resize_shorter) {
    return c.resize_shorter;
  }
  return 0;
}

void ImageTransform::apply(const Image& image, float* out, uint64_t draw) const {
  const TransformConfig& c = config_;
  require<DataError>(image.channels == c.channels, "an image of {} channels, where the transform takes {}",
                     image.channels, c.channels);
  const Size in{image.height, image.width};
  require<DataError>(in.known() && in.width > 0 &&
                         image.pixels.size() == static_cast<size_t>(in.height) * static_cast<size_t>(in.width) *
                                                    static_cast<size_t>(image.channels),
                     "an image of {}x{}x{} with {} bytes of pixels", image.channels, in.height, in.width,
                     image.pixels.size());
  const Size resized = resized_size(c, in);
  const Size output = output_size(c, {input_height_, input_width_});
  // For messages only: formatting it up front would allocate per image.
  const auto described = [&] {
    return resized == in ? text(in) : fmt::format("{} (resized to {})", text(in), text(resized));
  };
  if (cropping(c)) {
    if (resized.height < output.height || resized.width < output.width) {
      raise<DataError>("the image {} is smaller than the crop {}", described(), text(output));
    }
  } else if (resized != output) {
    raise<DataError>("the image {} is not of the size {} that every sample must have", described(), text(output));
  }
  if (!c.mean_image.empty() && resized != Size{c.mean_height, c.mean_width}) {
    raise<DataError>("the mean image is {} but the image {} is not: they must be of one size",
                     text({c.mean_height, c.mean_width}), described());
  }

  // Caffe's test phase centres the crop; a draw seeds the random view.
  int top = (resized.height - output.height) / 2;
  int left = (resized.width - output.width) / 2;
  bool flip = false;
  if (draw != 0) {
    Rng rng(draw);
    top = static_cast<int>(rng.below(static_cast<uint64_t>(resized.height - output.height) + 1));
    left = static_cast<int>(rng.below(static_cast<uint64_t>(resized.width - output.width) + 1));
    flip = c.mirror && (rng() >> 63) != 0;
  }

  Target target;
  target.out = out;
  target.plane = static_cast<size_t>(output.height) * static_cast<size_t>(output.width);
  target.width = output.width;
  target.channels = channel_plan(c);
  if (!c.mean_image.empty()) {
    target.mean_stride = static_cast<size_t>(c.mean_width);
    target.mean_plane = static_cast<size_t>(c.mean_height) * target.mean_stride;
    target.mean = c.mean_image.data() + static_cast<size_t>(top) * target.mean_stride + static_cast<size_t>(left);
  }
  const auto row_values = static_cast<size_t>(in.width) * static_cast<size_t>(c.channels);

  if (resized == in) {  // crop (or not) straight from the 8-bit pixels
    const uint8_t* window = image.pixels.data() + static_cast<size_t>(top) * row_values +
                            static_cast<size_t>(left) * static_cast<size_t>(c.channels);
    emit(c.channels, flip, window, row_values, output.height, target);
    return;
  }
  // The resizer's buffers outlive the call, so a loader thread stops
  // allocating after its first images.
  thread_local WindowResizer resizer;
  resizer.start(image, resized.height, resized.width, top, left, output.height, output.width);
  for (int y = 0; y < output.height; ++y) {
    Target row = target;
    row.out += static_cast<size_t>(y) * static_cast<size_t>(output.width);
    if (row.mean != nullptr) row.mean += static_cast<size_t>(y) * target.mean_stride;
    emit(c.channels, flip, resizer.row(y), 0, 1, row);
  }
}

}  // namespace taihu
