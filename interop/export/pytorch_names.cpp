#include "interop/export/pytorch_names.hpp"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>

namespace taihu::interop {

namespace {

npz::Array array(const std::string& name, const Tensor& tensor) {
  return npz::Array{name, tensor.shape().dims(), std::vector<float>(tensor.ptr(), tensor.ptr() + tensor.count())};
}

const Tensor& param(const Layer& layer, size_t i) { return layer.params()[i].blob->data(); }

// The Scale layer reading layer `bn`'s top as its only reader, if any.
std::optional<size_t> scale_after(const Net& net, size_t bn) {
  const Blob* top = net.layer_tops(bn)[0];
  std::optional<size_t> found;
  for (size_t i = 0; i < net.num_layers(); ++i)
    for (const Blob* b : net.layer_bottoms(i))
      if (b == top) {
        if (found || std::string(net.layer(i).type()) != "Scale" || net.layer(i).params().empty()) return std::nullopt;
        found = i;
      }
  return found;
}

}  // namespace

std::string pytorch_module_name(const std::string& layer) {
  std::string out = layer;
  for (char& c : out)
    if (c == '/' || c == '.') c = '_';
  return out;
}

std::vector<npz::Array> pytorch_state(const Net& net) {
  std::vector<npz::Array> out;
  std::set<size_t> merged_scales;
  std::map<size_t, size_t> scale_of_bn;
  for (size_t i = 0; i < net.num_layers(); ++i)
    if (std::string(net.layer(i).type()) == "BatchNorm")
      if (auto s = scale_after(net, i)) {
        scale_of_bn[i] = *s;
        merged_scales.insert(*s);
      }
  for (size_t i = 0; i < net.num_layers(); ++i) {
    const Layer& layer = net.layer(i);
    if (layer.params().empty() || merged_scales.count(i)) continue;
    const std::string module = pytorch_module_name(layer.name());
    if (std::string(layer.type()) == "BatchNorm") {
      out.push_back(array(module + ".running_mean", param(layer, 0)));
      out.push_back(array(module + ".running_var", param(layer, 1)));
      if (auto s = scale_of_bn.find(i); s != scale_of_bn.end()) {
        const Layer& scale = net.layer(s->second);
        out.push_back(array(module + ".weight", param(scale, 0)));
        npz::Array bias = scale.params().size() > 1 ? array(module + ".bias", param(scale, 1))
                                                    : npz::Array{module + ".bias", param(scale, 0).shape().dims(),
                                                                 std::vector<float>(param(scale, 0).count(), 0.0f)};
        out.push_back(std::move(bias));
      }
      continue;
    }
    for (const Param& p : layer.params())
      out.push_back(array(fmt::format("{}.{}", module, p.name.substr(p.name.rfind('/') + 1)), p.blob->data()));
  }
  return out;
}

}  // namespace taihu::interop
