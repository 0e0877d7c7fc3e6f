#pragma once
// Command-line options shared by the benchmarks: `--key=value`.

#include <string>

namespace taihu::bench {

// The value of --key=VALUE, or `fallback` when the option is absent.
inline std::string arg_value(int argc, char** argv, const std::string& key, const std::string& fallback) {
  const std::string prefix = "--" + key + "=";
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]).rfind(prefix, 0) == 0) return std::string(argv[i]).substr(prefix.size());
  return fallback;
}

}  // namespace taihu::bench
