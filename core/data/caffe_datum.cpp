#include "core/data/caffe_datum.hpp"

#include <climits>
#include <fstream>
#include <iterator>

#include "core/common/check.hpp"
#include "core/data/caffe_data.pb.h"

namespace taihu {

namespace fs = std::filesystem;
namespace pb = taihu::caffe_data;

namespace {

pb::Datum parse(std::span<const uint8_t> record) {
  pb::Datum datum;
  require<DataError>(record.size() <= INT32_MAX && datum.ParseFromArray(record.data(), static_cast<int>(record.size())),
                     "not a Caffe Datum record ({} bytes)", record.size());
  return datum;
}

}  // namespace

DatumHeader parse_datum_header(std::span<const uint8_t> record) {
  const pb::Datum datum = parse(record);
  DatumHeader h;
  h.label = datum.label();
  h.encoded = datum.encoded();
  if (!h.encoded) {
    h.channels = datum.channels();
    h.height = datum.height();
    h.width = datum.width();
  }
  return h;
}

DatumImage parse_datum(std::span<const uint8_t> record, int channels, int min_shorter_side) {
  const pb::Datum datum = parse(record);
  DatumImage out;
  out.label = datum.label();
  const std::string& data = datum.data();
  if (datum.encoded()) {
    out.image = decode_image(std::span(reinterpret_cast<const uint8_t*>(data.data()), data.size()), channels,
                             min_shorter_side);
    return out;
  }
  require<DataError>(data.empty() ? datum.float_data_size() == 0 : true,
                     "a Datum of float_data: taihu reads 8-bit image records only");
  const int64_t c = datum.channels(), h = datum.height(), w = datum.width();
  require<DataError>(c == channels, "a raw record of {} channel(s), where the data set has {}", c, channels);
  // By division: c * h * w of a record's int32 sides overflowed int64 (fuzz_lmdb).
  const auto bytes = static_cast<int64_t>(data.size());
  require<DataError>(c > 0 && h > 0 && w > 0 && bytes % (c * w) == 0 && bytes / (c * w) == h,
                     "a raw record of {} bytes for {} x {} x {} pixels", data.size(), c, h, w);
  Image& image = out.image;
  image.height = static_cast<int>(h);
  image.width = static_cast<int>(w);
  image.channels = static_cast<int>(c);
  image.pixels.resize(data.size());
  // Channel-major B, G, R (Caffe's order from OpenCV) to interleaved R, G, B.
  const auto* src = reinterpret_cast<const uint8_t*>(data.data());
  const int64_t plane = h * w;
  for (int64_t ch = 0; ch < c; ++ch) {
    const uint8_t* from = src + (c == 3 ? 2 - ch : ch) * plane;
    uint8_t* to = image.pixels.data() + ch;
    for (int64_t i = 0; i < plane; ++i) to[i * c] = from[i];
  }
  return out;
}

std::vector<uint8_t> raw_datum(const Image& image, int32_t label) {
  pb::Datum datum;
  const int64_t c = image.channels, plane = static_cast<int64_t>(image.height) * image.width;
  datum.set_channels(image.channels);
  datum.set_height(image.height);
  datum.set_width(image.width);
  datum.set_label(label);
  std::string* data = datum.mutable_data();
  data->resize(static_cast<size_t>(c * plane));
  for (int64_t ch = 0; ch < c; ++ch) {
    const uint8_t* from = image.pixels.data() + (c == 3 ? 2 - ch : ch);
    char* to = data->data() + ch * plane;
    for (int64_t i = 0; i < plane; ++i) to[i] = static_cast<char>(from[i * c]);
  }
  std::vector<uint8_t> out(datum.ByteSizeLong());
  datum.SerializeToArray(out.data(), static_cast<int>(out.size()));
  return out;
}

std::vector<uint8_t> encoded_datum(std::span<const uint8_t> file, int32_t label) {
  pb::Datum datum;
  datum.set_label(label);
  datum.set_encoded(true);
  datum.set_data(reinterpret_cast<const char*>(file.data()), file.size());
  std::vector<uint8_t> out(datum.ByteSizeLong());
  datum.SerializeToArray(out.data(), static_cast<int>(out.size()));
  return out;
}

MeanImage read_mean_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  require<DataError>(in.good(), "cannot read the mean file '{}'", file.string());
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  pb::BlobProto blob;
  require<DataError>(blob.ParseFromString(bytes), "'{}' is not a Caffe mean file (a BlobProto)", file.string());
  std::vector<int64_t> dims;
  if (blob.has_shape())
    dims.assign(blob.shape().dim().begin(), blob.shape().dim().end());
  else
    dims = {blob.num(), blob.channels(), blob.height(), blob.width()};
  // 1 x C x H x W, or C x H x W.
  if (dims.size() == 4 && dims[0] == 1) dims.erase(dims.begin());
  require<DataError>(dims.size() == 3 && dims[0] > 0 && dims[1] > 0 && dims[2] > 0,
                     "the mean file '{}' holds a blob of {} dimension(s), not one image (1 x C x H x W)",
                     file.string(), dims.size());
  // The sides' product is bounded by division before it is computed: it
  // overflowed int64, and 2^30 x 2^30 x 2^30 wrapped to 0 and passed as an
  // image that holds no values (fuzz_lmdb). A file holds at most INT_MAX
  // values (a protobuf repeated field), so each side fits MeanImage's int too.
  require<DataError>(dims[0] <= INT_MAX / dims[1] / dims[2],
                     "the mean file '{}' declares a blob of {} x {} x {} values: more than a file can hold",
                     file.string(), dims[0], dims[1], dims[2]);
  MeanImage mean;
  mean.channels = static_cast<int>(dims[0]);
  mean.height = static_cast<int>(dims[1]);
  mean.width = static_cast<int>(dims[2]);
  const int64_t count = dims[0] * dims[1] * dims[2];
  if (blob.data_size() == count) {
    mean.values.assign(blob.data().begin(), blob.data().end());
  } else {
    require<DataError>(blob.double_data_size() == count, "the mean file '{}' holds {} values for {} x {} x {}",
                       file.string(), std::max(blob.data_size(), blob.double_data_size()), dims[0], dims[1],
                       dims[2]);
    mean.values.assign(blob.double_data().begin(), blob.double_data().end());
  }
  return mean;
}

void write_mean_file(const fs::path& file, const MeanImage& mean) {
  pb::BlobProto blob;
  for (int64_t d : {int64_t{1}, int64_t{mean.channels}, int64_t{mean.height}, int64_t{mean.width}})
    blob.mutable_shape()->add_dim(d);
  blob.mutable_data()->Add(mean.values.begin(), mean.values.end());
  const fs::path staging = fs::path(file.string() + ".tmp");
  {
    std::ofstream out(staging, std::ios::binary | std::ios::trunc);
    require<DataError>(out.good() && blob.SerializeToOstream(&out) && out.flush().good(),
                       "cannot write the mean file '{}'", staging.string());
  }
  std::error_code ec;
  fs::rename(staging, file, ec);
  require<DataError>(!ec, "cannot rename '{}' to '{}': {}", staging.string(), file.string(), ec.message());
}

}  // namespace taihu
