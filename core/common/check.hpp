#pragma once
// Argument checks that throw a taihu error with a formatted message.

#include <fmt/format.h>

#include "core/common/error.hpp"

namespace taihu {

template <class E = Error, class... Args>
[[noreturn]] void raise(fmt::format_string<Args...> format, Args&&... args) {
  throw E(fmt::format(format, std::forward<Args>(args)...));
}

template <class E = Error, class... Args>
void require(bool condition, fmt::format_string<Args...> format, Args&&... args) {
  if (!condition) raise<E>(format, std::forward<Args>(args)...);
}

}  // namespace taihu
