// taihu-convert: other frameworks' model files to taihu's, and back.
//
//   taihu-convert caffe NET.prototxt [WEIGHTS.caffemodel] --out=DIR [--input-shape=NAME=C,H,W ...] [--seed=N]
//   taihu-convert caffe-export NET.ini --out=FILE.prototxt
//   taihu-convert onnx MODEL.onnx --out=DIR [--input-shape=NAME=C,H,W] [--seed=N] [--no-training-head]
//   taihu-convert export CHECKPOINT --net=NET.ini --format=npz|onnx --out=FILE [--sample=FILE.npz]
//   taihu-convert imageset FOLDER|LIST --out=DB [--root=DIR] [--encoded] [--gray] [--resize=H,W] [--shuffle]
//                          [--seed=N] [--classes=N] [--mean=FILE]
//
// Exit codes: 0 done, 2 bad input (unsupported layer or field, syntax error,
// wrong shapes, unreadable or foreign file), 1 anything else.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <optional>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "apps/app_support.hpp"
#include "apps/model_files.hpp"
#include "apps/version.hpp"
#include "core/common/atomic_file.hpp"
#include "core/common/error.hpp"
#include "core/common/excerpt.hpp"
#include "core/common/random.hpp"
#include "core/data/image_index.hpp"
#include "core/data/imageset_writer.hpp"
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
using app::commented;
using app::output_stem;

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
  onnx MODEL.onnx --out=DIR
        Writes DIR/NAME.ini and DIR/NAME.ckpt (the model's weights) from an
        ONNX model (torch.onnx.export's, taihu's own export): Conv, Gemm,
        MatMul, BatchNormalization, pooling, Relu, Add, Concat, Flatten,
        Reshape, Softmax, LRN, Dropout and what folds into them. Anything else
        is an error naming the node, its operator and why. The net gets a
        label input, SoftmaxWithLoss and Accuracy on its class scores, so
        that it trains (fine-tuning: taihu-train ... --resume=DIR/NAME.ckpt).
        --input-shape=NAME=C,H,W   the per-sample shape of an input the file
                                   leaves symbolic
        --seed=N                   as for caffe
        --no-training-head         the inference graph alone
  export CHECKPOINT --net=NET.ini --format=npz|onnx --out=FILE
        Writes a checkpoint's parameters for other frameworks: npz (numpy.load;
        PyTorch's state_dict names: conv1.weight, bn1.running_mean, ...) or
        onnx (the net's inference graph with its weights, opset 13). The net
        config says what each parameter is; it must be the checkpoint's net.
        --sample=FILE.npz   also run the net (test phase, 2 samples of a fixed
                            pseudo-random input) and write its inputs
                            ("input.NAME") and outputs ("output.NAME"), to
                            check the export against another framework

  imageset FOLDER|LIST --out=DB
        Writes an LMDB database of Caffe Datum records (as Caffe's
        convert_imageset), for `[data] source = lmdb`, from a folder of class
        folders (labels: the sorted folder names) or a list file of
        `path label` lines. Unreadable images are skipped and counted.
        Also writes DB/classes.txt (label and name per line).
        --root=DIR       list files: the folder their paths are relative to
                         (default: the list file's folder)
        --encoded        keep each file's bytes (smaller; decoded when read);
                         default: raw pixels, which need one size
        --gray           one channel (default: three, colour)
        --resize=H,W     resize every image to H x W first
        --shuffle        records in a random order (--seed=N, default 1)
        --classes=N      list files: labels must be below N
        --mean=FILE      also write the mean image (Caffe's binaryproto), for
                         `[data] mean_file`; needs images of one size
        --progress=MODE  auto, bar, lines or quiet

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
      throw ConfigError(fmt::format("command line: unknown option '{}' (try --help)", excerpt(arg)));
    args.flags.emplace_back(name, eq == std::string::npos ? std::string() : arg.substr(eq + 1));
  }
  return args;
}

uint64_t seed_flag(const Arguments& args) {
  const auto seed_text = args.flag("seed").value_or("1");
  const auto seed = config::parse_value<uint64_t>(seed_text);
  if (!seed)
    throw ConfigError(fmt::format("command line: --seed='{}' is not a non-negative integer", excerpt(seed_text)));
  return *seed;
}

int convert_caffe(const Arguments& args) {
  if (args.positional.size() < 2 || args.positional.size() > 3)
    throw ConfigError("command line: caffe takes NET.prototxt and optionally WEIGHTS.caffemodel (try --help)");
  const std::filesystem::path out_dir = args.required("out");
  caffe::ImportOptions options;
  for (const auto& [key, value] : args.flags)
    if (key == "input-shape") options.input_shapes.insert(caffe::parse_input_shape(value));
  const auto seed = seed_flag(args);

  const std::string prototxt = args.positional[1];
  caffe::ImportedNet imported = caffe::import_net(caffe::read_net(prototxt), options);
  for (const auto& note : imported.notes) spdlog::warn("{}", note);
  // Built once, as taihu-train will: the config is checked here and not at
  // the first training run, and the checkpoint gets the net's parameter order.
  // Its parameters only, not its blobs: a translation computes nothing, and a
  // declared input of 1x1000x1000x1000 must not cost 10^9 floats per blob.
  Net net(std::make_shared<config::Document>(imported.description), 1, seed, Net::Storage::parameters_only);
  std::optional<caffe::ImportedWeights> weights;
  if (args.positional.size() == 3) {
    const std::string weights_path = args.positional[2];
    weights = caffe::import_weights(caffe::read_weights(weights_path), weights_path, net, seed,
                                    args.flag("keep-missing").has_value());
    for (const auto& note : weights->notes) spdlog::warn("{}", note);
  }

  // Nothing is written unless everything converted.
  const std::string stem = output_stem(net.name(), prototxt);
  std::vector<std::string> header = {fmt::format("Converted by taihu-convert from {}.", prototxt)};
  header.insert(header.end(), imported.notes.begin(), imported.notes.end());
  const std::filesystem::path ini = out_dir / (stem + ".ini");
  write_file_atomically(ini, commented(header) + "\n" + imported.description.dump());
  spdlog::info("net '{}': {} layers, {} learnable parameters -> {}", stem, net.num_layers(),
               net.num_learnable_parameters(), ini.string());
  if (weights) {
    const std::filesystem::path ckpt = out_dir / (stem + ".ckpt");
    save_checkpoint(weights->checkpoint, ckpt);
    spdlog::info("weights of {} parameter blobs -> {} (seed {})", weights->checkpoint.params.size(), ckpt.string(),
                 seed);
  }
  return 0;
}

int convert_onnx(const Arguments& args) {
  if (args.positional.size() != 2) throw ConfigError("command line: onnx takes MODEL.onnx (try --help)");
  interop::OnnxImportOptions options;
  options.training_head = !args.flag("no-training-head").has_value();
  for (const auto& [key, value] : args.flags)
    if (key == "input-shape") options.input_shapes.insert(caffe::parse_input_shape(value));
  const auto seed = seed_flag(args);
  const app::ImportedFiles files = app::import_onnx_files(args.positional[1], args.required("out"), options, seed);
  for (const auto& note : files.notes) spdlog::warn("{}", note);
  spdlog::info("net '{}': {} layers, {} learnable parameters -> {}, weights -> {} (seed {})", files.net, files.layers,
               files.learnable_parameters, files.config.string(), files.checkpoint.string(), seed);
  return 0;
}

int export_caffe(const Arguments& args) {
  if (args.positional.size() != 2) throw ConfigError("command line: caffe-export takes NET.ini (try --help)");
  const std::filesystem::path out = args.required("out");
  const auto description = config::Document::parse_file(args.positional[1]);
  write_file_atomically(out, caffe::prototxt_of(caffe::export_net(description)));
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
  const std::vector<std::string> outputs = interop::inference_outputs(net);
  net.keep_values(outputs);
  net.forward();
  for (const auto& name : outputs) {
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
  write_file_atomically(out, bytes);
  spdlog::info("{} ({}) -> {} ({} bytes)", args.positional[1], net->name(), out.string(), bytes.size());
  if (auto sample = args.flag("sample")) {
    write_file_atomically(*sample, npz::npz_bytes(sample_run(*net)));
    spdlog::info("sample inputs and outputs -> {}", *sample);
  }
  return 0;
}

// One count from a flag, within [minimum, maximum].
int64_t count_flag(const Arguments& args, const std::string& name, int64_t fallback, int64_t minimum,
                   int64_t maximum) {
  const auto text = args.flag(name);
  if (!text) return fallback;
  int64_t value = 0;
  const auto [end, err] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (err != std::errc() || end != text->data() + text->size() || value < minimum || value > maximum)
    throw ConfigError(fmt::format("command line: --{}={}: expected a whole number in {}..{}", name, *text, minimum,
                                  maximum));
  return value;
}

int convert_imageset(const Arguments& args) {
  if (args.positional.size() != 2) throw ConfigError("command line: imageset takes FOLDER or LIST (try --help)");
  const std::filesystem::path source = args.positional[1];
  const std::filesystem::path out = args.required("out");
  ImagesetOptions options;
  options.encoded = args.flag("encoded").has_value();
  options.channels = args.flag("gray") ? 1 : 3;
  options.shuffle = args.flag("shuffle").has_value();
  options.seed = static_cast<uint64_t>(count_flag(args, "seed", 1, 0, INT64_MAX));
  options.progress = args.flag("progress").value_or("auto");
  if (auto mean = args.flag("mean")) options.mean_file = *mean;
  if (auto resize = args.flag("resize")) {
    const auto comma = resize->find(',');
    if (comma == std::string::npos)
      throw ConfigError(fmt::format("command line: --resize={}: expected H,W", *resize));
    Arguments sides;
    sides.flags = {{"resize height", resize->substr(0, comma)}, {"resize width", resize->substr(comma + 1)}};
    options.resize_height = static_cast<int>(count_flag(sides, "resize height", 0, 1, 65535));
    options.resize_width = static_cast<int>(count_flag(sides, "resize width", 0, 1, 65535));
  }
  const int classes = static_cast<int>(count_flag(args, "classes", 0, 1, INT32_MAX));
  std::error_code ec;
  ImageIndex index;
  if (std::filesystem::is_directory(source, ec)) {
    if (args.flag("root") || args.flag("classes"))
      throw ConfigError("command line: --root and --classes apply to list files, not to a folder of class folders");
    index = list_image_folder(source);
    options.key_root = source;
  } else {
    if (!std::filesystem::exists(source, ec))
      throw DataError(fmt::format("'{}' does not exist (give a folder of class folders or a list file)",
                                  source.string()));
    const std::filesystem::path root = args.flag("root") ? std::filesystem::path(*args.flag("root"))
                                                         : source.parent_path();
    index = read_image_list(source, root, classes);
    options.key_root = root;
  }
  spdlog::info("{}: {} images of {} classes -> {} ({} records)", source.string(), index.size(), index.classes.size(),
               out.string(), options.encoded ? "encoded" : "raw");
  const ImagesetResult result = write_imageset(index, out, options);
  if (result.height > 0)
    spdlog::info("{} records of {} x {} x {}{}", result.written, options.channels, result.height, result.width,
                 options.mean_file.empty() ? "" : "; mean image -> " + options.mean_file.string());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return taihu::app::run_app([&]() -> int {
    const Arguments args =
        parse_arguments(argc, argv, {"help", "version", "log-level", "out", "input-shape", "seed", "net", "format", "sample",
                                      "keep-missing", "no-training-head", "root", "encoded", "gray", "resize", "shuffle", "classes",
                                      "mean", "progress"});
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
    if (command == "onnx") return convert_onnx(args);
    if (command == "export") return export_model(args);
    if (command == "imageset") return convert_imageset(args);
    throw ConfigError(
        fmt::format("command line: unknown command '{}' (caffe, caffe-export, onnx, export, imageset; try --help)",
                    excerpt(command)));
  });
}
