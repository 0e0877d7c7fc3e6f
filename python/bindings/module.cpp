// taihu._taihu: the C++ side of `import taihu`.
#include <spdlog/spdlog.h>

#include "apps/app_support.hpp"
#include "python/bindings/bindings.hpp"

PYBIND11_MODULE(_taihu, m) {
  m.doc() = "taihu: actor-based training of deep networks (the C++ side of `import taihu`)";
  // taihu's log lines go to stderr as the apps' do; one logger per process.
  if (!spdlog::get("taihu")) taihu::app::setup_logging("info");
  taihu::python::bind_errors(m);
  taihu::python::bind_training(m);
  taihu::python::bind_net(m);
  taihu::python::bind_checkpoint(m);
  taihu::python::bind_graph_data(m);
  taihu::python::bind_conversion(m);
}
