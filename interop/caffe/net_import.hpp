#pragma once
// A Caffe net description (prototxt) as a taihu net config (the format of
// config/nets/*.ini, read by core/net/net.hpp):
//
//   - Input layers, the old `input:` + `input_shape`/`input_dim` form and
//     data layers (Data, ImageData, HDF5Data, MemoryData, DummyData) become
//     [input NAME] sections; their batch axis is dropped. Data layers do not
//     say their images' shape (it is in the database): give it with
//     `input_shapes`. Their source, batch size and transform_param belong to
//     a training config's [data] and are reported as notes, not carried.
//   - `include`/`exclude { phase: ... }` becomes `phase = train|test`;
//     stages and levels are refused.
//   - In-place layers (top == bottom) stay in place where taihu's layer
//     allows it (ReLU, Sigmoid, TanH, Dropout); for the others (BatchNorm,
//     Scale, ... as in ResNet's prototxt) the top gets a blob of its own,
//     named after the layer, and later readers of the blob read that one.
//   - Explicit Split layers disappear: taihu inserts its own.
//
// Unsupported layer types and settings are ConfigErrors naming the layer,
// its type, the field and the prototxt line.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "interop/caffe/caffe.pb.h"

namespace taihu::caffe {

struct ParsedNet {
  CaffeNet net;
  std::string source;            // file name, for messages
  std::vector<int> layer_lines;  // 1-based line of each `layer {`, 0 if unknown
};

// Parses prototxt text, remembering where each layer starts.
ParsedNet parse_net(const std::string& text, const std::string& source);
ParsedNet read_net(const std::string& path);

struct ImportOptions {
  // Per-sample shapes of inputs (no batch axis), e.g. {"data", {1, 28, 28}}:
  // needed for data layers, and overriding any shape the prototxt gives.
  std::map<std::string, std::vector<int64_t>> input_shapes;
};

struct ImportedNet {
  config::Document description;  // [net], [input ...], [layer ...]
  std::vector<std::string> notes;  // what was adapted or left out, for the user
};

ImportedNet import_net(const ParsedNet& parsed, const ImportOptions& options = {});

// "data=1,28,28" (or "label=") as one input_shapes entry; ConfigError otherwise.
std::pair<std::string, std::vector<int64_t>> parse_input_shape(const std::string& text);

}  // namespace taihu::caffe
