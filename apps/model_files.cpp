#include "apps/model_files.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <memory>

#include "core/common/atomic_file.hpp"
#include "core/common/error.hpp"
#include "core/common/excerpt.hpp"
#include "core/net/net.hpp"
#include "core/train/checkpoint.hpp"

namespace taihu::app {

std::string commented(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += "# " + line + "\n";
  return out;
}

std::string output_stem(const std::string& net_name, const std::string& source) {
  const bool plain = !net_name.empty() && net_name.size() <= 200 && net_name.front() != '.' &&
                     std::all_of(net_name.begin(), net_name.end(), [](char c) {
                       return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
                     });
  if (plain) return net_name;
  std::string stem = std::filesystem::path(source).stem().string();
  if (stem.empty() || stem.front() == '.') stem = "net";
  spdlog::warn("net name '{}' is not a plain file name: the outputs are named '{}' after its file",
               excerpt(net_name), stem);
  return stem;
}

ImportedFiles import_onnx_files(const std::filesystem::path& model, const std::filesystem::path& out_dir,
                                const interop::OnnxImportOptions& options, uint64_t seed) {
  const std::string source = model.string();
  const interop::ImportedOnnx imported = interop::import_onnx(interop::read_onnx(model), source, options);
  // Parameters only, as for Caffe models: the import computes nothing, and a
  // declared input of 1x1000x1000x1000 must not cost 10^9 floats per blob.
  Net net(std::make_shared<config::Document>(imported.description), 1, seed, Net::Storage::parameters_only);
  const Checkpoint checkpoint = interop::onnx_checkpoint(imported, net, seed);
  ImportedFiles files;
  files.net = output_stem(net.name(), source);
  files.notes = imported.notes;
  files.layers = net.num_layers();
  files.learnable_parameters = net.num_learnable_parameters();
  files.config = out_dir / (files.net + ".ini");
  files.checkpoint = out_dir / (files.net + ".ckpt");
  std::vector<std::string> header = {fmt::format("Converted by taihu-convert from {}.", source)};
  header.insert(header.end(), imported.notes.begin(), imported.notes.end());
  write_file_atomically(files.config, commented(header) + "\n" + imported.description.dump());
  save_checkpoint(checkpoint, files.checkpoint);
  return files;
}

}  // namespace taihu::app
