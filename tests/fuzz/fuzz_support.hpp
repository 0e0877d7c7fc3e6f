#pragma once
// What every fuzz target shares: the contract it checks and scratch files.
//
// The contract of every parser and loader in taihu: bad input throws a
// taihu::Error (a user-facing message), nothing else. So a target calls the
// code under test through `expect_clean`: a taihu::Error is a pass, any other
// exception escapes and aborts (libFuzzer reports it with the input), as does
// every crash, sanitizer report, leak, timeout and oversized allocation.

#include <unistd.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "core/common/error.hpp"

namespace taihu::fuzz {

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Whether every decimal number in `text` is at most `limit`: descriptions of
// large nets are legitimate input, and building one would only measure
// malloc, so the targets that build nets skip the others.
inline bool small_numbers_only(std::string_view text, std::int64_t limit) {
  std::int64_t value = 0;
  for (const char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      value = value * 10 + (c - '0');
      if (value > limit) return false;
    } else {
      value = 0;
    }
  }
  return true;
}

template <class F>
void expect_clean(F&& f) {
  try {
    f();
  } catch (const Error&) {
  }
}

// A folder of this process's own in /dev/shm (memory, not disk: targets
// write an input per run), removed at exit.
class Scratch {
 public:
  Scratch() {
    const std::filesystem::path base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
    dir_ = base / ("taihu-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // Writes `bytes` to `name` in the folder and returns its path.
  std::filesystem::path write(const std::string& name, std::string_view bytes) const {
    const auto path = dir_ / name;
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return path;
  }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

}  // namespace taihu::fuzz
