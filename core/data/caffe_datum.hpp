#pragma once
// Caffe's records for image data (core/data/caffe_data.proto): the Datum of
// an image LMDB, raw (channel-major pixels, colour in Caffe's B, G, R order)
// or encoded (the image file's bytes), and the BlobProto of a mean file.

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "core/data/image_codec.hpp"

namespace taihu {

// A parsed Datum, its pixels as an Image (RGB or grey, as decode_image).
struct DatumImage {
  Image image;
  int32_t label = 0;
};

// Parses a Datum record into `channels` channels (raw records must have
// that many; encoded ones are converted). `min_shorter_side` as
// decode_image. Throws DataError saying what is wrong with the record.
DatumImage parse_datum(std::span<const uint8_t> record, int channels, int min_shorter_side = 0);
// The label only, and the raw size (0 x 0 x 0 for an encoded record).
struct DatumHeader {
  int32_t label = 0;
  bool encoded = false;
  int channels = 0, height = 0, width = 0;
};
DatumHeader parse_datum_header(std::span<const uint8_t> record);

// A raw record (as Caffe's convert_imageset writes without --encoded).
std::vector<uint8_t> raw_datum(const Image& image, int32_t label);
// An encoded record: the image file's bytes as they are.
std::vector<uint8_t> encoded_datum(std::span<const uint8_t> file, int32_t label);

// A mean image (Caffe's compute_image_mean output): channels x height x
// width floats, channels in Caffe's order (B, G, R for colour).
struct MeanImage {
  int channels = 0, height = 0, width = 0;
  std::vector<float> values;
};
// Throws DataError naming the file if it is missing or not a BlobProto.
MeanImage read_mean_file(const std::filesystem::path& file);
// Writes atomically (a temporary file renamed into place).
void write_mean_file(const std::filesystem::path& file, const MeanImage& mean);

}  // namespace taihu
