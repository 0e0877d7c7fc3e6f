// taihu-convert: other frameworks' model files to taihu's, and back.
//
//   taihu-convert caffe NET.prototxt [WEIGHTS.caffemodel] --out=DIR [--input-shape=NAME=C,H,W ...] [--seed=N]
//   taihu-convert caffe-export NET.ini --out=FILE.prototxt
//   taihu-convert export CHECKPOINT --net=NET.ini --format=npz|onnx --out=FILE [--sample=FILE.npz]
//
// Exit codes: 0 done, 2 bad input (unsupported layer or field, syntax error,
// wrong shapes, unreadable or foreign file), 1 anything else.

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "apps/app_support.hpp"
#include "apps/version.hpp"
#include "core/common/error.hpp"
#include "core/common/random.hpp"
#include "core/net/net.hpp"
#include "core/train/checkpoint.hpp"
#include "interop/caffe/net_export.hpp"
#include "interop/caffe/net_import.hpp"
#include "interop/caffe/proto_files.hpp"
#include "interop/caffe/weights_import.hpp"
#include "interop/export/pytorch_names.hpp"
#include "interop/export/trained_net.hpp"
#include "interop/npz/npz_writer.hpp"
#include "interop/onnx/onnx_export.hpp"

namespace {

using namespace taihu;

constexpr const char* usage = R"(usage: taihu-convert COMMAND ARGUMENTS [options]

commands:
  caffe NET.prototxt [WEIGHTS.caffemodel] --out=DIR
        Writes DIR/NAME.ini, a taihu net config (config/nets/*.ini format),
        and with weights DIR/NAME.ckpt, a checkpoint holding them (NAME: the
        net's name). Unsupported layers and fields are errors naming them.
        --input-shape=NAME=C,H,W   per-sample shape of an input (repeatable);
                                   needed for Data layers, whose shape is in
                                   their database ("label=": one value per sample)
        --seed=N                   the seed of the runs that will use the
                                   checkpoint (default 1, taihu-train's default)
        --keep-missing             layers the weights file lacks start from their
                                   fillers (fine-tuning) instead of being an error
  caffe-export NET.ini --out=FILE.prototxt
        Writes a taihu net config as a Caffe prototxt.
  export CHECKPOINT --net=NET.ini --format=npz|onnx --out=FILE
        Writes a checkpoint's parameters for other frameworks: npz (numpy.load;
        PyTorch's state_dict names: conv1.weight, bn1.running_mean, ...) or
        onnx (the net's inference graph with its weights, opset 13). The net
        config says what each parameter is; it must be the checkpoint's net.
        --sample=FILE.npz   also run the net (test phase, 2 samples of a fixed
                            pseudo-random input) and write its inputs
                            ("input.NAME") and outputs ("output.NAME"), to
                            check the export against another framework

options:
  --log-level=LEVEL    trace, debug, info, warn, error
  --version            taihu's version and build
  -h, --help           this text
)";

struct Arguments {
  std::vector<std::string> positional;  // command first
  std::vector<std::pair<std::string, std::string>> flags;

  std::optional<std::string> flag(const std::string& name) const {
    for (const auto& [key, value] : flags)
      if (key == name) return value;
    return std::nullopt;
  }
  std::string required(const std::string& name) const {
    auto value = flag(name);
    if (!value || value->empty()) throw ConfigError(fmt::format("command line: --{}=... is required (try --help)", name));
    return *value;
  }
};

Arguments parse_arguments(int argc, char** argv, const std::vector<std::string>& known) {
  Arguments args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h") {
      args.flags.emplace_back("help", "");
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      args.positional.push_back(arg);
      continue;
    }
    const auto eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw ConfigError(fmt::format("command line: unknown option '{}' (try --help)", arg));
    args.flags.emplace_back(name, eq == std::string::npos ? std::string() : arg.substr(eq + 1));
  }
  return args;
}

// Written to a temporary file and renamed into place, as checkpoints are:
// an interrupted conversion never leaves half a file.
void write_text_atomically(const std::filesystem::path& path, const std::string& text) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  const std::filesystem::path temp = fmt::format("{}.tmp.{}", path.string(), ::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw Error(fmt::format("cannot write '{}'", temp.string()));
  }
  std::error_code ec;
  std::filesystem::rename(temp, path, ec);
  if (ec) {
    std::filesystem::remove(temp, ec);
    throw Error(fmt::format("cannot move '{}' into place: {}", path.string(), ec.message()));
  }
}

std::string commented(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += "# " + line + "\n";
  return out;
}

int convert_caffe(const Arguments& args) {
  if (args.positional.size() < 2 || args.positional.size() > 3)
    throw ConfigError("command line: caffe takes NET.prototxt and optionally WEIGHTS.caffemodel (try --help)");
  const std::filesystem::path out_dir = args.required("out");
  caffe::ImportOptions options;
  for (const auto& [key, value] : args.flags)
    if (key == "input-shape") options.input_shapes.insert(caffe::parse_input_shape(value));
  const auto seed_text = args.flag("seed").value_or("1");
  const auto seed = config::parse_value<uint64_t>(seed_text);
  if (!seed) throw ConfigError(fmt::format("command line: --seed='{}' is not a non-negative integer", seed_text));

  const std::string prototxt = args.positional[1];
  caffe::ImportedNet imported = caffe::import_net(caffe::read_net(prototxt), options);
  for (const auto& note : imported.notes) spdlog::warn("{}", note);
  // Built once, as taihu-train will: the config is checked here and not at
  // the first training run, and the checkpoint gets the net's parameter order.
  Net net(std::make_shared<config::Document>(imported.description), 1, *seed);
  std::optional<caffe::ImportedWeights> weights;
  if (args.positional.size() == 3) {
    const std::string weights_path = args.positional[2];
    weights = caffe::import_weights(caffe::read_weights(weights_path), weights_path, net, *seed,
                                    args.flag("keep-missing").has_value());
    for (const auto& note : weights->notes) spdlog::warn("{}", note);
  }

  // Nothing is written unless everything converted.
  const std::string stem = net.name();
  std::vector<std::string> header = {fmt::format("Converted by taihu-convert from {}.", prototxt)};
  header.insert(header.end(), imported.notes.begin(), imported.notes.end());
  const std::filesystem::path ini = out_dir / (stem + ".ini");
  write_text_atomically(ini, commented(header) + "\n" + imported.description.dump());
  spdlog::info("net '{}': {} layers, {} learnable parameters -> {}", stem, net.num_layers(),
               net.num_learnable_parameters(), ini.string());
  if (weights) {
    const std::filesystem::path ckpt = out_dir / (stem + ".ckpt");
    save_checkpoint(weights->checkpoint, ckpt);
    spdlog::info("weights of {} parameter blobs -> {} (seed {})", weights->checkpoint.params.size(), ckpt.string(),
                 *seed);
  }
  return 0;
}

int export_caffe(const Arguments& args) {
  if (args.positional.size() != 2) throw ConfigError("command line: caffe-export takes NET.ini (try --help)");
  const std::filesystem::path out = args.required("out");
  const auto description = config::Document::parse_file(args.positional[1]);
  write_text_atomically(out, caffe::prototxt_of(caffe::export_net(description)));
  spdlog::info("{} -> {}", args.positional[1], out.string());
  return 0;
}

// A fixed pseudo-random input (uniform in [-1, 1]; labels 0) and what the
// net computes from it, as arrays.
std::vector<npz::Array> sample_run(Net& net) {
  std::vector<npz::Array> arrays;
  Rng rng(20260101);
  for (const auto& name : net.input_names()) {
    Tensor& t = net.blob(name).data();
    const bool label = t.shape().rank() == 1;
    for (int64_t i = 0; i < t.count(); ++i) t.ptr()[i] = label ? 0.0f : rng.uniform(-1.0f, 1.0f);
  }
  for (const auto& name : net.input_names()) {
    const Tensor& t = net.blob(name).data();
    arrays.push_back({"input." + name, t.shape().dims(), std::vector<float>(t.ptr(), t.ptr() + t.count())});
  }
  net.forward();
  for (const auto& name : interop::inference_outputs(net)) {
    const Tensor& t = net.blob(name).data();
    arrays.push_back({"output." + name, t.shape().dims(), std::vector<float>(t.ptr(), t.ptr() + t.count())});
  }
  return arrays;
}

int export_model(const Arguments& args) {
  if (args.positional.size() != 2) throw ConfigError("command line: export takes CHECKPOINT (try --help)");
  const std::filesystem::path out = args.required("out");
  const std::string format = args.required("format");
  if (format != "npz" && format != "onnx")
    throw ConfigError(fmt::format("command line: --format={}: expected npz or onnx", format));
  // Two samples per batch: the ONNX writer tells the batch axis from the others by it.
  auto net = interop::load_trained_net(args.required("net"), args.positional[1], 2);
  std::string bytes;
  if (format == "npz") {
    bytes = npz::npz_bytes(interop::pytorch_state(*net));
  } else if (!interop::export_onnx(*net).SerializeToString(&bytes)) {
    throw Error("ONNX export: protobuf could not serialise the model (over 2 GiB?)");
  }
  write_text_atomically(out, bytes);
  spdlog::info("{} ({}) -> {} ({} bytes)", args.positional[1], net->name(), out.string(), bytes.size());
  if (auto sample = args.flag("sample")) {
    write_text_atomically(*sample, npz::npz_bytes(sample_run(*net)));
    spdlog::info("sample inputs and outputs -> {}", *sample);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return taihu::app::run_app([&]() -> int {
    const Arguments args =
        parse_arguments(argc, argv, {"help", "version", "log-level", "out", "input-shape", "seed", "net", "format", "sample",
                                      "keep-missing"});
    if (args.flag("help")) {
      std::fputs(usage, stdout);
      return 0;
    }
    if (args.flag("version")) {
      std::fputs(app::version_text("taihu-convert").c_str(), stdout);
      return 0;
    }
    app::setup_logging(args.flag("log-level").value_or("info"));
    const std::string command = args.positional.empty() ? "" : args.positional[0];
    if (command == "caffe") return convert_caffe(args);
    if (command == "caffe-export") return export_caffe(args);
    if (command == "export") return export_model(args);
    throw ConfigError(
        fmt::format("command line: unknown command '{}' (caffe, caffe-export, export; try --help)", command));
  });
}
