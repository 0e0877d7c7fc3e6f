#pragma once
// Turns an exception escaping an actor's handler into the actor's exit
// reason, so whoever monitors it learns what went wrong (the down_msg carries
// the message), instead of CAF's bare "runtime_error".

#include <caf/actor_system.hpp>
#include <caf/error.hpp>
#include <caf/sec.hpp>

#include <exception>
#include <string>

namespace taihu {

// The exception's message.
inline std::string exception_text(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown exception";
  }
}

inline caf::error exception_reason(std::exception_ptr& e) {
  return caf::make_error(caf::sec::runtime_error, exception_text(e));
}

// The text of an exit reason or failed request: the exception's message when
// exception_reason() made it, CAF's rendering otherwise. A normal exit is an
// empty error, which has no context to look at (CAF 0.17 would dereference null).
inline std::string reason_text(caf::actor_system& system, const caf::error& e) {
  if (!e) return "normal exit";
  if (e.context().match_elements<std::string>()) return e.context().get_as<std::string>(0);
  return system.render(e);
}

}  // namespace taihu
