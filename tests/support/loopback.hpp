#pragma once

// Plain sockets on 127.0.0.1 for tests that play a misbehaving peer: they
// speak bytes, not taihu's protocols, so they bypass every client class.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <chrono>
#include <cstdint>

namespace taihu::testing {

// A connected socket to the port on loopback, or -1.
inline int connect_loopback(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline bool send_all(int fd, const void* data, std::size_t n) {
  return ::send(fd, data, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n);
}
inline bool receive_all(int fd, void* data, std::size_t n) {
  return ::recv(fd, data, n, MSG_WAITALL) == static_cast<ssize_t>(n);
}

// Reads and drops what arrives until the peer closes (true: an orderly close
// or a reset) or nothing arrives for `idle` (false).
inline bool read_until_closed(int fd, std::chrono::milliseconds idle) {
  timeval tv{static_cast<time_t>(idle.count() / 1000), static_cast<suseconds_t>((idle.count() % 1000) * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char sink[256];
  for (;;) {
    const ssize_t n = ::recv(fd, sink, sizeof sink, 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
  }
}

}  // namespace taihu::testing
