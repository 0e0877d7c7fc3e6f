#pragma once
// Augmentation and normalisation of decoded images into a sample's floats,
// as Caffe's DataTransformer and torchvision's transforms do it:
//   1. resize: the shorter side to `resize_shorter` (aspect kept), or to
//      exactly resize_height x resize_width; antialiased bilinear, as PIL;
//   2. crop crop_height x crop_width: at a random position when training,
//      centred when evaluating;
//   3. mirror: a horizontal flip with probability 1/2, when training;
//   4. to floats, channel-major (C x H x W; RGB, or BGR as Caffe's models
//      expect with `bgr`):
//        ((pixel - mean_image[c][y][x]) * scale - mean[c]) / std[c]
//      where mean_image is Caffe's mean file (of the resized image's size;
//      the crop takes the same window of it), and mean/std hold one value or
//      one per channel, as Preprocess.
// The random choices of a sample are a pure function of its `draw` key (the
// caller derives it from seed, epoch and index), so runs repeat exactly and a
// resumed run continues with the same augmentation.

#include <cstdint>
#include <vector>

#include "core/data/preprocess.hpp"
#include "core/data/image_codec.hpp"
#include "core/tensor/shape.hpp"

namespace taihu {

struct TransformConfig {
  int channels = 3;            // 1 or 3; decoded images are converted to this
  int resize_shorter = 0;      // 0: no resize by the shorter side
  int resize_height = 0;       // both > 0: an exact resize (exclusive with resize_shorter)
  int resize_width = 0;
  int crop_height = 0;         // both > 0: crop; 0: the (resized) image whole
  int crop_width = 0;
  bool mirror = false;         // random horizontal flips when training
  bool bgr = false;            // output channels in Caffe's order (B, G, R); images are RGB
  Preprocess preprocess;       // scale, mean, std
  // Caffe's mean file: channels x mean_height x mean_width floats, subtracted
  // before `scale`; empty: none.
  std::vector<float> mean_image;
  int mean_height = 0;
  int mean_width = 0;
};

class ImageTransform {
 public:
  // `input_height` x `input_width`: the size every stored image has, where
  // known (raw LMDB records, a uniform folder); 0 where images vary. The
  // output shape must then be fixed by a crop or an exact resize. Throws
  // DataError for a configuration that cannot work (no fixed output shape, a
  // crop larger than a fixed input, a mean image of another size).
  ImageTransform(TransformConfig config, int input_height = 0, int input_width = 0);

  // channels x out_height x out_width.
  Shape output_shape() const;
  const TransformConfig& config() const { return config_; }
  // The shorter side decoding may scale JPEGs down to without loss of what
  // the transform uses (0: decode at full size).
  int decode_shorter_side() const;

  // Writes output_shape().count() floats. `draw` = 0: the evaluation view
  // (centre crop, no flip); otherwise the seed of this sample's random crop
  // and flip. Throws DataError if the image cannot give the output (smaller
  // than the crop, or of another size where no resize or crop fixes it),
  // naming both sizes.
  void apply(const Image& image, float* out, uint64_t draw) const;

 private:
  TransformConfig config_;
  int input_height_;
  int input_width_;
};

}  // namespace taihu
