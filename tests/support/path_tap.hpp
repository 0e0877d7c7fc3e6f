#pragma once
// A machine on the path between two hosts, played on loopback: a TCP relay
// in front of the port `target`. Each connection it accepts it joins to one
// of its own to the target and copies bytes both ways (a thread each way),
// recording them. It may flip the lowest bit of one byte of one direction's
// stream (counted from that stream's first byte), or hang up on the client
// once it has sent some bytes while still passing them on. Tests of what TLS
// hides and what it catches, and of a peer lost in the middle of a stream.

#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "support/loopback.hpp"

namespace taihu::testing {

// Whether `needle` (n bytes) occurs in `haystack`.
inline bool contains(const std::vector<char>& haystack, const void* needle, std::size_t n) {
  const char* begin = static_cast<const char*>(needle);
  return std::search(haystack.begin(), haystack.end(), begin, begin + n) != haystack.end();
}

class PathTap {
 public:
  enum class Direction { from_client, from_server };
  struct Flip {
    Direction direction = Direction::from_client;
    std::size_t at = std::numeric_limits<std::size_t>::max();  // none
  };

  // Ends the server-to-client direction once the client has sent `after`
  // bytes: the client reads the end of its stream while what it writes still
  // reaches the server.
  struct HangUp {
    std::size_t after = std::numeric_limits<std::size_t>::max();  // never
  };

  explicit PathTap(std::uint16_t target) : PathTap(target, Flip{}) {}
  PathTap(std::uint16_t target, Flip flip) : PathTap(target, flip, HangUp{}) {}
  PathTap(std::uint16_t target, HangUp hang_up) : PathTap(target, Flip{}, hang_up) {}
  PathTap(std::uint16_t target, Flip flip, HangUp hang_up) : target_(target), flip_(flip), hang_up_(hang_up) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    REQUIRE(::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(listener_, 4) == 0);
    REQUIRE(::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~PathTap() {
    ::shutdown(listener_, SHUT_RDWR);  // ends accept()
    acceptor_.join();
    {
      std::lock_guard lock(mutex_);
      for (const int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& t : pumps_) t.join();
    for (const int fd : fds_) ::close(fd);
    ::close(listener_);
  }
  PathTap(const PathTap&) = delete;
  PathTap& operator=(const PathTap&) = delete;

  std::uint16_t port() const { return port_; }
  // What each side sent so far.
  std::vector<char> from_client() { return recorded(Direction::from_client); }
  std::vector<char> from_server() { return recorded(Direction::from_server); }
  bool flipped() {
    std::lock_guard lock(mutex_);
    return flipped_;
  }

 private:
  std::vector<char> recorded(Direction d) {
    std::lock_guard lock(mutex_);
    return seen_[static_cast<int>(d)];
  }

  void accept_loop() {
    for (;;) {
      const int client = ::accept(listener_, nullptr, nullptr);
      if (client < 0) return;
      const int server = connect_loopback(target_);
      if (server < 0) {
        ::close(client);
        continue;
      }
      std::lock_guard lock(mutex_);
      fds_.push_back(client);
      fds_.push_back(server);
      pumps_.emplace_back([this, client, server] { pump(client, server, Direction::from_client); });
      pumps_.emplace_back([this, client, server] { pump(server, client, Direction::from_server); });
    }
  }

  void pump(int from, int to, Direction direction) {
    std::vector<char> buffer(1 << 16);
    for (;;) {
      const ssize_t n = ::recv(from, buffer.data(), buffer.size(), 0);
      if (n <= 0) break;
      {
        std::lock_guard lock(mutex_);
        auto& seen = seen_[static_cast<int>(direction)];
        const std::size_t at = seen.size();
        seen.insert(seen.end(), buffer.begin(), buffer.begin() + n);
        if (flip_.direction == direction && flip_.at >= at && flip_.at < at + static_cast<std::size_t>(n)) {
          buffer[flip_.at - at] ^= 1;
          flipped_ = true;
        }
        if (direction == Direction::from_client && !hung_up_ && seen.size() > hang_up_.after) {
          ::shutdown(from, SHUT_WR);  // the client's end of the server-to-client direction
          hung_up_ = true;
        }
      }
      if (!send_all(to, buffer.data(), static_cast<std::size_t>(n))) break;
    }
    ::shutdown(to, SHUT_WR);
  }

  std::uint16_t target_;
  Flip flip_;
  HangUp hang_up_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::thread acceptor_;
  std::mutex mutex_;
  std::vector<int> fds_;
  std::vector<std::thread> pumps_;
  std::vector<char> seen_[2];
  bool flipped_ = false;
  bool hung_up_ = false;
};

}  // namespace taihu::testing
