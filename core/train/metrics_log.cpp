#include "core/train/metrics_log.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <utility>

#include "core/common/check.hpp"

namespace taihu {

namespace {

std::string format_value(const MetricValue& value, bool json) {
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&value)) {
    if (!std::isfinite(*d)) return json ? "null" : fmt::format("{}", *d);
    return fmt::format("{:.9g}", *d);
  }
  const auto& s = std::get<std::string>(value);
  return json ? json_quote(s) : s;
}

}  // namespace

std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += c;
    }
  }
  return out + "\"";
}

std::string to_json(const MetricRecord& record) {
  std::string out = "{";
  for (size_t i = 0; i < record.size(); ++i) {
    if (i) out += ", ";
    out += json_quote(record[i].first) + ": " + format_value(record[i].second, true);
  }
  return out + "}";
}

MetricsLog::MetricsLog(const std::filesystem::path& path, bool append) {
  csv_ = path.extension() == ".csv";
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  require(file_ != nullptr, "cannot open metrics file '{}': {}", path.string(), std::strerror(errno));
}

MetricsLog::~MetricsLog() {
  if (file_) std::fclose(file_);
}

MetricsLog::MetricsLog(MetricsLog&& other) noexcept
    : file_(std::exchange(other.file_, nullptr)),
      csv_(other.csv_),
      columns_(std::move(other.columns_)),
      observer_(std::move(other.observer_)) {}

MetricsLog& MetricsLog::operator=(MetricsLog&& other) noexcept {
  if (this != &other) {
    if (file_) std::fclose(file_);
    file_ = std::exchange(other.file_, nullptr);
    csv_ = other.csv_;
    columns_ = std::move(other.columns_);
    observer_ = std::move(other.observer_);
  }
  return *this;
}

void MetricsLog::observe(const MetricRecord& record) const {
  if (observer_) observer_(record);
}

void MetricsLog::write(const MetricRecord& record) {
  observe(record);
  if (!file_) return;
  std::string line;
  if (!csv_) {
    line = to_json(record);
  } else {
    if (columns_.empty()) {
      for (const auto& [key, value] : record) columns_.push_back(key);
      std::fprintf(file_, "%s\n", fmt::format("{}", fmt::join(columns_, ",")).c_str());
    }
    std::vector<std::string> cells(columns_.size());
    for (const auto& [key, value] : record)
      for (size_t c = 0; c < columns_.size(); ++c)
        if (columns_[c] == key) cells[c] = format_value(value, false);
    line = fmt::format("{}", fmt::join(cells, ","));
  }
  std::fprintf(file_, "%s\n", line.c_str());
  std::fflush(file_);
}

}  // namespace taihu
