#pragma once
// Range checks for solver options: a failure names the key and its location.

#include <fmt/format.h>

#include <string_view>

#include "core/config/config.hpp"

namespace taihu::detail {

template <class T>
T checked_option(const config::Section& options, std::string_view key, T value, bool ok,
                 std::string_view rule) {
  if (!ok) throw options.error(key, fmt::format("must be {}, got {}", rule, value));
  return value;
}

}  // namespace taihu::detail
