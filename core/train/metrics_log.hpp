#pragma once
// Machine-readable training metrics: one record per line, as JSON lines
// (".jsonl", ".json") or CSV (".csv", header from the first record's keys).

#include <cstdio>
#include <filesystem>
#include <string>
#include <variant>
#include <vector>

namespace taihu {

using MetricValue = std::variant<int64_t, double, std::string>;
using MetricRecord = std::vector<std::pair<std::string, MetricValue>>;

// A record as one JSON object (no trailing newline).
std::string to_json(const MetricRecord& record);
// JSON string literal with escapes.
std::string json_quote(const std::string& text);

class MetricsLog {
 public:
  MetricsLog() = default;  // disabled
  explicit MetricsLog(const std::filesystem::path& path, bool append = false);
  ~MetricsLog();
  MetricsLog(MetricsLog&& other) noexcept;
  MetricsLog& operator=(MetricsLog&& other) noexcept;

  void write(const MetricRecord& record);
  bool enabled() const { return file_ != nullptr; }

 private:
  std::FILE* file_ = nullptr;
  bool csv_ = false;
  std::vector<std::string> columns_;
};

}  // namespace taihu
