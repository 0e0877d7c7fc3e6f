// Caffe weights: a caffemodel written here through the generated protobuf
// classes imports to the same weights, and the imported net computes what
// the same net computes with those weights set directly.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/net/net.hpp"
#include "core/train/checkpoint.hpp"
#include "interop/caffe/net_import.hpp"
#include "interop/caffe/proto_files.hpp"
#include "interop/caffe/weights_import.hpp"

using namespace taihu;

namespace {

// Caffe's way of writing it: BatchNorm and Scale in place.
constexpr const char* prototxt = R"(
name: "small"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 3 dim: 6 dim: 6 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 4 kernel_size: 3 pad: 1 } }
layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1" batch_norm_param { eps: 0.001 } }
layer { name: "scale1" type: "Scale" bottom: "conv1" top: "conv1" scale_param { bias_term: true } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "ip" type: "InnerProduct" bottom: "conv1" top: "ip" inner_product_param { num_output: 5 } }
)";

// The same net as written for taihu by hand.
constexpr const char* taihu_net = R"(
[net]
name = small
[input data]
shape = 3 6 6
[layer conv1]
type = Convolution
bottom = data
top = conv1
num_output = 4
kernel_size = 3
pad = 1
[layer bn1]
type = BatchNorm
bottom = conv1
top = bn1
eps = 0.001
[layer scale1]
type = Scale
bottom = bn1
top = scale1
bias_term = true
[layer relu1]
type = ReLU
bottom = scale1
top = scale1
[layer ip]
type = InnerProduct
bottom = scale1
top = ip
num_output = 5
)";

float value_at(int blob, int i) { return std::sin(0.37f * static_cast<float>(i) + 1.3f * static_cast<float>(blob)); }

// Blob `id`'s values, computed in one place: a loop of sin() may be
// vectorised (libmvec) in one caller and not another, which rounds differently.
std::vector<float> blob_values(int id, int64_t count, float scale) {
  std::vector<float> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    values[static_cast<size_t>(i)] = scale * std::abs(value_at(id, static_cast<int>(i))) + (id == 3 ? 0.5f : 0.0f);
  return values;
}

caffe::BlobProto* add_blob(google::protobuf::RepeatedPtrField<caffe::BlobProto>* blobs, std::vector<int64_t> dims,
                           int id, float scale = 1.0f, bool legacy_shape = false) {
  caffe::BlobProto* blob = blobs->Add();
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  if (legacy_shape) {  // the 4-D form of files written before BlobShape
    while (dims.size() < 4) dims.insert(dims.begin(), 1);
    blob->set_num(dims[0]), blob->set_channels(dims[1]), blob->set_height(dims[2]), blob->set_width(dims[3]);
  } else {
    for (int64_t d : dims) blob->mutable_shape()->add_dim(d);
  }
  for (float v : blob_values(id, count, scale)) blob->add_data(v);
  return blob;
}

constexpr float bn_factor = 2.0f;  // Caffe's BatchNorm blob 2: its sums' weight

// conv1, bn1 (mean and variance stored times the factor), scale1 as
// current Caffe writes them; ip as an old (V1, 4-D shapes) file does.
caffe::CaffeWeights make_weights() {
  caffe::CaffeWeights w;
  w.set_name("small");
  auto* conv = w.add_layer();
  conv->set_name("conv1"), conv->set_type("Convolution");
  add_blob(conv->mutable_blobs(), {4, 3, 3, 3}, 0);
  add_blob(conv->mutable_blobs(), {4}, 1);
  auto* bn = w.add_layer();
  bn->set_name("bn1"), bn->set_type("BatchNorm");
  add_blob(bn->mutable_blobs(), {4}, 2, bn_factor);
  add_blob(bn->mutable_blobs(), {4}, 3, bn_factor);
  bn->add_blobs()->add_data(bn_factor);
  bn->mutable_blobs(2)->mutable_shape()->add_dim(1);
  auto* scale = w.add_layer();
  scale->set_name("scale1"), scale->set_type("Scale");
  add_blob(scale->mutable_blobs(), {4}, 4);
  add_blob(scale->mutable_blobs(), {4}, 5);
  auto* ip = w.add_layers();
  ip->set_name("ip"), ip->set_type(14);  // INNER_PRODUCT
  add_blob(ip->mutable_blobs(), {5, 144}, 6, 0.1f, true);
  add_blob(ip->mutable_blobs(), {5}, 7, 1.0f, true);
  auto* data = w.add_layer();  // a layer without weights: ignored
  data->set_name("data"), data->set_type("Input");
  return w;
}

std::unique_ptr<Net> imported_net(uint64_t seed) {
  const auto description = caffe::import_net(caffe::parse_net(prototxt, "small.prototxt")).description;
  return std::make_unique<Net>(std::make_shared<config::Document>(description), 2, seed);
}

void fill_input(Net& net) {
  Tensor& x = net.blob("data").data();
  for (int64_t i = 0; i < x.count(); ++i) x.ptr()[i] = value_at(9, static_cast<int>(i));
}

}  // namespace

TEST_SUITE("caffe") {
  TEST_CASE("caffe weights import to the same values, and the net computes what taihu does with them") {
    auto net = imported_net(7);
    const caffe::CaffeWeights weights = make_weights();
    const caffe::ImportedWeights imported = caffe::import_weights(weights, "small.caffemodel", *net, 7);
    CHECK(imported.notes.empty());

    // The reference: taihu's own description, weights set directly.
    Net reference(std::make_shared<config::Document>(config::Document::parse(taihu_net, "small.ini")), 2, 99);
    auto set = [&](const std::string& name, int id, float scale) {
      for (Param* p : reference.params())
        if (p->name == name) {
          Tensor& t = p->blob->data();
          const std::vector<float> values = blob_values(id, t.count(), scale);
          std::copy(values.begin(), values.end(), t.ptr());
          return;
        }
      FAIL("no parameter ", name);
    };
    set("conv1/weight", 0, 1), set("conv1/bias", 1, 1), set("scale1/weight", 4, 1), set("scale1/bias", 5, 1);
    set("ip/weight", 6, 0.1f), set("ip/bias", 7, 1);
    // Caffe's stored statistics are divided by the factor.
    for (Param* p : reference.params()) {
      if (p->name != "bn1/mean" && p->name != "bn1/variance") continue;
      const int id = p->name == "bn1/mean" ? 2 : 3;
      Tensor& t = p->blob->data();
      const std::vector<float> stored = blob_values(id, t.count(), bn_factor);
      for (int64_t i = 0; i < t.count(); ++i) t.ptr()[i] = stored[static_cast<size_t>(i)] * (1.0f / bn_factor);
    }

    const auto net_params = net->params();
    const auto reference_params = reference.params();
    REQUIRE(net_params.size() == reference_params.size());
    REQUIRE(imported.checkpoint.params.size() == net_params.size());
    for (size_t i = 0; i < net_params.size(); ++i) {
      CAPTURE(net_params[i]->name);
      CHECK(net_params[i]->name == reference_params[i]->name);
      CHECK(imported.checkpoint.params[i].name == net_params[i]->name);
      const Tensor& a = net_params[i]->blob->data();
      const Tensor& b = reference_params[i]->blob->data();
      REQUIRE(a.shape() == b.shape());
      for (int64_t k = 0; k < a.count(); ++k) CHECK(a.ptr()[k] == b.ptr()[k]);
      for (int64_t k = 0; k < a.count(); ++k) CHECK(imported.checkpoint.params[i].values[k] == a.ptr()[k]);
    }

    for (Net* n : {net.get(), &reference}) {
      n->set_phase(Phase::test);
      fill_input(*n);
      n->forward();
    }
    const Tensor& out = net->blob("ip").data();
    const Tensor& expected = reference.blob("ip").data();
    REQUIRE(out.shape() == Shape{2, 5});
    for (int64_t k = 0; k < out.count(); ++k) CHECK(out.ptr()[k] == expected.ptr()[k]);
  }

  TEST_CASE("caffe weights in the oldest form (a V0 layer inside a V1 layer) import too") {
    caffe::CaffeWeights weights = make_weights();
    caffe::CaffeWeights old;
    for (const auto& l : weights.layer()) {  // every layer as V1 { layer: V0 { name, blobs } }
      auto* v0 = old.add_layers()->mutable_layer();
      v0->set_name(l.name());
      *v0->mutable_blobs() = l.blobs();
    }
    *old.add_layers() = weights.layers(0);  // ip, already V1
    auto net = imported_net(5);
    auto reference = imported_net(5);
    caffe::import_weights(old, "old.caffemodel", *net, 5);
    caffe::import_weights(weights, "new.caffemodel", *reference, 5);
    const auto a = net->params(), b = reference->params();
    for (size_t i = 0; i < a.size(); ++i)
      for (int64_t k = 0; k < a[i]->blob->data().count(); ++k)
        CHECK(a[i]->blob->data().ptr()[k] == b[i]->blob->data().ptr()[k]);
  }

  TEST_CASE("caffe weights checkpoint: written as taihu writes checkpoints, loads into a fresh net of the config") {
    auto net = imported_net(3);
    const caffe::ImportedWeights imported = caffe::import_weights(make_weights(), "small.caffemodel", *net, 3);
    const auto path = std::filesystem::temp_directory_path() / "taihu_caffe_weights_test.ckpt";
    save_checkpoint(imported.checkpoint, path);
    const Checkpoint loaded = load_checkpoint(path);
    std::filesystem::remove(path);
    CHECK(loaded.net_name == "small");
    CHECK(loaded.seed == 3);
    CHECK(loaded.iteration == 0);
    CHECK(loaded.solver_state.empty());
    auto fresh = imported_net(3);
    const auto params = fresh->params();
    REQUIRE(loaded.params.size() == params.size());
    for (size_t i = 0; i < params.size(); ++i) loaded.params[i].restore_into(params[i]->blob->data());
    fresh->set_phase(Phase::test), net->set_phase(Phase::test);
    fill_input(*fresh), fill_input(*net);
    fresh->forward(), net->forward();
    for (int64_t k = 0; k < net->blob("ip").data().count(); ++k)
      CHECK(fresh->blob("ip").data().ptr()[k] == net->blob("ip").data().ptr()[k]);
  }

  TEST_CASE("caffe weights of the wrong shape name the layer, the parameter and both shapes") {
    auto net = imported_net(1);
    caffe::CaffeWeights weights = make_weights();
    auto* conv_weight = weights.mutable_layer(0)->mutable_blobs(0)->mutable_shape();
    conv_weight->set_dim(2, 5), conv_weight->set_dim(3, 5);
    CHECK_THROWS_WITH_AS(caffe::import_weights(weights, "w.caffemodel", *net, 1),
                         doctest::Contains("w.caffemodel: layer 'conv1' (Convolution): parameter 'weight' (blob 0): "
                                           "the weights file has shape 4x3x5x5, the net expects 4x3x3x3"),
                         ConfigError);
    weights = make_weights();
    weights.mutable_layer(0)->mutable_blobs()->RemoveLast();  // no bias
    CHECK_THROWS_WITH_AS(caffe::import_weights(weights, "w.caffemodel", *net, 1),
                         doctest::Contains("layer 'conv1' (Convolution): the weights file has 1 blob(s), the layer has 2"),
                         ConfigError);
    weights = make_weights();
    weights.mutable_layer(1)->set_name("bn_other");
    CHECK_THROWS_WITH_AS(caffe::import_weights(weights, "w.caffemodel", *net, 1),
                         doctest::Contains("the weights file has no layer 'bn1' (BatchNorm)"), ConfigError);
    // Fine-tuning: the layer keeps its initial values, and the notes say so (and name the unused one).
    const caffe::ImportedWeights kept = caffe::import_weights(weights, "w.caffemodel", *net, 1, true);
    REQUIRE(kept.notes.size() == 2);
    CHECK(kept.notes[0].find("keep their initial values (fillers): bn1") != std::string::npos);
    CHECK(kept.notes[1].find("skipped: bn_other") != std::string::npos);
    weights = make_weights();
    weights.mutable_layer(1)->mutable_blobs()->RemoveLast();
    CHECK_THROWS_WITH_AS(caffe::import_weights(weights, "w.caffemodel", *net, 1),
                         doctest::Contains("Caffe's BatchNorm stores 3 blobs"), ConfigError);
  }

  TEST_CASE("caffe weights that are NaN or infinite are refused, naming the layer and the blob") {
    // Before: converted with exit 0, and the net trained nothing but NaN.
    auto net = imported_net(1);
    caffe::CaffeWeights weights = make_weights();
    weights.mutable_layer(0)->mutable_blobs(0)->set_data(5, std::nanf(""));
    CHECK_THROWS_WITH_AS(caffe::import_weights(weights, "w.caffemodel", *net, 1),
                         doctest::Contains("w.caffemodel: layer 'conv1' (Convolution): parameter 'weight' (blob 0): 1 "
                                           "of its 108 values are not finite (value 5 is NaN)"),
                         ConfigError);
    weights = make_weights();
    weights.mutable_layer(2)->mutable_blobs(1)->set_data(3, -INFINITY);
    CHECK_THROWS_WITH_AS(caffe::import_weights(weights, "w.caffemodel", *net, 1),
                         doctest::Contains("layer 'scale1' (Scale): parameter 'bias' (blob 1): 1 of its 4 values are "
                                           "not finite (value 3 is infinite)"),
                         ConfigError);
    // Doubles beyond a float's range are infinite as floats.
    weights = make_weights();
    caffe::BlobProto* bias = weights.mutable_layers(0)->mutable_blobs(1);
    bias->clear_data();
    for (double v : {1.0, 1e300, 2.0, -1e300, 3.0}) bias->add_double_data(v);
    CHECK_THROWS_WITH_AS(caffe::import_weights(weights, "w.caffemodel", *net, 1),
                         doctest::Contains("layer 'ip' (InnerProduct): parameter 'bias' (blob 1): 2 of its 5 values "
                                           "are not finite (value 1 is infinite)"),
                         ConfigError);
    weights = make_weights();
    weights.mutable_layer(1)->mutable_blobs(2)->set_data(0, std::nanf(""));
    CHECK_THROWS_WITH_AS(caffe::import_weights(weights, "w.caffemodel", *net, 1),
                         doctest::Contains("layer 'bn1' (BatchNorm): the scale factor (blob 2): 1 of its 1 values are "
                                           "not finite (value 0 is NaN)"),
                         ConfigError);
  }

  TEST_CASE("caffe weights cut anywhere or with any byte flipped give an error or the weights, never a crash") {
    const std::string bytes = make_weights().SerializeAsString();
    auto net = imported_net(1);
    int refused = 0, imported = 0;
    auto import_bytes = [&](const std::string& candidate) {
      try {
        caffe::import_weights(caffe::parse_weights(candidate, "x.caffemodel"), "x.caffemodel", *net, 1);
        ++imported;  // a flipped value byte still makes weights
      } catch (const Error&) {
        ++refused;  // with a message naming the file
      }
    };
    for (size_t cut = 0; cut < bytes.size(); cut += 7) import_bytes(bytes.substr(0, cut));
    for (size_t at = 0; at < bytes.size(); at += 5) {
      std::string flipped = bytes;
      flipped[at] = static_cast<char>(flipped[at] ^ 0x5a);
      import_bytes(flipped);
    }
    CHECK(refused > 0);
    CHECK(imported > 0);
  }
}
