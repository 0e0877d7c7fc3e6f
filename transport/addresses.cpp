#include "transport/addresses.hpp"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>
#include <vector>

#include "core/common/check.hpp"
#include "core/common/error.hpp"

namespace taihu::transport {

bool is_wildcard_address(std::string_view address) {
  return address.empty() || address == "0.0.0.0" || address == "::" || address == "[::]" || address == "*";
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::string reachable_address(std::string_view listen) {
  return is_wildcard_address(listen) ? host_name() : std::string(listen);
}

std::string interface_address(std::string_view interface_name) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) raise<ConfigError>("cannot list this host's network interfaces");
  std::string v4, v6;
  std::set<std::string> names;
  for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr) continue;
    names.insert(a->ifa_name);
    if (interface_name != a->ifa_name) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET && v4.empty()) {
      ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
      v4 = text;
    } else if (a->ifa_addr->sa_family == AF_INET6 && v6.empty()) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(a->ifa_addr)->sin6_addr, text, sizeof text);
      v6 = text;
    }
  }
  ::freeifaddrs(list);
  if (!v4.empty()) return v4;
  if (!v6.empty()) return v6;
  raise<ConfigError>("network interface '{}' {} (interfaces here: {})", interface_name,
                     names.count(std::string(interface_name)) ? "has no IP address" : "does not exist",
                     fmt::join(names, ", "));
}

namespace {

// This host's IPv4 addresses, each as "address (interface)", for a hint.
std::vector<std::string> ipv4_addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
    out.push_back(fmt::format("{} ({})", text, a->ifa_name));
  }
  ::freeifaddrs(list);
  return out;
}

}  // namespace

// By errno value: Asio's error codes carry it in a category of their own,
// which std::errc conditions do not match.
std::string listen_failure_hint(const std::error_code& error, std::string_view address) {
  if (error.value() == EADDRINUSE)
    return "another process on this host holds that port: stop it, or choose another port (0 picks a free one)";
  if (error.value() == EADDRNOTAVAIL)
    return fmt::format("no network interface of host '{}' has the address {}; its addresses: {} (0.0.0.0 listens on all)",
                       host_name(), address, fmt::join(ipv4_addresses(), ", "));
  if (error.value() == EACCES)
    return "ports below 1024 need privileges: choose a port from 1024 up (0 picks a free one)";
  return {};
}

}  // namespace taihu::transport
