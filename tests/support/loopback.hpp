#pragma once

// Plain sockets on 127.0.0.1 for tests that play a misbehaving peer: they
// speak bytes, not taihu's protocols, so they bypass every client class.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <chrono>
#include <cstdint>

namespace taihu::testing {

// Every call below carries on where a signal interrupted it: libFuzzer's timer
// (SIGALRM, for its -timeout) lands in the middle of them now and then, and a
// socket with a receive timeout is not restarted by the kernel (signal(7)).

// A connected socket to the port on loopback, or -1.
inline int connect_loopback(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    bool connected = false;
    if (errno == EINTR) {  // the connection goes on: wait until it is made or refused
      pollfd writable{fd, POLLOUT, 0};
      int ready = 0;
      do ready = ::poll(&writable, 1, -1);
      while (ready < 0 && errno == EINTR);
      int error = 0;
      socklen_t length = sizeof error;
      connected = ready == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0;
    }
    if (!connected) {
      ::close(fd);
      return -1;
    }
  }
  return fd;
}

inline bool send_all(int fd, const void* data, std::size_t n) {
  ssize_t sent = 0;
  do sent = ::send(fd, data, n, MSG_NOSIGNAL);
  while (sent < 0 && errno == EINTR);
  return sent == static_cast<ssize_t>(n);
}
inline bool receive_all(int fd, void* data, std::size_t n) {
  auto* bytes = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t got = ::recv(fd, bytes, n, MSG_WAITALL);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    bytes += got;
    n -= static_cast<std::size_t>(got);
  }
  return true;
}

// Reads and drops what arrives until the peer closes (true: an orderly close
// or a reset), or until nothing has arrived for `idle` (false).
inline bool read_until_closed(int fd, std::chrono::milliseconds idle) {
  timeval tv{static_cast<time_t>(idle.count() / 1000), static_cast<suseconds_t>((idle.count() % 1000) * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char sink[256];
  for (;;) {
    const ssize_t n = ::recv(fd, sink, sizeof sink, 0);
    if (n == 0) return true;
    if (n < 0 && errno != EINTR) return errno == ECONNRESET;
  }
}

}  // namespace taihu::testing
