#pragma once
// What a config file (core/config/config.hpp) can hold as a key, or as a
// section's kind or name: letters, digits and _ - / . What a writer of
// configs (interop/caffe's net importer) must check its names against.

#include <string_view>

namespace taihu::config {

bool is_identifier(std::string_view text);

}  // namespace taihu::config
