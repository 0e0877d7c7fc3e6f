#pragma once
// The addresses a process listens on and tells its peers: which are
// wildcards (listen on every interface, reach nothing), and what a named
// network interface's address is.

#include <string>
#include <string_view>
#include <system_error>

namespace taihu::transport {

// 0.0.0.0, ::, or empty: fine to listen on, useless to connect to.
bool is_wildcard_address(std::string_view address);

// This host's name (gethostname), "localhost" when it has none.
std::string host_name();

// How another host reaches a process listening on `listen`: that address,
// or for a wildcard this host's name (what to show in a hint to the user).
std::string reachable_address(std::string_view listen);

// The IPv4 address of a network interface ("ib0", "eth0"), else its IPv6
// one. Throws ConfigError naming the interface and the ones there are when it
// does not exist or has no address.
std::string interface_address(std::string_view interface_name);

// What to do when listening on `address` failed with `error` (bind or
// listen): a port another process holds, an address no interface of this
// host has, a privileged port; empty for other errors.
std::string listen_failure_hint(const std::error_code& error, std::string_view address);

}  // namespace taihu::transport
