#pragma once
// The small MLP the training tests share: 1x6x6 inputs, ip1 (24) -> ReLU
// [-> Dropout] -> ip2 (4 classes) [-> Accuracy in test] -> SoftmaxWithLoss.
// Parameters: ip1 36x24 + 24, ip2 24x4 + 4 (864, 24, 96, 4 floats).

#include <string>

namespace taihu::testing {

struct MlpOptions {
  bool dropout = false;   // a Dropout layer (ratio 0.2) after the ReLU
  bool accuracy = true;   // an Accuracy layer in the test phase
};

inline std::string mlp_net(MlpOptions options = {}) {
  std::string net = R"(
[net]
name = mlp
[input data]
shape = 1 6 6
[input label]
shape =
[layer ip1]
type = InnerProduct
bottom = data
top = ip1
num_output = 24
[layer relu1]
type = ReLU
bottom = ip1
top = ip1
)";
  if (options.dropout) net += "[layer drop1]\ntype = Dropout\nbottom = ip1\ntop = ip1\ndropout_ratio = 0.2\n";
  net += "[layer ip2]\ntype = InnerProduct\nbottom = ip1\ntop = ip2\nnum_output = 4\n";
  if (options.accuracy) net += "[layer accuracy]\ntype = Accuracy\nbottom = ip2 label\ntop = accuracy\nphase = test\n";
  net += "[layer loss]\ntype = SoftmaxWithLoss\nbottom = ip2 label\ntop = loss\n";
  return net;
}

}  // namespace taihu::testing
