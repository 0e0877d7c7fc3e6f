#pragma once
// TLS 1.3 on taihu's connections, keyed by the cluster secret: every
// data-plane connection that needs it (below), and control-plane connections
// (transport/gatekeeper.hpp, carried for CAF by transport/tls_relay.hpp).
//
// The taihu handshake (transport/wire.hpp) proves that both sides hold the
// cluster secret; TLS then protects every byte after it: a reader on the path
// between hosts sees only ciphertext, and a forged, altered, dropped or
// replayed record fails its AES-GCM tag, which ends the connection. There are
// no certificates: both sides derive the same pre-shared key from the secret
// and the handshake's two fresh nonces (tls_key), and offer it as a TLS 1.3
// external PSK (psk_dhe_ke: an ECDHE exchange on top of the PSK, so recorded
// traffic stays secret even if the cluster secret leaks later). A peer without
// the key cannot finish the TLS handshake: with no PSK and no certificate the
// server has nothing to authenticate with, and refuses.
//
// Settings (TlsContext): TLS 1.3 only (no renegotiation, no older
// versions), TLS_AES_128_GCM_SHA256 only, no session tickets or resumption
// (every connection gets its own key anyway), no early data.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "transport/crypto.hpp"

namespace asio::ssl {
class context;
}
struct ssl_st;  // OpenSSL's SSL

namespace taihu::transport {

// Which data-plane connections run TLS (DataPlaneOptions::tls, [cluster] tls).
// Every node of a cluster must use the same mode; a connection between nodes
// whose modes differ is refused in the handshake, naming both.
enum class TlsMode : std::uint32_t {
  // Every connection that has no same-host channel. A peer with a channel runs
  // as the same user on this host (its probe proved it reads this process's
  // memory), so TLS would hide nothing from it, and the channel carries only
  // descriptors of memory the receiver reads directly.
  between_hosts = 1,
  // Every connection, also on one host: no same-host channel and no reads of
  // the peer's memory (they would bypass TLS), every byte goes through it.
  always = 2,
  // None: frames travel in plaintext (benchmarks on a trusted network); the
  // data plane logs a warning.
  off = 3,
};

// The OpenSSL library in use ("OpenSSL 3.0.15 3 Sep 2024").
std::string tls_library_version();

// "between_hosts", "always", "off".
std::string_view tls_mode_name(TlsMode mode);
// The mode a name stands for; nullopt for any other text (or a number off the wire).
std::optional<TlsMode> parse_tls_mode(std::string_view name);
std::optional<TlsMode> tls_mode_of(std::uint32_t value);

// One connection's pre-shared key: HKDF-SHA-256 with the cluster secret as
// input key material, the client's then the server's handshake nonce as salt,
// and the plane's label as info. Fresh nonces give every connection its own
// key; the labels keep the planes' keys apart even for equal nonces, and are
// versioned, so that a later derivation can never yield the same key for the
// same inputs.
using TlsKey = std::array<std::uint8_t, 32>;
enum class Plane { data, control };
inline constexpr std::string_view data_plane_psk_label = "taihu data plane TLS 1.3 PSK, v1";
inline constexpr std::string_view control_plane_psk_label = "taihu control plane TLS 1.3 PSK, v1";
// Both planes offer their key under one identity (named when only the data
// plane had TLS); the keys differ by their labels.
inline constexpr std::string_view tls_psk_identity = "taihu-dp";
TlsKey tls_key(Plane plane, std::string_view secret, Bytes client_nonce, Bytes server_nonce);

// Certificates in place of the pre-shared key ([cluster] certificate, key,
// ca_file on the coordinator; taihu-node --certificate, --key, --ca-file):
// each side presents its certificate and verifies the other's against
// ca_file (mutual verification, TLS 1.3 with an ECDHE exchange). Any
// certificate that chains to ca_file is accepted, whatever name it carries:
// the cluster's CA should issue certificates to cluster nodes only. The secret
// is still proven first, in every mode; certificates add an identity that
// does not depend on one shared secret (revocable per node by the CA).
struct TlsCertificates {
  std::string certificate;  // PEM: this process's certificate, then any intermediates
  std::string key;          // PEM: its private key, a file readable by its owner only
  std::string ca_file;      // PEM: the CA certificates that peers' certificates must chain to
  bool given() const { return !certificate.empty() || !key.empty() || !ca_file.empty(); }
};

// Throws Error naming what is wrong: one of the three missing while another
// is given, a file that cannot be read, a key file others may read (chmod
// 600), a certificate or key OpenSSL cannot parse, a key that does not match
// the certificate. `names` are what the three are called where the user
// gave them (config keys or command-line flags), for the message.
void check_certificates(const TlsCertificates& certificates, const std::array<std::string_view, 3>& names);

// OpenSSL's text for a certificate verification error (X509_V_ERR_*):
// "certificate has expired", "unable to get local issuer certificate".
std::string certificate_error_text(long error);

// This side's verdict on the peer's certificate on a connection of a context
// with certificates: 0 (X509_V_OK) when the peer presented one that verified
// against the CA file, else the first verification error found (what
// certificate_error_text names). On a client whose handshake failed, why it
// rejected the server's certificate (0 when that was not the cause).
long certificate_verdict(ssl_st* ssl);

// The OpenSSL context of one side of TLS (the settings above and the PSK
// callbacks); a data plane has one per side, shared by its connections, as
// has the gatekeeper. The callbacks find each connection's key where bind() left it.
class TlsContext {
 public:
  enum class Role { client, server };
  // When a peer's certificate that does not verify ends the connection:
  // in_handshake (the handshake fails), or after_handshake, for a server that
  // tells the peer why (the gatekeeper): the handshake completes whatever the
  // certificate, and the caller must check certificate_verdict() before it
  // trusts the connection. (In TLS 1.3 the client's handshake ends before the
  // server has verified the client's certificate, so a client that the server
  // rejects in the handshake sees only a connection that closes.)
  enum class Verification { in_handshake, after_handshake };
  // With certificates given: they authenticate both sides, and no PSK is
  // offered or accepted. Throws Error when OpenSSL refuses a setting or a file.
  explicit TlsContext(Role role, const TlsCertificates& certificates = {},
                      Verification verification = Verification::in_handshake);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  Role role() const { return role_; }
  bool with_certificates() const { return with_certificates_; }
  asio::ssl::context& context() const { return *context_; }
  // Makes `key` the PSK of the connection `ssl` (made from context()); `key`
  // must outlive it. With certificates, the key is not used.
  void bind(ssl_st* ssl, const TlsKey& key) const;

 private:
  Role role_;
  bool with_certificates_ = false;
  std::unique_ptr<asio::ssl::context> context_;
};

}  // namespace taihu::transport
