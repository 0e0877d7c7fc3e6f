#pragma once
// A warning that a peer can trigger at will (a refused connection, garbage on
// a port) is logged at most once per interval; the lines in between are
// counted and the next line says how many there were. Thread-safe.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace taihu::transport {

class LogLimiter {
 public:
  explicit LogLimiter(std::chrono::milliseconds interval = std::chrono::seconds(1)) : interval_(interval) {}

  template <class... Args>
  void warn(fmt::format_string<Args...> format, Args&&... args) {
    std::uint64_t suppressed = 0;
    {
      std::lock_guard lock(mutex_);
      const auto now = std::chrono::steady_clock::now();
      if (logged_ && now - last_ < interval_) {
        ++suppressed_;
        return;
      }
      logged_ = true;
      last_ = now;
      suppressed = suppressed_;
      suppressed_ = 0;
    }
    std::string line = fmt::format(format, std::forward<Args>(args)...);
    if (suppressed > 0) line += fmt::format(" ({} more like it since the last such line)", suppressed);
    spdlog::warn("{}", line);
  }

 private:
  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  bool logged_ = false;
  std::chrono::steady_clock::time_point last_{};
  std::uint64_t suppressed_ = 0;
};

}  // namespace taihu::transport
