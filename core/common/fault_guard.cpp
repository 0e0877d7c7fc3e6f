#include "core/common/fault_guard.hpp"

#include <csetjmp>
#include <csignal>
#include <cstring>
#include <mutex>

namespace taihu {

namespace {

// The calling thread's innermost guarded call: where a fault jumps to.
struct Armed {
  sigjmp_buf jump;
  int signal = 0;
  const void* address = nullptr;
  char message[401] = {};
};

thread_local Armed* armed = nullptr;
// Set while this thread's fault goes on to the previous handler: a handler
// that chains back to the guard's (it was installed over the guard's) ends
// the loop by taking the default action.
thread_local bool chaining = false;

constexpr int kSignals[2] = {SIGSEGV, SIGBUS};
std::mutex install_mutex;
struct sigaction previous[2];

int slot(int signal) { return signal == SIGBUS ? 1 : 0; }

[[noreturn]] void leave(Armed* a) {
  armed = nullptr;  // run_guarded puts the outer call back
  siglongjmp(a->jump, 1);
}

// Only async-signal-safe work: loads and stores, sigaction, raise.
extern "C" void on_fault(int signal, siginfo_t* info, void* context) {
  if (Armed* a = armed; a != nullptr) {
    a->signal = signal;
    a->address = info->si_addr;
    leave(a);
  }
  const struct sigaction& before = previous[slot(signal)];
  if (!chaining && (before.sa_flags & SA_SIGINFO) != 0 && before.sa_sigaction != nullptr) {
    chaining = true;
    before.sa_sigaction(signal, info, context);
    chaining = false;
    return;
  }
  if (!chaining && (before.sa_flags & SA_SIGINFO) == 0 && before.sa_handler != SIG_DFL &&
      before.sa_handler != SIG_IGN) {
    chaining = true;
    before.sa_handler(signal);
    chaining = false;
    return;
  }
  // The default action: the faulting instruction runs again and ends the
  // process with this signal; one sent by kill() is sent again.
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(signal, &fallback, nullptr);
  if (info->si_code <= 0) raise(signal);
}

bool installed(int signal) {
  struct sigaction current {};
  sigaction(signal, nullptr, &current);
  return (current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == on_fault;
}

// Checked on every guarded call (a sigaction query per signal), since a test
// runner or a library may install its own handler over the guard's.
void install() {
  if (installed(SIGSEGV) && installed(SIGBUS)) return;
  std::lock_guard lock(install_mutex);
  for (int signal : kSignals) {
    if (installed(signal)) continue;
    struct sigaction action {};
    action.sa_sigaction = on_fault;
    sigemptyset(&action.sa_mask);
    // SA_ONSTACK: where a thread has an alternate stack (doctest's, ASan's), use it.
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(signal, &action, &previous[slot(signal)]);
  }
}

}  // namespace

std::optional<GuardedFault> run_guarded(void (*body)(void*), void* context) {
  install();
  Armed here;
  Armed* const outer = armed;
  // savemask = 1: the jump out of the handler unblocks the signal again.
  if (sigsetjmp(here.jump, 1) != 0) {
    armed = outer;
    return GuardedFault{here.signal, here.address, here.message};
  }
  armed = &here;
  try {
    body(context);
  } catch (...) {
    armed = outer;
    throw;
  }
  armed = outer;
  return std::nullopt;
}

void leave_guarded_call(const char* message) {
  Armed* a = armed;
  if (a == nullptr) return;
  std::strncpy(a->message, message, sizeof a->message - 1);
  leave(a);
}

}  // namespace taihu
