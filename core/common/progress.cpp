#include "core/common/progress.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "core/common/error.hpp"

namespace taihu {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--";
  const auto s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

Progress::Mode Progress::parse_mode(const std::string& name, std::string_view what) {
  if (name.empty() || name == "auto") return Mode::automatic;
  if (name == "bar") return Mode::bar;
  if (name == "lines") return Mode::lines;
  if (name == "quiet") return Mode::quiet;
  throw ConfigError(fmt::format("{} must be auto, bar, lines or quiet, not '{}'", what, name));
}

Progress::Progress(std::string label, int64_t total_steps, int64_t items_per_step, Mode mode,
                   int64_t interval, std::string unit)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total_steps),
      items_per_step_(items_per_step),
      mode_(mode),
      interval_(interval > 0 ? interval : 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  if (mode_ == Mode::automatic) mode_ = ::isatty(STDERR_FILENO) ? Mode::bar : Mode::lines;
}

Progress::~Progress() {
  if (!finished_ && mode_ == Mode::bar && step_ > 0) std::fputs("\n", stderr);
}

double Progress::seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double Progress::items_per_second() const {
  const double s = seconds();
  return s > 0 ? static_cast<double>(step_ * items_per_step_) / s : 0.0;
}

void Progress::update(int64_t step, const std::string& metrics) {
  step_ = step;
  if (mode_ == Mode::quiet) return;
  if (mode_ == Mode::lines) {
    if (step % interval_ == 0 || step == total_) draw(step, metrics, false);
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (step == total_ || now - last_draw_ > std::chrono::milliseconds(100)) {
    last_draw_ = now;
    draw(step, metrics, false);
  }
}

void Progress::draw(int64_t step, const std::string& metrics, bool final) {
  const double elapsed = seconds();
  const double rate = items_per_second();
  const double eta = step > 0 ? elapsed / static_cast<double>(step) * static_cast<double>(total_ - step) : NAN;
  if (mode_ == Mode::bar) {
    constexpr int width = 24;
    const int filled = total_ > 0 ? static_cast<int>(width * step / total_) : width;
    const std::string bar = std::string(filled, '#') + std::string(width - filled, '.');
    std::fprintf(stderr, "\r\033[K%s [%s] %lld/%lld %s | %.0f %s/s | ETA %s", label_.c_str(), bar.c_str(),
                 static_cast<long long>(step), static_cast<long long>(total_), metrics.c_str(), rate,
                 unit_.c_str(), format_duration(eta).c_str());
    std::fflush(stderr);
  } else {
    spdlog::info("{} {}/{} {} | {:.0f} {}/s | ETA {}", label_, step, total_, metrics, rate, unit_,
                 format_duration(eta));
  }
  (void)final;
}

void Progress::finish(const std::string& summary) {
  if (finished_) return;
  finished_ = true;
  if (mode_ == Mode::bar && step_ > 0) std::fputs("\n", stderr);
  if (mode_ != Mode::quiet)
    spdlog::info("{} done in {}: {} | {:.0f} {}/s", label_, format_duration(seconds()), summary,
                 items_per_second(), unit_);
}

}  // namespace taihu
