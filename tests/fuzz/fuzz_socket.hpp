#pragma once
// For the targets that fuzz a listening server (data plane, gatekeeper,
// status port): one connection per input on loopback, the input written, the
// write side shut, and whatever the server answers read until it closes, so
// that the server has handled the input before the next one starts.

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "support/loopback.hpp"

namespace taihu::fuzz {

// Sends `prefix` then `input`; false if the server did not close within `idle`
// of silence (a server that waits for more after the write side closed is a
// finding of its own: the caller aborts on it).
inline bool exchange(std::uint16_t port, std::string_view prefix, std::string_view input,
                     std::chrono::milliseconds idle = std::chrono::milliseconds(2000)) {
  const int fd = testing::connect_loopback(port);
  if (fd < 0) std::abort();
  for (const std::string_view part : {prefix, input}) {
    std::size_t sent = 0;
    while (sent < part.size()) {
      const ssize_t n = ::send(fd, part.data() + sent, part.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;  // libFuzzer's timer (loopback.hpp)
      if (n <= 0) break;                      // the server closed early: a refusal
      sent += static_cast<std::size_t>(n);
    }
  }
  ::shutdown(fd, SHUT_WR);
  const bool closed = testing::read_until_closed(fd, idle);
  ::close(fd);
  return closed;
}

}  // namespace taihu::fuzz
