// taihu.train: the run of taihu-train (apps/training_run.hpp) from Python,
// with the interpreter free meanwhile (the GIL is released: other Python
// threads run while the actors train).
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "apps/app_support.hpp"
#include "apps/training_run.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/common/error.hpp"
#include "python/bindings/bindings.hpp"
#include "python/bindings/float_mode.hpp"

namespace taihu::python {

namespace py = pybind11;

namespace {

// The report as JSON text (taihu/__init__.py turns it into a dict).
std::string train(const std::string& config_file, const std::vector<std::string>& overrides,
                  const std::string& progress, const std::string& resume) {
  config::Document doc = config::Document::parse_file(config_file);
  for (const auto& o : overrides) doc.apply_override(o);
  app::TrainingRunOptions options;
  options.progress = Progress::parse_mode(progress, "progress");
  options.resume = resume;
  // Python cannot be re-executed under another BLAS kernel (argc 0): a
  // kernel OpenBLAS misdetects is logged; set OPENBLAS_CORETYPE before
  // importing taihu to choose one. setup_blas sets the flush-to-zero mode
  // the actor threads inherit; this thread gets its own back at the end.
  const TaihuFloatMode python_mode(false);
  app::setup_blas(doc, 0, nullptr);
  py::gil_scoped_release free_interpreter;
  return app::report_json(app::run_training(std::move(doc), options));
}

}  // namespace

void bind_training(py::module_& m) {
  m.def("_train", &train, py::arg("config_file"), py::arg("overrides"), py::arg("progress") = "auto",
        py::arg("resume") = "",
        "Trains what the config file describes (overrides: 'key=value' strings); returns the report as JSON.");
  m.def("blas_kernel", [] { return blas::kernel_name(); },
        "The OpenBLAS kernel this process computes with (OPENBLAS_CORETYPE chooses it at start).");
}

}  // namespace taihu::python
