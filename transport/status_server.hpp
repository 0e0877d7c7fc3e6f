#pragma once
// A minimal HTTP/1.1 server on Asio for read-only status pages (one I/O
// thread, one request per connection, GET only). taihu-train serves
// /metrics (Prometheus text format) and /status (JSON) with it; the pages are
// rendered by callbacks at request time. At most 32 connections are kept,
// each for at most 5 s (transport/listener.hpp), so idle or slow clients
// cannot take the process's descriptors.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace taihu::transport {

struct StatusPage {
  std::string content_type;
  std::function<std::string()> render;  // called on the server's thread
};

class StatusServer {
 public:
  // Listens on address:port (port 0: any free port). Throws NetError.
  StatusServer(const std::string& address, std::uint16_t port, std::map<std::string, StatusPage> pages);
  ~StatusServer();
  StatusServer(const StatusServer&) = delete;
  StatusServer& operator=(const StatusServer&) = delete;

  std::uint16_t port() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace taihu::transport
