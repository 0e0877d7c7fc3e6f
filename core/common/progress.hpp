#pragma once
// Shows the progress of long work: a live bar (with loss, rate and ETA) when
// stderr is a terminal, plain log lines every `interval` steps otherwise.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace taihu {

class Progress {
 public:
  enum class Mode { automatic, bar, lines, quiet };
  // "auto" (or ""), "bar", "lines" or "quiet"; ConfigError naming `what`
  // (e.g. "command line: --progress") for any other name.
  static Mode parse_mode(const std::string& name, std::string_view what);

  // `unit` names what items are in the rate ("img", "trees": "img/s").
  Progress(std::string label, int64_t total_steps, int64_t items_per_step, Mode mode = Mode::automatic,
           int64_t interval = 100, std::string unit = "img");
  ~Progress();

  // Records that `step` (1-based) finished; `metrics` is shown after the bar.
  void update(int64_t step, const std::string& metrics);
  // Ends the bar line (if any) and logs a summary.
  void finish(const std::string& summary);

  double seconds() const;
  double items_per_second() const;

 private:
  void draw(int64_t step, const std::string& metrics, bool final);

  std::string label_;
  std::string unit_;
  int64_t total_;
  int64_t items_per_step_;
  Mode mode_;
  int64_t interval_;
  int64_t step_ = 0;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

// "1h02m", "3m05s", "12s".
std::string format_duration(double seconds);

}  // namespace taihu
