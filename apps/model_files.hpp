#pragma once
// Converted models as files: a net config and a checkpoint written whole or
// not at all, for taihu-convert and for `taihu.import_onnx` in Python.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "interop/onnx/onnx_import.hpp"

namespace taihu::app {

// Each line as a config comment ("# line\n").
std::string commented(const std::vector<std::string>& lines);

// The file name the outputs take in the output folder: the net's name where
// it is a plain file name, else the source file's own (a net named "../x"
// or "a/b" must not write outside the folder).
std::string output_stem(const std::string& net_name, const std::string& source);

struct ImportedFiles {
  std::string net;
  std::filesystem::path config, checkpoint;
  std::vector<std::string> notes;  // what the import adapted (also the config's header)
  std::size_t layers = 0;
  int64_t learnable_parameters = 0;
};

// An ONNX model as OUT_DIR/NAME.ini and OUT_DIR/NAME.ckpt (interop/onnx/
// onnx_import.hpp); the net is built once, as taihu-train will build it, so
// that nothing is written unless it builds.
ImportedFiles import_onnx_files(const std::filesystem::path& model, const std::filesystem::path& out_dir,
                                const interop::OnnxImportOptions& options, uint64_t seed);

}  // namespace taihu::app
