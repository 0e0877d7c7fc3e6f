#pragma once
// What the two sides of the control port's handshake (gatekeeper.hpp) share:
// transport/gatekeeper.cpp is the coordinator's, transport/gate_client.cpp
// the node's. Internal to transport/.

#include <asio/ip/tcp.hpp>

#include <cstdint>

#include "transport/gatekeeper.hpp"

namespace taihu::transport::gate_handshake {

// Whether the peer of a connected socket runs on this host: it came over
// loopback, or to one of this host's own addresses (the kernel then routes
// the connection locally, and both ends carry that address).
inline bool peer_on_this_host(const asio::ip::tcp::socket& socket) {
  asio::error_code ec1, ec2;
  const auto remote = socket.remote_endpoint(ec1).address();
  const auto local = socket.local_endpoint(ec2).address();
  if (ec1 || ec2) return false;
  return remote.is_loopback() || remote == local;
}

// A message of `kind`, its other fields empty.
inline GateMessage gate_message(std::uint32_t version, GateKind kind) {
  GateMessage m;
  m.version = version;
  m.kind = static_cast<std::uint32_t>(kind);
  return m;
}

}  // namespace taihu::transport::gate_handshake
