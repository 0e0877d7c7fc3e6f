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
//   client -> hello     {version, name, client nonce, detail: bit 0 if the
//                        client sees the server on its own host, bit 1 if it
//                        has certificates, bits 2-3 its own [cluster] tls (a
//                        cluster launcher's rank; 0: it takes the server's)}
//   server -> challenge {version, server nonce}, or refuse {reason} and close
//   client -> proof     HMAC(secret, "taihu-cp client" | version | name | hello's detail | client nonce | server nonce)
//   server -> welcome   {detail: bit 0 if TLS follows, bit 1 if the cluster
//                        uses certificates (in TLS, and on the data plane)}
//                       HMAC(secret, "taihu-cp server" | version | name | welcome's detail | server nonce | client nonce),
//             or refuse {reason} and close (also when the cluster uses
//             certificates and the client has none, and when the client
//             names a TLS mode other than the server's: the refusal's detail
//             is then the server's mode)
// The client checks the welcome in turn. Fresh nonces on both sides make a
// recorded handshake useless; the roles in the MACs stop reflection; the
// details are in the MACs, so nobody on the path can talk either side out
// of TLS.
//
// Then, if the welcome says so, TLS 1.3 keyed by the secret and both nonces
// (tls_key(Plane::control, ...), transport/tls.hpp) or, in a cluster that
// uses certificates, authenticated by both sides' certificates; CAF gets the
// plaintext end of a relay (transport/tls_relay.hpp) instead of the socket.
// With certificates the server's verdict on the client's certificate comes
// first, through TLS:
//   server -> verdict   welcome, or refuse {reason certificate, detail: OpenSSL's
//                       verification error (X509_V_ERR_*)} and close
// because in TLS 1.3 the client's handshake ends before the server has
// verified the client's certificate: without it a node whose certificate the
// coordinator rejects would see only a closed connection, and try again until
// its join_timeout. With the verdict it stops at once, naming the reason
// (its certificate has expired, another CA signed it, ...).
// The coordinator decides, by its [cluster] tls: `always`, `off`, or
// `between_hosts`: TLS unless both sides see the other on their own host
// (a loopback connection, or one whose two ends have the same address).

// Plain C++ (Asio, one I/O thread); no CAF.

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "transport/net_error.hpp"
#include "transport/tls.hpp"
#include "transport/wire.hpp"

namespace taihu::transport {

class IoThread;  // transport/tls_relay.hpp
IoThread& control_plane_thread();

inline constexpr std::array<char, 8> gate_magic{'T', 'A', 'I', 'H', 'U', '-', 'C', 'P'};

enum class GateKind : std::uint32_t { hello = 0, challenge = 1, proof = 2, welcome = 3, refuse = 4 };

// The bits of a hello's and a welcome's detail.
struct GateDetail {
  static constexpr std::uint32_t same_host = 1;     // hello: the client sees the server on its own host
  static constexpr std::uint32_t certificates = 2;  // hello: the client has certificates; welcome: the cluster uses them
  static constexpr std::uint32_t tls = 1;           // welcome: TLS follows
  // hello: the client's own TlsMode in bits 2-3 (0: none, it takes the server's).
  static constexpr std::uint32_t tls_mode_shift = 2;
  static constexpr std::uint32_t tls_mode_mask = 3u << tls_mode_shift;
};

struct GateMessage {
  std::array<char, 8> magic = gate_magic;
  std::uint32_t version = 0;  // the cluster protocol version
  std::uint32_t kind = 0;     // GateKind
  std::uint32_t reason = 0;   // RefuseReason (wire.hpp) of a refuse
  std::uint32_t detail = 0;   // GateDetail bits (above)
  std::array<char, 64> name{};  // the client's name (hello), NUL-padded
  std::array<std::uint8_t, 32> nonce{};
  std::array<std::uint8_t, 32> proof{};
};
static_assert(std::is_trivially_copyable_v<GateMessage> && sizeof(GateMessage) == 152);

// One side's proof (above): the role ("taihu-cp client" or "taihu-cp
// server"), the version, the client's name, what the sender's message says
// (its detail) and both nonces (the sender's first), so a proof is good for
// this handshake, this side and this message only.
using GateProof = std::array<std::uint8_t, 32>;
GateProof gate_proof(std::string_view secret, std::string_view role, const GateMessage& hello, std::uint32_t detail,
                     const GateProof& first, const GateProof& second);

struct GatekeeperOptions {
  std::string what = "control port";  // for logs
  std::string secret;
  std::string listen_address = "127.0.0.1";
  std::uint16_t port = 0;  // 0: any free port
  std::uint32_t version = 0;
  std::chrono::milliseconds handshake_timeout{5000};
  std::size_t max_pending = 32;  // connections in the handshake at once
  TlsMode tls = TlsMode::between_hosts;  // which admitted connections run TLS (above)
  TlsCertificates certificates;           // given: the cluster uses certificates (above)
};

struct GatekeeperStats {
  std::uint64_t admitted = 0;
  std::uint64_t refused_version = 0;
  std::uint64_t refused_secret = 0;
  std::uint64_t refused_garbage = 0;  // not a taihu node, or timed out
  std::uint64_t over_limit = 0;       // closed at once: max_pending were in the handshake
  std::uint64_t refused_tls = 0;      // proved the secret, then failed the TLS handshake or had no certificates
                                      // (or one this side rejected)
  std::uint64_t tls = 0;              // admitted connections that run TLS
  std::uint64_t refused_tls_mode = 0;  // proved the secret, but named another TLS mode than this side's
};

// An authenticated peer: the socket to speak to it on (now the receiver's to
// close: the TCP socket, or with TLS the plaintext end of its relay) and who it is.
struct Admitted {
  int fd = -1;
  std::string name;
  std::string peer;  // address:port
  bool tls = false;
};

class Gatekeeper {
 public:
  // Listens at once (throws NetError naming the address); `admit` is called
  // on `thread` for every authenticated connection. Handshakes and TLS relays
  // run there; relays go on after the Gatekeeper is gone, until their
  // connections close (the last messages of a run still reach the nodes).
  Gatekeeper(GatekeeperOptions options, std::function<void(Admitted)> admit,
             IoThread& thread = control_plane_thread());
  ~Gatekeeper();  // stops listening and closes the handshakes under way
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
  TlsCertificates certificates;  // this node's, for a cluster that uses them
  // This node's own TLS mode, which the server's must equal (a cluster
  // launcher's rank, which has a config of its own); none: the server's.
  std::optional<TlsMode> tls;
};

// A client's end of an admitted connection: the socket to speak on (the
// caller's to close) and whether TLS protects it.
struct GateConnection {
  int fd = -1;
  bool tls = false;
  bool certificates = false;  // the cluster uses certificates (also for the data plane)
  // This end's address on the connection: one the coordinator reached, so
  // one its other nodes can likely reach too (a node listening on a wildcard
  // address advertises it).
  std::string local_address;
};

// Connects and runs the client side of the handshake, then TLS where the
// server says so, whose relay runs on `relay` (which must outlive the
// connection). Throws GateRefused when refused (also by TLS: a certificate
// either side rejects, an alert), NetError when the server cannot be
// reached, does not answer in time, does not prove the secret, or closes the
// connection (trying again may help).
GateConnection admit_through_gate(const GateClientOptions& options, IoThread& relay);

}  // namespace taihu::transport
