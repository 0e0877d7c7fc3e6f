#pragma once
// Command-line options shared by the benchmarks: `--key=value`.

#include <sstream>
#include <string>
#include <vector>

namespace taihu::bench {

// The value of --key=VALUE, or `fallback` when the option is absent.
inline std::string arg_value(int argc, char** argv, const std::string& key, const std::string& fallback) {
  const std::string prefix = "--" + key + "=";
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]).rfind(prefix, 0) == 0) return std::string(argv[i]).substr(prefix.size());
  return fallback;
}

// A comma-separated list of numbers ("1,16,100").
inline std::vector<double> number_list(const std::string& list) {
  std::vector<double> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stod(item));
  return out;
}

}  // namespace taihu::bench
