#pragma once
// Captures what spdlog's default logger writes while it lives, so that a test
// can assert what was logged (and how often).

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace taihu::testing {

class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<Sink>()) { spdlog::default_logger()->sinks().push_back(sink_); }
  ~LogCapture() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // How many lines logged so far contain `needle`.
  int lines_with(const std::string& needle) const { return sink_->count(needle); }

 private:
  class Sink : public spdlog::sinks::base_sink<std::mutex> {
   public:
    int count(const std::string& needle) {
      std::lock_guard lock(mutex_);
      return static_cast<int>(std::count_if(lines_.begin(), lines_.end(), [&](const std::string& line) {
        return line.find(needle) != std::string::npos;
      }));
    }

   protected:
    void sink_it_(const spdlog::details::log_msg& msg) override { lines_.emplace_back(msg.payload.data(), msg.payload.size()); }
    void flush_() override {}

   private:
    std::vector<std::string> lines_;
  };
  std::shared_ptr<Sink> sink_;
};

}  // namespace taihu::testing
