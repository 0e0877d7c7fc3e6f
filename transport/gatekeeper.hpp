#pragma once
// Admission to the control plane: no byte from a peer reaches CAF's
// middleman before the peer has proven that it holds the cluster secret.
//
// CAF 0.17's BASP reads a 32-byte header and then allocates whatever payload
// it announces, before any authentication: one stranger's header announcing
// 4 GB took a coordinator to 3 GB, and three killed training runs. Its
// acceptor also has no handshake timeout and no cap. So the coordinator's
// control port is this gatekeeper's, not CAF's: it accepts (at most
// max_pending connections in the handshake at once, each for at most
// handshake_timeout; listener.hpp), runs a mutual challenge-response over
// fixed-size messages, and only then hands the socket to CAF, which speaks
// BASP on it as on any connection (actors/compute/control_plane_actor.cpp).
// A node connects through admit_through_gate() and hands its socket to CAF
// the same way, so it also knows it reached a coordinator that holds the
// secret (a fake one cannot hand it a config).
//
// Handshake (every message is one GateMessage; integers little-endian):
//   client -> hello     {version, name, client nonce}
//   server -> challenge {version, server nonce}, or refuse {reason} and close
//   client -> proof     HMAC(secret, "taihu-cp client" | version | name | client nonce | server nonce)
//   server -> welcome   HMAC(secret, "taihu-cp server" | version | name | server nonce | client nonce),
//             or refuse {reason} and close
// The client checks the welcome in turn. Fresh nonces on both sides make a
// recorded handshake useless; the roles in the MACs stop reflection.
//
// Plain C++ (Asio, one I/O thread); no CAF.

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>

#include "transport/data_plane.hpp"

namespace taihu::transport {

inline constexpr std::array<char, 8> gate_magic{'T', 'A', 'I', 'H', 'U', '-', 'C', 'P'};

enum class GateKind : std::uint32_t { hello = 0, challenge = 1, proof = 2, welcome = 3, refuse = 4 };

struct GateMessage {
  std::array<char, 8> magic = gate_magic;
  std::uint32_t version = 0;  // the cluster protocol version
  std::uint32_t kind = 0;     // GateKind
  std::uint32_t reason = 0;   // RefuseReason (wire.hpp) of a refuse
  std::uint32_t reserved = 0;
  std::array<char, 64> name{};  // the client's name (hello), NUL-padded
  std::array<std::uint8_t, 32> nonce{};
  std::array<std::uint8_t, 32> proof{};
};
static_assert(std::is_trivially_copyable_v<GateMessage> && sizeof(GateMessage) == 152);

struct GatekeeperOptions {
  std::string what = "control port";  // for logs
  std::string secret;
  std::string listen_address = "127.0.0.1";
  std::uint16_t port = 0;  // 0: any free port
  std::uint32_t version = 0;
  std::chrono::milliseconds handshake_timeout{5000};
  std::size_t max_pending = 32;  // connections in the handshake at once
};

struct GatekeeperStats {
  std::uint64_t admitted = 0;
  std::uint64_t refused_version = 0;
  std::uint64_t refused_secret = 0;
  std::uint64_t refused_garbage = 0;  // not a taihu node, or timed out
  std::uint64_t over_limit = 0;       // closed at once: max_pending were in the handshake
};

// An authenticated peer: its socket (now the receiver's to close) and who it is.
struct Admitted {
  int fd = -1;
  std::string name;
  std::string peer;  // address:port
};

class Gatekeeper {
 public:
  // Listens at once (throws NetError naming the address); `admit` is called
  // on the gatekeeper's thread for every authenticated connection.
  Gatekeeper(GatekeeperOptions options, std::function<void(Admitted)> admit);
  ~Gatekeeper();
  Gatekeeper(const Gatekeeper&) = delete;
  Gatekeeper& operator=(const Gatekeeper&) = delete;

  std::uint16_t port() const;
  GatekeeperStats stats() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// The gatekeeper refused this client (wrong secret, another version): trying
// again will not help.
class GateRefused : public NetError {
 public:
  using NetError::NetError;
};

struct GateClientOptions {
  std::string host;
  std::uint16_t port = 0;
  std::string secret;
  std::uint32_t version = 0;
  std::string name;  // up to 63 bytes are sent
  std::chrono::milliseconds timeout{5000};
};

// Connects and runs the client side of the handshake. Returns the
// authenticated socket (the caller's to close). Throws GateRefused when
// refused, NetError when the server cannot be reached, does not answer in
// time, or does not prove the secret.
int admit_through_gate(const GateClientOptions& options);

}  // namespace taihu::transport
