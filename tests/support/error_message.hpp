#pragma once
// What a test asserts about bad input: the message of the exception of type E
// that `f()` throws, or "<no error>" when it throws none (an exception of
// another type propagates, so the test fails loudly).

#include <string>

#include "core/common/error.hpp"

namespace taihu::testing {

template <class E = Error, class F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace taihu::testing
