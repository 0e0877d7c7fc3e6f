#include "core/layers/window_options.hpp"

#include <fmt/format.h>

#include <vector>

namespace taihu {

HeightWidth read_height_width(const config::Section& options, const std::string& key, const std::string& prefix,
                              std::optional<int64_t> fallback, int64_t minimum) {
  const std::string key_h = prefix + "_h";
  const std::string key_w = prefix + "_w";
  const bool has_pair = options.has(key_h) || options.has(key_w);
  HeightWidth hw;
  std::string used_key = key;
  if (options.has(key)) {
    if (has_pair) throw options.error(key, fmt::format("give either {} or {} and {}, not both", key, key_h, key_w));
    const auto values = options.get_list<int64_t>(key);
    if (values.size() == 1) {
      hw = {values[0], values[0]};
    } else if (values.size() == 2) {
      hw = {values[0], values[1]};
    } else {
      throw options.error(key, fmt::format("expected one value or two (height width), got {}", values.size()));
    }
  } else if (has_pair) {
    if (!options.has(key_h)) throw options.error(key_w, fmt::format("{} given without {}", key_w, key_h));
    if (!options.has(key_w)) throw options.error(key_h, fmt::format("{} given without {}", key_h, key_w));
    hw = {options.get<int64_t>(key_h), options.get<int64_t>(key_w)};
    if (hw.h < minimum)
      used_key = key_h;
    else
      used_key = key_w;
  } else if (fallback) {
    return {*fallback, *fallback};
  } else {
    throw options.error(key, fmt::format("required but missing (or give {} and {})", key_h, key_w));
  }
  if (hw.h < minimum || hw.w < minimum)
    throw options.error(used_key, fmt::format("must be at least {}, got {}x{}", minimum, hw.h, hw.w));
  return hw;
}

}  // namespace taihu
