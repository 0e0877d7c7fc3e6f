#pragma once
// Memory faults (SIGSEGV, SIGBUS) inside a guarded call become a result the
// caller reports, not the death of the process: for a C library that reads a
// file in place from its memory map (LMDB), where a truncated or damaged file
// makes it read past the file's end or follow a wild pointer.
//
// Only a fault of the calling thread while its guarded call runs is caught.
// Any other fault goes on to the handler installed before the guard's (ASan's,
// doctest's, a crash reporter's, the default action), as if the guard were
// not there. The guard's handler is installed on the first guarded call, and
// again on a later one if somebody replaced it meanwhile.
//
// A fault leaves the call by siglongjmp: the body must hold nothing that needs
// destroying or unlocking (C library calls, plain loads and stores), and what
// it was working on (an LMDB transaction) must be discarded, not reused.

#include <optional>
#include <string>
#include <type_traits>

namespace taihu {

struct GuardedFault {
  int signal = 0;                 // SIGSEGV or SIGBUS; 0: left by leave_guarded_call
  const void* address = nullptr;  // what the faulting access read or wrote
  std::string message;            // leave_guarded_call's
};

// Runs body(context) and returns nothing if it ran to its end, or the fault
// that stopped it. An exception thrown by the body passes through.
std::optional<GuardedFault> run_guarded(void (*body)(void*), void* context);

template <class Body>
std::optional<GuardedFault> run_guarded(Body&& body) {
  return run_guarded([](void* context) { (*static_cast<std::remove_reference_t<Body>*>(context))(); },
                     const_cast<void*>(static_cast<const void*>(&body)));
}

// Leaves the calling thread's innermost guarded call at once, as a fault
// would, with `message` (truncated to 400 characters); returns if no guarded
// call is running. For a library's fatal-error callback that would otherwise
// abort the process (LMDB's failed assertions).
void leave_guarded_call(const char* message);

}  // namespace taihu
