// taihu.load_checkpoint / save_checkpoint: a training checkpoint
// (core/train/checkpoint.hpp) as a dict of NumPy arrays and back.
//
//   ckpt = taihu.load_checkpoint("out/lenet.ckpt")
//   ckpt["params"]["conv1/weight"]     # float32 arrays by parameter name
//   ckpt["solver_state"], ckpt["net"], ckpt["iteration"], ckpt["epoch"], ckpt["batch"], ckpt["seed"]
//   taihu.save_checkpoint("mine.ckpt", {"conv1/weight": w, ...}, net="lenet")
//
// Saving writes atomically, as training does: a file is whole or absent.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/train/checkpoint.hpp"
#include "python/bindings/bindings.hpp"

namespace taihu::python {

namespace py = pybind11;

namespace {

py::dict arrays_of(const std::vector<NamedTensor>& tensors) {
  py::dict out;
  for (const NamedTensor& t : tensors) {
    std::vector<py::ssize_t> dims(t.dims.begin(), t.dims.end());
    py::array_t<float> a(dims);
    std::copy(t.values.begin(), t.values.end(), a.mutable_data());
    out[py::str(t.name)] = std::move(a);
  }
  return out;
}

// Named float32 arrays as checkpoint tensors; `what` names the dict in errors.
std::vector<NamedTensor> tensors_of(const py::dict& arrays, const char* what) {
  std::vector<NamedTensor> out;
  for (const auto& [key, value] : arrays) {
    if (!py::isinstance<py::str>(key)) throw py::type_error(fmt::format("save_checkpoint: {} keys must be names", what));
    const auto name = py::cast<std::string>(key);
    if (!py::isinstance<py::array>(value))
      throw py::type_error(fmt::format("save_checkpoint: {} '{}' is not a NumPy array", what, name));
    auto array = py::reinterpret_borrow<py::array>(value);
    if (!py::isinstance<py::array_t<float>>(array))
      throw py::type_error(fmt::format("save_checkpoint: {} '{}' is {}, checkpoints hold float32 "
                                       "(pass x.astype(numpy.float32))",
                                       what, name, py::str(array.dtype()).cast<std::string>()));
    auto c = py::array_t<float, py::array::c_style>::ensure(array);
    NamedTensor t;
    t.name = name;
    t.dims.assign(c.shape(), c.shape() + c.ndim());
    t.values.assign(c.data(), c.data() + c.size());
    out.push_back(std::move(t));
  }
  return out;
}

py::dict load(const std::string& path) {
  const Checkpoint c = load_checkpoint(path);
  py::dict out;
  out["net"] = c.net_name;
  out["iteration"] = c.iteration;
  out["epoch"] = c.epoch;
  out["batch"] = c.batch;
  out["seed"] = c.seed;
  out["params"] = arrays_of(c.params);
  out["solver_state"] = arrays_of(c.solver_state);
  return out;
}

void save(const std::string& path, const py::dict& params, const std::string& net, std::int64_t iteration,
          std::int64_t epoch, std::uint64_t seed, const py::object& solver_state) {
  Checkpoint c;
  c.net_name = net;
  c.iteration = iteration;
  c.epoch = epoch;
  c.seed = seed;
  c.params = tensors_of(params, "parameter");
  if (!solver_state.is_none()) c.solver_state = tensors_of(py::cast<py::dict>(solver_state), "solver state");
  save_checkpoint(c, path);
}

}  // namespace

void bind_checkpoint(py::module_& m) {
  m.def("load_checkpoint", &load, py::arg("path"),
        "A checkpoint as a dict: net, iteration, epoch, batch, seed, params and solver_state "
        "(dicts of float32 arrays by name).");
  m.def("save_checkpoint", &save, py::arg("path"), py::arg("params"), py::arg("net") = "", py::arg("iteration") = 0,
        py::arg("epoch") = 0, py::arg("seed") = 0, py::arg("solver_state") = py::none(),
        "Writes named float32 arrays as a checkpoint, atomically (whole or not at all).");
}

}  // namespace taihu::python
