#pragma once
// The addresses a process listens on and tells its peers: which are
// wildcards (listen on every interface, reach nothing), and what a named
// network interface's address is.

#include <string>
#include <string_view>

namespace taihu::transport {

// 0.0.0.0, ::, or empty: fine to listen on, useless to connect to.
bool is_wildcard_address(std::string_view address);

// The IPv4 address of a network interface ("ib0", "eth0"), else its IPv6
// one. Throws ConfigError naming the interface and the ones there are when it
// does not exist or has no address.
std::string interface_address(std::string_view interface_name);

}  // namespace taihu::transport
