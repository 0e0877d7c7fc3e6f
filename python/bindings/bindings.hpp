#pragma once
// The pieces of the extension module taihu._taihu (python/taihu/__init__.py
// is its face), each binding one concept.

#include <pybind11/pybind11.h>

namespace taihu::python {

void bind_errors(pybind11::module_& m);      // taihu.Error, ConfigError, NumericError
void bind_training(pybind11::module_& m);    // train()
void bind_net(pybind11::module_& m);         // Net
void bind_checkpoint(pybind11::module_& m);  // load_checkpoint(), save_checkpoint()

}  // namespace taihu::python
