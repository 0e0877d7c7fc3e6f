// Caffe import, bad input: every problem is a ConfigError (exit code 2 from
// taihu-convert) that names the place, never a crash or a silent drop.

#include <doctest/doctest.h>

#include <string>

#include "core/common/error.hpp"
#include "interop/caffe/net_import.hpp"
#include "interop/caffe/proto_files.hpp"
#include "tests/support/error_message.hpp"

using namespace taihu;

namespace {

void import_text(const std::string& prototxt) {
  caffe::ImportOptions options;
  options.input_shapes["data"] = {3, 8, 8};
  caffe::import_net(caffe::parse_net(prototxt, "bad.prototxt"), options);
}

constexpr const char* input = R"(layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 3 dim: 8 dim: 8 } } }
)";

}  // namespace

TEST_SUITE("caffe") {
  TEST_CASE("caffe prototxt syntax errors name the line and column") {
    CHECK_THROWS_WITH_AS(import_text("name: \"x\"\nlayer {\n  name: \"a\"\n  type: \"ReLU\"\n"),
                         doctest::Contains("bad.prototxt:5:1:"), ConfigError);
    CHECK_THROWS_WITH_AS(import_text("layer {\n  name: \"a\" type: ReLU\n}\n"), doctest::Contains("bad.prototxt:2:"),
                         ConfigError);
  }

  TEST_CASE("caffe fields taihu does not read are refused by name, with their line") {
    // A real Caffe field (PythonLayer's settings) that the schema leaves out.
    CHECK_THROWS_WITH_AS(
        import_text(std::string(input) + "layer { name: \"py\" type: \"Python\" bottom: \"data\" top: \"py\"\n"
                                         "  python_param { module: \"m\" } }\n"),
        doctest::Contains("bad.prototxt:3:3: field 'python_param' of LayerParameter is not supported"), ConfigError);
    CHECK_THROWS_WITH_AS(
        import_text(std::string(input) + "layer { name: \"c\" type: \"Convolution\" bottom: \"data\" top: \"c\"\n"
                                         "  convolution_param { num_output: 2 kernal_size: 3 } }\n"),
        doctest::Contains("bad.prototxt:3:37: field 'kernal_size' of ConvolutionParameter is not supported"),
        ConfigError);
    // The layer's phase is Caffe's own state, set by its solver, not a setting.
    CHECK_THROWS_WITH_AS(
        import_text(std::string(input) + "layer { name: \"r\" type: \"ReLU\" bottom: \"data\" top: \"r\" phase: TEST }\n"),
        doctest::Contains("field 'phase' of LayerParameter is not supported"), ConfigError);
  }

  TEST_CASE("caffe legacy V1 'layers' nets point to upgrade_net_proto_text") {
    CHECK_THROWS_WITH_AS(import_text("layers { name: \"conv1\" type: CONVOLUTION }\n"),
                         doctest::Contains("upgrade_net_proto_text"), ConfigError);
  }

  TEST_CASE("caffe unsupported layer types and settings name the layer, its type and the field") {
    auto layer = [](const std::string& body) { return std::string(input) + body; };
    CHECK_THROWS_WITH_AS(import_text(layer(R"(layer { name: "act" type: "PReLU" bottom: "data" top: "act" })")),
                         doctest::Contains("bad.prototxt:2: layer 'act' (PReLU): layer type 'PReLU' is not supported"),
                         ConfigError);
    CHECK_THROWS_WITH_AS(
        import_text(layer(R"(layer { name: "r" type: "ReLU" bottom: "data" top: "r" dropout_param { dropout_ratio: 0.1 } })")),
        doctest::Contains("layer 'r' (ReLU): field 'dropout_param' does not apply"), ConfigError);
    CHECK_THROWS_WITH_AS(
        import_text(layer(R"(layer { name: "p" type: "Pooling" bottom: "data" top: "p" pooling_param { pool: STOCHASTIC kernel_size: 2 } })")),
        doctest::Contains("layer 'p' (Pooling): pooling_param.pool = STOCHASTIC"), ConfigError);
    CHECK_THROWS_WITH_AS(
        import_text(layer(R"(layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 2 transpose: true } })")),
        doctest::Contains("transpose"), ConfigError);
    CHECK_THROWS_WITH_AS(
        import_text(layer(R"(layer { name: "c" type: "Convolution" bottom: "data" top: "c" param { name: "shared" } convolution_param { num_output: 2 kernel_size: 1 } })")),
        doctest::Contains("weight sharing"), ConfigError);
    CHECK_THROWS_WITH_AS(
        import_text(layer(R"(layer { name: "c" type: "Convolution" bottom: "data" top: "c" convolution_param { num_output: 2 kernel_size: 1 weight_filler { type: "bilinear" } } })")),
        doctest::Contains("layer 'c' (Convolution): weight_filler (bilinear)"), ConfigError);
    CHECK_THROWS_WITH_AS(
        import_text(layer(R"(layer { name: "r" type: "ReLU" bottom: "data" top: "r" include { stage: "deploy" } })")),
        doctest::Contains("stage"), ConfigError);
    CHECK_THROWS_WITH_AS(
        import_text(layer(R"(layer { name: "c" type: "Convolution" bottom: "data" top: "c" convolution_param { num_output: 2 kernel_size: 3 kernel_size: 3 kernel_size: 3 } })")),
        doctest::Contains("kernel_size has 3 values"), ConfigError);
  }

  TEST_CASE("caffe errors quote a long name, type or field by its first 100 bytes and its size") {
    // A layer name of 50 MB was echoed whole in the error.
    const std::string name(1'000'000, 'x');
    const auto message = [](const std::string& body) {
      return testing::error_message<ConfigError>([&] { import_text(std::string(input) + body); });
    };
    const std::string unsupported = message("layer { name: \"" + name + "\" type: \"PReLU\" bottom: \"data\" top: \"a\" }");
    CHECK(unsupported.find("bad.prototxt:2: layer '" + name.substr(0, 100) + "… (1000000 bytes)' (PReLU): layer type") == 0);
    CHECK(unsupported.size() < 1000);
    const std::string type = message("layer { name: \"a\" type: \"" + name + "\" bottom: \"data\" top: \"a\" }");
    CHECK(type.find("layer type '" + name.substr(0, 100) + "… (1000000 bytes)' is not supported") != std::string::npos);
    CHECK(type.size() < 1000);
    const std::string space = message("layer { name: \"a " + name + "\" type: \"ReLU\" bottom: \"data\" top: \"a\" }");
    CHECK(space.find("holds characters that taihu's net config cannot hold") != std::string::npos);
    CHECK(space.size() < 1000);
    // protobuf's own message quoting an unknown field (matched by a regex that recursed per character).
    const std::string field = message("layer { name: \"a\" type: \"ReLU\" " + name + ": 1 }");
    CHECK(field.find("bad.prototxt:2:") != std::string::npos);
    CHECK(field.size() < 1000);
  }

  TEST_CASE("caffe weights files that are truncated or not caffemodels are refused") {
    caffe::CaffeWeights weights;
    auto* layer = weights.add_layer();
    layer->set_name("conv1");
    auto* blob = layer->add_blobs();
    for (int i = 0; i < 100; ++i) blob->add_data(static_cast<float>(i));
    const std::string bytes = weights.SerializeAsString();
    CHECK_NOTHROW(caffe::parse_weights(bytes, "good.caffemodel"));
    CHECK_THROWS_WITH_AS(caffe::parse_weights(bytes.substr(0, bytes.size() / 2), "cut.caffemodel"),
                         doctest::Contains("'cut.caffemodel' is not a Caffe weights file (.caffemodel), or it is "
                                           "truncated"),
                         ConfigError);
    CHECK_THROWS_AS(caffe::parse_weights("\x89PNG\r\n\x1a\n this is an image", "image.png"), ConfigError);
    CHECK_THROWS_WITH_AS(caffe::parse_weights("", "empty.caffemodel"), doctest::Contains("holds no layers"),
                         ConfigError);
    CHECK_THROWS_WITH_AS(caffe::read_weights("/nonexistent/x.caffemodel"), doctest::Contains("cannot open"),
                         ConfigError);
  }
}
