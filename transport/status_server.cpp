#include "transport/status_server.hpp"

#include <asio.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <thread>

#include "transport/data_plane.hpp"
#include "transport/listener.hpp"
#include "core/common/check.hpp"

namespace taihu::transport {
namespace {

using asio::ip::tcp;

struct Connection {
  explicit Connection(tcp::socket s) : socket(std::move(s)), timer(socket.get_executor()) {}
  tcp::socket socket;
  asio::steady_timer timer;
  Listener::Ticket ticket;  // a place among the connections the server keeps open
  asio::streambuf request{8192};  // a request line and headers, nothing more
  std::string response;
};

std::string reply(int code, const char* reason, const std::string& type, const std::string& body) {
  return fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}", code,
                     reason, type, body.size(), body);
}

}  // namespace

struct StatusServer::Impl : std::enable_shared_from_this<StatusServer::Impl> {
  asio::io_context io;
  std::shared_ptr<Listener> listener;
  std::map<std::string, StatusPage> pages;
  std::thread thread;

  void serve(const std::shared_ptr<Connection>& c) {
    c->timer.expires_after(std::chrono::seconds(5));
    c->timer.async_wait([c](const asio::error_code& ec) {
      if (!ec) {
        asio::error_code ignored;
        c->socket.close(ignored);
        c->ticket.reset();
      }
    });
    asio::async_read_until(c->socket, c->request, "\r\n\r\n", [this, c](const asio::error_code& ec, std::size_t) {
      if (ec) {
        // Too long, or closed: answer what we can, then close.
        if (ec == asio::error::not_found) return respond(c, reply(431, "Request Header Fields Too Large", "text/plain", "too large\n"));
        return finish(c);  // closed before a whole request: its slot is free at once, not after the timeout
      }
      std::istream in(&c->request);
      std::string method, target, version;
      in >> method >> target >> version;
      if (version.rfind("HTTP/", 0) != 0) return respond(c, reply(400, "Bad Request", "text/plain", "bad request\n"));
      if (method != "GET") return respond(c, reply(405, "Method Not Allowed", "text/plain", "GET only\n"));
      const auto query = target.find('?');
      if (query != std::string::npos) target.resize(query);
      auto it = pages.find(target);
      if (it == pages.end()) {
        std::string list;
        for (const auto& [path, page] : pages) list += path + "\n";
        return respond(c, reply(404, "Not Found", "text/plain", "not found; pages:\n" + list));
      }
      std::string body;
      try {
        body = it->second.render();
      } catch (const std::exception& e) {
        return respond(c, reply(500, "Internal Server Error", "text/plain", std::string(e.what()) + "\n"));
      }
      respond(c, reply(200, "OK", it->second.content_type, body));
    });
  }

  void respond(const std::shared_ptr<Connection>& c, std::string response) {
    c->response = std::move(response);
    asio::async_write(c->socket, asio::buffer(c->response),
                      [c](const asio::error_code&, std::size_t) { finish(c); });
  }

  static void finish(const std::shared_ptr<Connection>& c) {
    asio::error_code ignored;
    c->timer.cancel();
    c->socket.shutdown(tcp::socket::shutdown_both, ignored);
    c->socket.close(ignored);
    c->ticket.reset();
  }
};

StatusServer::StatusServer(const std::string& address, std::uint16_t port, std::map<std::string, StatusPage> pages)
    : impl_(std::make_shared<Impl>()) {
  impl_->pages = std::move(pages);
  ListenerOptions options;
  options.what = "status endpoint";
  options.address = address;
  options.port = port;
  options.max_open = 32;  // a scraper needs one; a flood must not take the process's descriptors
  options.backoff = std::chrono::milliseconds(100);
  impl_->listener = std::make_shared<Listener>(impl_->io, options, [impl = impl_.get()](tcp::socket s, Listener::Ticket t) {
    auto c = std::make_shared<Connection>(std::move(s));
    c->ticket = std::move(t);
    c->ticket->evict = [weak = std::weak_ptr<Connection>(c)] {
      if (auto conn = weak.lock()) {
        asio::error_code ignored;
        conn->socket.close(ignored);
      }
    };
    impl->serve(c);
  });
  impl_->listener->start();
  impl_->thread = std::thread([impl = impl_] { impl->io.run(); });
}

StatusServer::~StatusServer() {
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::uint16_t StatusServer::port() const { return impl_->listener->port(); }

}  // namespace taihu::transport
