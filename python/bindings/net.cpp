// taihu.Net: a net of a config file on NumPy arrays.
//
//   net = taihu.Net.from_config("nets/lenet.ini", batch=64)   # or a training config naming its net
//   outputs = net.forward(data=x, label=y)   # every output blob (losses, accuracies, ...), copied
//   net.backward()                           # parameter gradients of that forward
//   net.params()["conv1/weight"]             # NumPy views of the parameters (zero-copy, writable)
//   net.grads()["conv1/weight"]              # and of their gradients
//
// Inputs are float32 arrays of shape (N, *the input's shape); N sets the
// batch. Another dtype or shape is an error naming the input and both
// shapes, never a silent conversion.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/config/config.hpp"
#include "core/net/net.hpp"
#include "core/train/train_setup.hpp"
#include "python/bindings/bindings.hpp"
#include "python/bindings/float_mode.hpp"

namespace taihu::python {

namespace py = pybind11;

namespace {

// A shape as NumPy prints it ("(4, 1, 28, 28)", "(3,)"); `batch`, when given, names the first axis.
std::string shape_text(const std::vector<py::ssize_t>& dims, const char* batch = nullptr) {
  std::vector<std::string> parts;
  for (auto d : dims) parts.push_back(std::to_string(d));
  if (batch != nullptr && !parts.empty()) parts.front() = batch;
  return "(" + fmt::format("{}", fmt::join(parts, ", ")) + (dims.size() == 1 ? ",)" : ")");
}

class PyNet {
 public:
  // Every blob's value stays readable after a pass (`blob`), as a net in
  // Python is there to be looked into: none lends its storage to another's.
  explicit PyNet(std::unique_ptr<Net> net) : net_(std::move(net)) { net_->keep_values(net_->blob_names()); }

  // A net file ([net] section), or a training config whose root key `net` names one.
  static std::shared_ptr<PyNet> from_config(const std::string& path, std::int64_t batch, std::uint64_t seed) {
    if (batch < 1) throw ConfigError(fmt::format("Net.from_config: batch must be positive, not {}", batch));
    auto doc = std::make_shared<config::Document>(config::Document::parse_file(path));
    if (doc->root().has("net")) return std::make_shared<PyNet>(build_net(*doc, TrainSettings::read(doc->root()), batch, seed));
    if (doc->find("net") == nullptr)
      throw ConfigError(fmt::format("{}: neither a net ([net] section) nor a training config (root key 'net')", path));
    return std::make_shared<PyNet>(std::make_unique<Net>(doc, batch, seed));
  }

  py::dict forward(const py::kwargs& inputs) {
    set_inputs(inputs);
    {
      py::gil_scoped_release free_interpreter;
      const TaihuFloatMode mode;
      net_->forward();
    }
    forwarded_ = true;
    py::dict outputs;
    for (const auto& name : net_->output_names()) outputs[py::str(name)] = copy(net_->blob(name).data());
    return outputs;
  }

  void backward() {
    if (!forwarded_) throw ConfigError(fmt::format("net '{}': backward() needs a forward() first", net_->name()));
    py::gil_scoped_release free_interpreter;
    const TaihuFloatMode mode;
    net_->zero_param_diffs();
    net_->backward();
  }

  py::dict params(const py::object& self) { return views(self, false); }
  py::dict grads(const py::object& self) { return views(self, true); }

  // A blob's values (a copy: the blob is reused by the next pass).
  py::array blob(const std::string& name) const {
    if (!net_->has_blob(name)) throw ConfigError(fmt::format("net '{}' has no blob '{}'", net_->name(), name));
    if (net_->blob(name).shape_only())
      throw ConfigError(fmt::format("net '{}': blob '{}' lies inside a fused run of layers and is never computed; "
                                    "set `fuse = false` in [net] to keep it",
                                    net_->name(), name));
    return copy(net_->blob(name).data());
  }

  std::string phase() const { return net_->phase() == Phase::train ? "train" : "test"; }
  void set_phase(const std::string& phase) {
    if (phase != "train" && phase != "test")
      throw ConfigError(fmt::format("net '{}': phase must be 'train' or 'test', not '{}'", net_->name(), phase));
    net_->set_phase(phase == "train" ? Phase::train : Phase::test);
    forwarded_ = false;
  }

  const Net& net() const { return *net_; }

 private:
  void set_inputs(const py::kwargs& inputs) {
    std::vector<std::string> missing;
    for (const auto& name : net_->input_names())
      if (!inputs.contains(name)) missing.push_back(name);
    for (const auto& [key, value] : inputs) {
      const auto name = py::cast<std::string>(key);
      const auto& names = net_->input_names();
      if (std::find(names.begin(), names.end(), name) == names.end())
        throw ConfigError(fmt::format("net '{}' has no input '{}' (its inputs: {})", net_->name(), name,
                                      fmt::join(names, ", ")));
    }
    if (!missing.empty())
      throw ConfigError(fmt::format("net '{}': forward() needs every input; missing: {}", net_->name(),
                                    fmt::join(missing, ", ")));
    // Check every input before changing anything: a bad one leaves the net as it was.
    std::vector<py::array_t<float, py::array::c_style>> arrays;
    py::ssize_t batch = -1;
    for (const auto& name : net_->input_names()) {
      py::handle value = inputs[py::str(name)];
      if (!py::isinstance<py::array>(value))
        throw py::type_error(fmt::format("net '{}': input '{}' is not a NumPy array", net_->name(), name));
      auto array = py::reinterpret_borrow<py::array>(value);
      if (!py::isinstance<py::array_t<float>>(array))
        throw py::type_error(fmt::format("net '{}': input '{}' is {}, taihu computes in float32 "
                                         "(pass x.astype(numpy.float32))",
                                         net_->name(), name, py::str(array.dtype()).cast<std::string>()));
      const auto& dims = net_->blob(name).shape().dims();
      std::vector<py::ssize_t> want(dims.begin(), dims.end()), got(array.shape(), array.shape() + array.ndim());
      bool fits = got.size() == want.size() && !got.empty();
      for (std::size_t k = 1; fits && k < got.size(); ++k) fits = got[k] == want[k];
      if (fits && batch >= 0) fits = got[0] == batch;
      if (!fits || got[0] < 1) {
        throw ConfigError(fmt::format("net '{}': input '{}' has shape {}, the net takes {}{}", net_->name(), name,
                                      shape_text(got), shape_text(want, "N"),
                                      batch >= 0 ? fmt::format(" with N = {} as the other inputs", batch) : ""));
      }
      batch = got[0];
      arrays.push_back(py::array_t<float, py::array::c_style>::ensure(array));
    }
    if (batch != net_->batch()) net_->set_batch(batch);
    for (std::size_t k = 0; k < arrays.size(); ++k) {
      Tensor& data = net_->blob(net_->input_names()[k]).data();
      std::copy_n(arrays[k].data(), data.count(), data.ptr());
    }
  }

  static py::array copy(const Tensor& t) {
    std::vector<py::ssize_t> dims(t.shape().dims().begin(), t.shape().dims().end());
    py::array_t<float> out(dims);
    std::copy_n(t.ptr(), t.count(), out.mutable_data());
    return out;
  }

  py::dict views(const py::object& self, bool diffs) {
    py::dict out;
    for (Param* p : net_->params()) {
      Tensor& t = diffs ? p->blob->diff() : p->blob->data();
      std::vector<py::ssize_t> dims(t.shape().dims().begin(), t.shape().dims().end());
      out[py::str(p->name)] = py::array_t<float>(dims, t.ptr(), self);  // `self` keeps the net alive
    }
    return out;
  }

  std::unique_ptr<Net> net_;
  bool forwarded_ = false;
};

}  // namespace

void bind_net(py::module_& m) {
  py::class_<PyNet, std::shared_ptr<PyNet>>(m, "Net", "A net of a config file, computing on NumPy arrays.")
      .def_static("from_config", &PyNet::from_config, py::arg("path"), py::arg("batch") = 1, py::arg("seed") = 1,
                  "A net file ([net] section), or a training config whose root key `net` names one, set up for "
                  "`batch` samples (forward() changes it to its inputs' N).")
      .def("forward", &PyNet::forward,
           "forward(**inputs): every input as a float32 array (N, *shape); returns the output blobs (copies).")
      .def("backward", &PyNet::backward, "Parameter gradients of the last forward (zeroed first).")
      .def("params", [](const py::object& self) { return self.cast<PyNet&>().params(self); },
           "Every parameter (learnable and state) by name, as NumPy views of the net's memory.")
      .def("grads", [](const py::object& self) { return self.cast<PyNet&>().grads(self); },
           "The parameters' gradients by name, as NumPy views.")
      .def("blob", &PyNet::blob, py::arg("name"), "A copy of a blob's values.")
      .def_property("phase", &PyNet::phase, &PyNet::set_phase, "'train' or 'test' (which layers run)")
      .def_property_readonly("name", [](const PyNet& n) { return n.net().name(); })
      .def_property_readonly("batch", [](const PyNet& n) { return n.net().batch(); })
      .def_property_readonly("inputs", [](const PyNet& n) { return n.net().input_names(); })
      .def_property_readonly("outputs", [](const PyNet& n) { return n.net().output_names(); });
}

}  // namespace taihu::python
