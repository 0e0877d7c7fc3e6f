#pragma once
// Captures what spdlog's default logger writes while it lives, so that a test
// can assert what was logged (and how often).
//
// Threads of objects a test made before its capture (a data plane's I/O
// thread, say) may still be logging when the capture ends. So the logger's
// sink list is never changed under them: one permanent sink (installed by the
// test runner's main, before any test) hands each line to the captures alive
// at that moment, and captures come and go under that sink's lock.

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
  LogCapture() { tee().attach(this); }
  ~LogCapture() { tee().detach(this); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  // How many lines logged so far contain `needle`.
  int lines_with(const std::string& needle) const { return tee().count(this, needle); }

  // Adds the permanent sink to the default logger: call once, before any
  // thread logs (tests/main.cpp).
  static void install() { spdlog::default_logger()->sinks().push_back(tee_pointer()); }

 private:
  class Tee : public spdlog::sinks::base_sink<std::mutex> {
   public:
    void attach(LogCapture* capture) {
      std::lock_guard lock(mutex_);
      captures_.push_back(capture);
    }
    void detach(LogCapture* capture) {
      std::lock_guard lock(mutex_);
      captures_.erase(std::remove(captures_.begin(), captures_.end(), capture), captures_.end());
    }
    int count(const LogCapture* capture, const std::string& needle) {
      std::lock_guard lock(mutex_);
      return static_cast<int>(std::count_if(capture->lines_.begin(), capture->lines_.end(),
                                            [&](const std::string& line) { return line.find(needle) != std::string::npos; }));
    }

   protected:
    // Called with mutex_ held.
    void sink_it_(const spdlog::details::log_msg& msg) override {
      for (LogCapture* capture : captures_) capture->lines_.emplace_back(msg.payload.data(), msg.payload.size());
    }
    void flush_() override {}

   private:
    std::vector<LogCapture*> captures_;
  };

  static const std::shared_ptr<Tee>& tee_pointer() {
    static const auto instance = std::make_shared<Tee>();
    return instance;
  }
  static Tee& tee() { return *tee_pointer(); }

  std::vector<std::string> lines_;  // guarded by the tee's lock
};

}  // namespace taihu::testing
