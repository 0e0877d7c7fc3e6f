#pragma once
// Reads Caffe's two files through protobuf: a net description (.prototxt,
// protobuf text format) and trained weights (.caffemodel, protobuf binary).
// Every problem is a ConfigError naming the file: a syntax error or a field
// taihu does not read with its line and column, a truncated or foreign
// weights file with what was expected.

#include <filesystem>
#include <string>
#include <vector>

#include "interop/caffe/caffe.pb.h"

namespace taihu::caffe {

// Parses `text` (from `source`, for messages) as a net description; with
// `layer_lines`, also the 1-based line on which each layer starts.
CaffeNet parse_net_text(const std::string& text, const std::string& source,
                        std::vector<int>* layer_lines = nullptr);

// Parses the bytes of a .caffemodel; models of any size protobuf can hold
// (the default limit of 64 MB is raised: VGG-16's file is 528 MB).
CaffeWeights parse_weights(const std::string& bytes, const std::string& source);
CaffeWeights read_weights(const std::filesystem::path& path);

// The whole of a file, or a ConfigError naming it.
std::string read_file_bytes(const std::filesystem::path& path, const std::string& what);

}  // namespace taihu::caffe
