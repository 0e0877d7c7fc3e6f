// Caffe import: the shipped nets written as prototxt (taihu-convert
// caffe-export) read back to the same nets, and Caffe's spellings of each
// setting arrive as the taihu options they mean.

#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "core/net/net.hpp"
#include "interop/caffe/net_export.hpp"
#include "interop/caffe/net_import.hpp"

using namespace taihu;

namespace {

std::shared_ptr<const config::Document> shipped_net(const std::string& name) {
  return std::make_shared<config::Document>(
      config::Document::parse_file(std::string(TAIHU_SOURCE_DIR) + "/config/nets/" + name + ".ini"));
}

caffe::ImportedNet import_text(const std::string& prototxt, const caffe::ImportOptions& options = {}) {
  return caffe::import_net(caffe::parse_net(prototxt, "test.prototxt"), options);
}

// The net config -> prototxt -> net config, both built into nets.
void check_round_trip(const std::string& name) {
  CAPTURE(name);
  const auto original_description = shipped_net(name);
  const std::string prototxt = caffe::prototxt_of(caffe::export_net(*original_description));
  const auto imported = std::make_shared<config::Document>(import_text(prototxt).description);
  const Net original(original_description, 2, 1);
  const Net converted(imported, 2, 1);
  CHECK(converted.name() == original.name());
  CHECK(converted.num_learnable_parameters() == original.num_learnable_parameters());
  const auto original_params = original.params();
  const auto converted_params = converted.params();
  REQUIRE(converted_params.size() == original_params.size());
  for (size_t i = 0; i < original_params.size(); ++i) {
    CHECK(converted_params[i]->name == original_params[i]->name);
    CHECK(converted_params[i]->blob->data().shape() == original_params[i]->blob->data().shape());
    CHECK(converted_params[i]->lr_mult == original_params[i]->lr_mult);
    CHECK(converted_params[i]->decay_mult == original_params[i]->decay_mult);
  }
  REQUIRE(converted.num_layers() == original.num_layers());
  for (size_t i = 0; i < original.num_layers(); ++i) {
    CHECK(std::string(converted.layer(i).type()) == original.layer(i).type());
    REQUIRE(converted.layer_tops(i).size() == original.layer_tops(i).size());
    for (size_t t = 0; t < original.layer_tops(i).size(); ++t)
      CHECK(converted.layer_tops(i)[t]->shape() == original.layer_tops(i)[t]->shape());
  }
}

const config::Section& layer(const caffe::ImportedNet& net, const std::string& name) {
  const config::Section* s = net.description.find("layer", name);
  REQUIRE(s != nullptr);
  return *s;
}

std::string value(const caffe::ImportedNet& net, const std::string& layer_name, const std::string& key) {
  const config::Entry* e = layer(net, layer_name).find(key);
  return e ? e->value : "<absent>";
}

}  // namespace

TEST_SUITE("caffe") {
  TEST_CASE("caffe round trip: LeNet and LeNet-BN as prototxt are the same nets") {
    for (const char* name : {"lenet", "lenet-bn"}) check_round_trip(name);
  }

  // Seconds each (their parameters are filled twice): in the slow suite.
  TEST_CASE("caffe round trip: AlexNet, VGG-16, ResNet-50 and GoogLeNet as prototxt are the same nets" *
            doctest::test_suite("slow")) {
    for (const char* name : {"alexnet", "vgg16", "resnet50", "googlenet"}) check_round_trip(name);
  }

  TEST_CASE("caffe settings: windows, groups, bias, fillers, multipliers and phases keep their meaning") {
    const auto net = import_text(R"(
      name: "settings"
      layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 4 dim: 9 dim: 11 } } }
      layer { name: "label" type: "Input" top: "label" input_param { shape { dim: 1 } } }
      layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
              param { lr_mult: 1 decay_mult: 1 } param { lr_mult: 2 decay_mult: 0 }
              convolution_param { num_output: 6 kernel_h: 3 kernel_w: 5 stride_h: 2 stride_w: 1
                                  pad_h: 1 pad_w: 2 group: 2 dilation: 1
                                  weight_filler { type: "gaussian" std: 0.01 }
                                  bias_filler { type: "constant" value: 0.2 } } }
      layer { name: "nobias" type: "Convolution" bottom: "conv" top: "nobias"
              convolution_param { num_output: 4 kernel_size: 1 bias_term: false weight_filler { type: "msra" } } }
      layer { name: "pool" type: "Pooling" bottom: "nobias" top: "pool"
              pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 round_mode: FLOOR } }
      layer { name: "ip" type: "InnerProduct" bottom: "pool" top: "ip" inner_product_param { num_output: 3 } }
      layer { name: "acc" type: "Accuracy" bottom: "ip" bottom: "label" top: "acc" include { phase: TEST } }
      layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss"
              exclude { phase: TEST } loss_weight: 0.5 loss_param { ignore_label: 7 normalize: false } }
    )");
    CHECK(value(net, "conv", "kernel_size") == "3 5");
    CHECK(value(net, "conv", "stride") == "2 1");
    CHECK(value(net, "conv", "pad") == "1 2");
    CHECK(value(net, "conv", "group") == "2");
    CHECK(value(net, "conv", "dilation") == "1");
    CHECK(value(net, "conv", "weight_filler") == "gaussian 0.01");
    CHECK(value(net, "conv", "bias_filler") == "constant 0.2");
    CHECK(value(net, "conv", "bias_lr_mult") == "2");
    CHECK(value(net, "conv", "bias_decay_mult") == "0");
    CHECK(value(net, "conv", "weight_lr_mult") == "<absent>");
    CHECK(value(net, "nobias", "bias_term") == "false");
    CHECK(value(net, "nobias", "weight_filler") == "msra");
    CHECK(value(net, "ip", "weight_filler") == "constant 0");  // Caffe's default filler, not taihu's xavier
    CHECK(value(net, "pool", "pool") == "ave");
    CHECK(value(net, "pool", "round_mode") == "floor");
    CHECK(value(net, "acc", "phase") == "test");
    CHECK(value(net, "loss", "phase") == "train");
    CHECK(value(net, "loss", "loss_weight") == "0.5");
    CHECK(value(net, "loss", "ignore_label") == "7");
    CHECK(value(net, "loss", "normalization") == "batch_size");
    // And the result is a net taihu builds: 9x11 -> conv (3x5, stride 2x1, pad 1x2) 5x11 -> pool 3x6.
    const Net built(std::make_shared<config::Document>(net.description), 2, 1);
    CHECK(built.blob("conv").shape() == Shape{2, 6, 5, 11});
    CHECK(built.blob("pool").shape() == Shape{2, 4, 3, 6});
    CHECK(built.params()[0]->lr_mult == 1.0f);
    CHECK(built.params()[1]->lr_mult == 2.0f);
    CHECK(built.params()[1]->decay_mult == 0.0f);
  }

  TEST_CASE("caffe BatchNorm and Scale in place (as in ResNet's prototxt) get blobs of their own") {
    const auto net = import_text(R"(
      input: "data"
      input_dim: 1 input_dim: 3 input_dim: 8 input_dim: 8
      layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
              convolution_param { num_output: 4 kernel_size: 3 pad: 1 bias_term: false } }
      layer { name: "bn_conv1" type: "BatchNorm" bottom: "conv1" top: "conv1"
              batch_norm_param { use_global_stats: true moving_average_fraction: 0.99 eps: 0.001 } }
      layer { name: "scale_conv1" type: "Scale" bottom: "conv1" top: "conv1" scale_param { bias_term: true } }
      layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
      layer { name: "pool" type: "Pooling" bottom: "conv1" top: "pool"
              pooling_param { pool: MAX global_pooling: true } }
    )");
    CHECK(value(net, "bn_conv1", "top") == "bn_conv1");
    CHECK(value(net, "bn_conv1", "use_global_stats") == "true");
    CHECK(value(net, "bn_conv1", "momentum") == "0.99");
    CHECK(value(net, "bn_conv1", "eps") == "0.001");
    CHECK(value(net, "scale_conv1", "bottom") == "bn_conv1");
    CHECK(value(net, "scale_conv1", "top") == "scale_conv1");
    CHECK(value(net, "relu1", "bottom") == "scale_conv1");
    CHECK(value(net, "relu1", "top") == "scale_conv1");  // ReLU runs in place in taihu too
    CHECK(value(net, "pool", "bottom") == "scale_conv1");
    CHECK(value(net, "pool", "global_pooling") == "true");
    CHECK(net.notes.size() == 1);
    const Net built(std::make_shared<config::Document>(net.description), 2, 1);
    CHECK(built.blob("pool").shape() == Shape{2, 4, 1, 1});
  }

  TEST_CASE("caffe BatchNorm without moving_average_fraction keeps Caffe's 0.999, not taihu's 0.9") {
    const auto net = import_text(R"(
      layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 2 } } }
      layer { name: "bn" type: "BatchNorm" bottom: "data" top: "bn" }
    )");
    CHECK(value(net, "bn", "momentum") == "0.999");
  }

  TEST_CASE("caffe data layers: TRAIN and TEST Data layers become one pair of inputs; shapes from the command line") {
    const std::string prototxt = R"(
      name: "mnist"
      layer { name: "mnist" type: "Data" top: "data" top: "label" include { phase: TRAIN }
              transform_param { scale: 0.00390625 } data_param { source: "train_lmdb" batch_size: 64 backend: LMDB } }
      layer { name: "mnist" type: "Data" top: "data" top: "label" include { phase: TEST }
              transform_param { scale: 0.00390625 } data_param { source: "test_lmdb" batch_size: 100 backend: LMDB } }
      layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 10 } }
    )";
    CHECK_THROWS_WITH_AS(import_text(prototxt), doctest::Contains("--input-shape=data="), ConfigError);
    caffe::ImportOptions options;
    options.input_shapes.insert(caffe::parse_input_shape("data=1,28,28"));
    const auto net = import_text(prototxt, options);
    REQUIRE(net.description.sections("input").size() == 2);
    CHECK(net.description.find("input", "data")->find("shape")->value == "1 28 28");
    CHECK(net.description.find("input", "label")->find("shape")->value == "");
    CHECK(net.notes.size() == 2);  // one per data layer: source and transform are not carried
    options.input_shapes.insert(caffe::parse_input_shape("image=3,8,8"));
    CHECK_THROWS_WITH_AS(import_text(prototxt, options), doctest::Contains("'image', which is not an input"),
                         ConfigError);
    CHECK_THROWS_WITH_AS(caffe::parse_input_shape("data=3,x"), doctest::Contains("'x' is not a positive dimension"),
                         ConfigError);
  }

  TEST_CASE("caffe input forms: input + input_shape, and ImageData's shape from its own settings") {
    const auto legacy = import_text(R"(
      input: "data" input_shape { dim: 10 dim: 3 dim: 32 dim: 32 }
      layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 2 } }
    )");
    CHECK(legacy.description.find("input", "data")->find("shape")->value == "3 32 32");
    const auto images = import_text(R"(
      layer { name: "images" type: "ImageData" top: "data" top: "label"
              image_data_param { source: "list.txt" new_height: 256 new_width: 256 is_color: false }
              transform_param { crop_size: 227 } }
    )");
    CHECK(images.description.find("input", "data")->find("shape")->value == "1 227 227");
  }
}
