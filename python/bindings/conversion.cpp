// taihu.import_onnx: an ONNX model as a taihu net config and checkpoint, as
// `taihu-convert onnx` writes them (apps/model_files.hpp).
//
//   files = taihu.import_onnx("resnet50.onnx", "out/resnet50")
//   taihu.train("config/resnet50-imagenet.ini", net=files["config"], ...)   # with --resume: files["checkpoint"]
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <map>
#include <string>
#include <vector>

#include "apps/model_files.hpp"
#include "python/bindings/bindings.hpp"

namespace taihu::python {

namespace py = pybind11;

void bind_conversion(py::module_& m) {
  m.def(
      "import_onnx",
      [](const std::filesystem::path& model, const std::filesystem::path& out_dir,
         const std::map<std::string, std::vector<int64_t>>& input_shapes, uint64_t seed, bool training_head) {
        interop::OnnxImportOptions options;
        options.input_shapes = input_shapes;
        options.training_head = training_head;
        app::ImportedFiles files;
        {
          py::gil_scoped_release release;
          files = app::import_onnx_files(model, out_dir, options, seed);
        }
        py::dict out;
        out["net"] = files.net;
        out["config"] = files.config.string();
        out["checkpoint"] = files.checkpoint.string();
        out["notes"] = files.notes;
        out["layers"] = files.layers;
        out["learnable_parameters"] = files.learnable_parameters;
        return out;
      },
      py::arg("model"), py::arg("out_dir"), py::arg("input_shapes") = std::map<std::string, std::vector<int64_t>>{},
      py::arg("seed") = 1, py::arg("training_head") = true,
      "An ONNX model as OUT_DIR/NAME.ini (a taihu net config) and OUT_DIR/NAME.ckpt (its weights), as "
      "`taihu-convert onnx` writes them; returns a dict: net, config, checkpoint, notes, layers, "
      "learnable_parameters. input_shapes: {name: (C, H, W)} for inputs the file leaves symbolic. "
      "Unsupported operators and attributes raise taihu.ConfigError naming the node.");
}

}  // namespace taihu::python
