#pragma once
// The pieces of the extension module taihu._taihu (python/taihu/__init__.py
// is its face), each binding one concept.

#include <pybind11/pybind11.h>

#include <memory>

namespace taihu {
struct GraphDataset;
}

namespace taihu::python {

void bind_errors(pybind11::module_& m);      // taihu.Error, ConfigError, NumericError
void bind_training(pybind11::module_& m);    // train()
void bind_net(pybind11::module_& m);         // Net
void bind_checkpoint(pybind11::module_& m);  // load_checkpoint(), save_checkpoint()
void bind_graph_data(pybind11::module_& m);  // GraphData
void bind_conversion(pybind11::module_& m);  // import_onnx()

// A taihu.GraphData's graphs (None: none).
std::shared_ptr<const GraphDataset> graph_dataset(const pybind11::object& data);

}  // namespace taihu::python
