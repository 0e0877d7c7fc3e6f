// The status port's HTTP request parser: any bytes get an HTTP answer or a
// closed connection, never a crash or a connection left open.
#include <spdlog/spdlog.h>

#include <map>

#include "fuzz_socket.hpp"
#include "fuzz_support.hpp"
#include "transport/status_server.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace taihu;
  static transport::StatusServer* server = [] {
    spdlog::set_level(spdlog::level::off);
    std::map<std::string, transport::StatusPage> pages;
    pages["/metrics"] = {"text/plain", [] { return std::string("taihu_iteration 1\n"); }};
    pages["/status"] = {"application/json", [] { return std::string("{}"); }};
    return new transport::StatusServer("127.0.0.1", 0, std::move(pages));
  }();
  if (!taihu::fuzz::exchange(server->port(), {}, taihu::fuzz::text_of(data, size))) std::abort();
  return 0;
}
