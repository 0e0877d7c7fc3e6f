#include "apps/stop_signals.hpp"

#include <fmt/format.h>

#include <csignal>

#include "core/common/error.hpp"

namespace taihu::app {
namespace {

// Lock-free atomics are what a signal handler may touch; the flag lives as
// long as the process, since an actor may read it after StopSignals ended.
const auto stop_flag = std::make_shared<std::atomic<bool>>(false);
std::atomic<bool>* stop_raw = stop_flag.get();
std::atomic<int> stop_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

struct sigaction previous_int, previous_term;

extern "C" void on_stop_signal(int signal) {
  stop_signal.store(signal, std::memory_order_relaxed);
  stop_raw->store(true, std::memory_order_relaxed);
}

void install(int signal, struct sigaction* previous) {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_RESTART;  // the second one takes the default action
  if (sigaction(signal, &action, previous) != 0)
    throw Error(fmt::format("cannot install the handler of signal {}", signal));
}

}  // namespace

StopSignals::StopSignals() {
  install(SIGINT, &previous_int);
  install(SIGTERM, &previous_term);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &previous_int, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
}

std::shared_ptr<const std::atomic<bool>> StopSignals::flag() const { return stop_flag; }

int StopSignals::received() const { return stop_signal.load(std::memory_order_relaxed); }

}  // namespace taihu::app
