#pragma once
// Machine-readable training metrics: one record per line, as JSON lines
// (".jsonl", ".json") or CSV (".csv", header from the first record's keys).

#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <variant>
#include <vector>

namespace taihu {

using MetricValue = std::variant<int64_t, double, std::string>;
using MetricRecord = std::vector<std::pair<std::string, MetricValue>>;
// Receives every record as it is made (taihu.Trainer's callbacks): on the
// thread that makes it, so it must return quickly.
using MetricObserver = std::function<void(const MetricRecord&)>;

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

  // To the file (if any) and the observer (if any).
  void write(const MetricRecord& record);
  // To the observer only: a record made more often than the file keeps them.
  void observe(const MetricRecord& record) const;
  void set_observer(MetricObserver observer) { observer_ = std::move(observer); }

 private:
  std::FILE* file_ = nullptr;
  bool csv_ = false;
  std::vector<std::string> columns_;
  MetricObserver observer_;
};

}  // namespace taihu
