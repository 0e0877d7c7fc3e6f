// The Caffe weights importer (taihu-convert caffe NET WEIGHTS): any bytes
// parse as a .caffemodel and import into a fixed small net (Convolution,
// BatchNorm, Scale, InnerProduct; the seeds hold its weights in the current,
// V1 and V0 layer forms), strictly and with --keep-missing, or are a
// ConfigError; what imports is finite and checkpoints every parameter.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "core/net/net.hpp"
#include "interop/caffe/net_import.hpp"
#include "interop/caffe/proto_files.hpp"
#include "interop/caffe/weights_import.hpp"
#include "fuzz_support.hpp"

namespace {

// make_seeds.py's PROTOTXT_SMALL, less its fillers and learning rates.
constexpr const char* prototxt = R"(
name: "small"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 3 dim: 4 dim: 4 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1" convolution_param { num_output: 2 kernel_size: 3 pad: 1 } }
layer { name: "bn1" type: "BatchNorm" bottom: "conv1" top: "conv1" batch_norm_param { eps: 0.001 } }
layer { name: "scale1" type: "Scale" bottom: "conv1" top: "conv1" scale_param { bias_term: true } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "ip" type: "InnerProduct" bottom: "conv1" top: "ip" inner_product_param { num_output: 3 } }
)";

taihu::Net& net() {
  static taihu::Net net(std::make_shared<taihu::config::Document>(
                            taihu::caffe::import_net(taihu::caffe::parse_net(prototxt, "small.prototxt")).description),
                        1, 1, taihu::Net::Storage::parameters_only);
  return net;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taihu;
  const std::string bytes(fuzz::text_of(data, size));
  Net& target = net();
  fuzz::expect_clean([&] {
    const caffe::CaffeWeights weights = caffe::parse_weights(bytes, "fuzz.caffemodel");
    for (const bool keep_missing : {false, true}) {
      fuzz::expect_clean([&] {
        const caffe::ImportedWeights imported = caffe::import_weights(weights, "fuzz.caffemodel", target, 1, keep_missing);
        bool whole = imported.checkpoint.params.size() == target.params().size();
        for (const NamedTensor& param : imported.checkpoint.params)
          for (const float value : param.values) whole = whole && std::isfinite(value);
        if (!whole) {
          std::fprintf(stderr, "fuzz_caffemodel: imported weights are not finite, or not every parameter\n");
          std::abort();
        }
      });
    }
  });
  return 0;
}
