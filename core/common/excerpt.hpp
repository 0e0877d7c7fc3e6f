#pragma once
// User-supplied text (a name, key, value or line) as a message quotes it.
// Messages name what to fix, but a name is as long as its file lets it be: a
// layer name of 50 MB must not make an error message of 50 MB (a log line, a
// terminal, a report nobody can read). Up to `limit` bytes the text is shown
// whole; beyond, its first `limit` bytes (cut at a UTF-8 character boundary)
// and "… (N bytes)".

#include <fmt/format.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace taihu {

inline constexpr std::size_t excerpt_limit = 100;

inline std::string excerpt(std::string_view text, std::size_t limit = excerpt_limit) {
  if (text.size() <= limit) return std::string(text);
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // inside a character
  return fmt::format("{}… ({} bytes)", text.substr(0, cut), text.size());
}

}  // namespace taihu
