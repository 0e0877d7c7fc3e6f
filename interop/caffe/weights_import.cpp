#include "interop/caffe/weights_import.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "core/common/error.hpp"
#include "core/common/excerpt.hpp"
#include "core/train/train_setup.hpp"

namespace taihu::caffe {

namespace {

// One layer's blobs in the file, whichever layer form held them.
struct FileLayer {
  const google::protobuf::RepeatedPtrField<BlobProto>* blobs;
  bool used = false;
};

std::map<std::string, FileLayer> index_layers(const CaffeWeights& weights) {
  std::map<std::string, FileLayer> layers;
  for (const auto& l : weights.layer()) layers.emplace(l.name(), FileLayer{&l.blobs()});
  for (const auto& l : weights.layers()) {
    if (l.has_layer() && l.blobs_size() == 0)  // V0, nested
      layers.emplace(l.layer().name(), FileLayer{&l.layer().blobs()});
    else
      layers.emplace(l.name(), FileLayer{&l.blobs()});
  }
  return layers;
}

// The blob's shape; an old 4-D shape (num, channels, height, width) counts as
// `expected` when it is `expected` padded with leading ones, as Caffe itself
// accepts it.
std::vector<int64_t> blob_shape(const BlobProto& blob, const Shape& expected) {
  if (blob.has_shape()) return {blob.shape().dim().begin(), blob.shape().dim().end()};
  std::vector<int64_t> legacy = {blob.num(), blob.channels(), blob.height(), blob.width()};
  std::vector<int64_t> want = expected.dims();
  if (want.size() <= 4) {
    std::vector<int64_t> padded(4 - want.size(), 1);
    padded.insert(padded.end(), want.begin(), want.end());
    if (padded == legacy) return want;
  }
  return legacy;
}

std::string shape_text(const std::vector<int64_t>& dims) {
  return dims.empty() ? "a scalar" : fmt::format("{}", fmt::join(dims, "x"));
}

// The blob's values as floats (files may hold doubles).
std::vector<float> blob_values(const BlobProto& blob) {
  if (blob.data_size() > 0 || blob.double_data_size() == 0) return {blob.data().begin(), blob.data().end()};
  return {blob.double_data().begin(), blob.double_data().end()};
}

class WeightCopier {
 public:
  WeightCopier(const std::string& source, const Layer& layer, const FileLayer& file)
      : source_(source), layer_(layer), blobs_(*file.blobs) {}

  // Copies blob `index` into `param`, each value multiplied by `factor`.
  void copy(int index, const Param& param, float factor) const {
    const BlobProto& blob = blobs_.Get(index);
    const Shape& expected = param.blob->data().shape();
    const std::vector<int64_t> found = blob_shape(blob, expected);
    const std::string label = param.name.substr(param.name.rfind('/') + 1);
    if (found != expected.dims())
      fail(fmt::format("parameter '{}' (blob {}): the weights file has shape {}, the net expects {}", label, index,
                       shape_text(found), shape_text(expected.dims())));
    const std::vector<float> values = blob_values(blob);
    if (static_cast<int64_t>(values.size()) != expected.count())
      fail(fmt::format("parameter '{}' (blob {}): shape {} needs {} values, the file holds {}", label, index,
                       shape_text(found), expected.count(), values.size()));
    std::vector<float> scaled = values;
    for (float& v : scaled) v *= factor;
    require_finite(scaled, fmt::format("parameter '{}' (blob {})", label, index));
    std::copy(scaled.begin(), scaled.end(), param.blob->data().ptr());
  }

  // Weights that are NaN or infinite (a diverged run's) would train nothing
  // but NaN: refused, naming the first.
  void require_finite(const std::vector<float>& values, const std::string& what) const {
    const auto bad = std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
    if (bad == values.end()) return;
    const auto count = std::count_if(bad, values.end(), [](float v) { return !std::isfinite(v); });
    fail(fmt::format("{}: {} of its {} values are not finite (value {} is {}); the weights file is unusable (from a "
                     "diverged run?)",
                     what, count, values.size(), bad - values.begin(), std::isnan(*bad) ? "NaN" : "infinite"));
  }

  int count() const { return blobs_.size(); }
  const BlobProto& blob(int index) const { return blobs_.Get(index); }

  [[noreturn]] void fail(const std::string& message) const {
    throw ConfigError(fmt::format("{}: layer '{}' ({}): {}", source_, excerpt(layer_.name()), layer_.type(), message));
  }

 private:
  const std::string& source_;
  const Layer& layer_;
  const google::protobuf::RepeatedPtrField<BlobProto>& blobs_;
};

// Caffe's BatchNorm blobs: sum-weighted mean and variance, and their weight.
void copy_batch_norm(const WeightCopier& copier, std::vector<Param>& params) {
  if (copier.count() != 3)
    copier.fail(fmt::format("Caffe's BatchNorm stores 3 blobs (mean, variance, scale factor); the file has {}",
                            copier.count()));
  const std::vector<float> factor_values = blob_values(copier.blob(2));
  if (factor_values.size() != 1)
    copier.fail(fmt::format("the scale factor (blob 2) should hold one value, it holds {}", factor_values.size()));
  copier.require_finite(factor_values, "the scale factor (blob 2)");
  const float factor = factor_values[0] == 0.0f ? 0.0f : 1.0f / factor_values[0];
  copier.copy(0, params[0], factor);
  copier.copy(1, params[1], factor);
}

void copy_layer(const WeightCopier& copier, Layer& layer) {
  std::vector<Param>& params = layer.params();
  if (std::string(layer.type()) == "BatchNorm") return copy_batch_norm(copier, params);
  if (copier.count() != static_cast<int>(params.size()))
    copier.fail(fmt::format("the weights file has {} blob(s), the layer has {} parameter(s) ({}); is bias_term the "
                            "same in the prototxt the weights were trained with?",
                            copier.count(), params.size(), params.size() == 1 ? "no bias" : "weight and bias"));
  for (size_t i = 0; i < params.size(); ++i) copier.copy(static_cast<int>(i), params[i], 1.0f);
}

}  // namespace

ImportedWeights import_weights(const CaffeWeights& weights, const std::string& source, Net& net, uint64_t seed,
                               bool keep_missing) {
  std::map<std::string, FileLayer> file_layers = index_layers(weights);
  ImportedWeights out;
  std::vector<std::string> missing;
  for (size_t i = 0; i < net.num_layers(); ++i) {
    Layer& layer = net.layer(i);
    if (layer.params().empty()) continue;
    auto it = file_layers.find(layer.name());
    if (it == file_layers.end()) {
      if (!keep_missing)
        throw ConfigError(fmt::format("{}: the weights file has no layer '{}' ({}), which has parameters in the net "
                                      "(--keep-missing starts such layers from their fillers)",
                                      source, excerpt(layer.name()), layer.type()));
      missing.push_back(layer.name());
      continue;
    }
    it->second.used = true;
    copy_layer(WeightCopier(source, layer, it->second), layer);
  }
  if (!missing.empty())
    out.notes.push_back(fmt::format("{}: {} layer(s) of the net are not in the file and keep their initial values (fillers): {}",
                                    source, missing.size(), fmt::join(missing, ", ")));
  std::vector<std::string> unused;
  for (const auto& [name, file_layer] : file_layers)
    if (!file_layer.used && file_layer.blobs->size() > 0) unused.push_back(name);
  if (!unused.empty())
    out.notes.push_back(fmt::format("{}: {} layer(s) with weights are not in the net and were skipped: {}", source,
                                    unused.size(), fmt::join(unused, ", ")));

  out.checkpoint = starting_checkpoint(net, seed);
  return out;
}

}  // namespace taihu::caffe
