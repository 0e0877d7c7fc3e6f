#include "transport/tls.hpp"

#include <asio/ssl/context.hpp>
#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <string>

#include "core/common/error.hpp"
#include "transport/cluster_secret.hpp"

namespace taihu::transport {
namespace {

[[noreturn]] void fail(const char* what) {
  const unsigned long code = ERR_get_error();
  char text[256] = "no error queued";
  if (code != 0) ERR_error_string_n(code, text, sizeof text);
  throw Error(std::string("TLS: OpenSSL: ") + what + ": " + text);
}

// Where a connection's SSL keeps a pointer to its key (asio keeps its own
// data in the SSL's app data, so the key gets an index of its own).
int key_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  if (index < 0) fail("SSL_get_ex_new_index");
  return index;
}

const TlsKey* key_of(SSL* ssl) { return static_cast<const TlsKey*>(SSL_get_ex_data(ssl, key_index())); }

// Where a connection verified after its handshake keeps the first error its
// peer's certificate had (an X509_V_ERR_* code as the pointer's value: no
// allocation). OpenSSL's verify result holds the last one, which for a
// certificate of another CA is the less telling "unable to verify the first
// certificate" after "unable to get local issuer certificate".
int first_error_index() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  if (index < 0) fail("SSL_get_ex_new_index");
  return index;
}

// TlsContext::Verification::after_handshake: notes the first error and lets
// the handshake go on (certificate_verdict reports it).
int note_verification_error(int ok, X509_STORE_CTX* store) {
  if (ok == 1) return 1;
  auto* ssl = static_cast<SSL*>(X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()));
  const long error = X509_STORE_CTX_get_error(store);
  if (ssl != nullptr && SSL_get_ex_data(ssl, first_error_index()) == nullptr && error != X509_V_OK)
    SSL_set_ex_data(ssl, first_error_index(), reinterpret_cast<void*>(static_cast<std::intptr_t>(error)));
  return 1;
}

// An external PSK as OpenSSL takes it: a session that holds the key, its
// cipher suite (whose hash the key schedule uses) and TLS 1.3. Null when
// OpenSSL cannot make one (the handshake then fails).
SSL_SESSION* psk_session(SSL* ssl, const TlsKey& key) {
  static constexpr unsigned char aes_128_gcm_sha256[] = {0x13, 0x01};
  const SSL_CIPHER* cipher = SSL_CIPHER_find(ssl, aes_128_gcm_sha256);
  SSL_SESSION* session = SSL_SESSION_new();
  if (cipher == nullptr || session == nullptr || SSL_SESSION_set1_master_key(session, key.data(), key.size()) != 1 ||
      SSL_SESSION_set_cipher(session, cipher) != 1 || SSL_SESSION_set_protocol_version(session, TLS1_3_VERSION) != 1) {
    SSL_SESSION_free(session);
    return nullptr;
  }
  return session;
}

// Client: offers the connection's key under taihu's identity. OpenSSL owns
// the session it is handed. Returning 0 (no key bound) fails the handshake.
int use_psk(SSL* ssl, const EVP_MD* md, const unsigned char** id, std::size_t* id_length, SSL_SESSION** session) {
  *session = nullptr;
  *id = nullptr;
  *id_length = 0;
  const TlsKey* key = key_of(ssl);
  if (key == nullptr) return 0;
  SSL_SESSION* s = psk_session(ssl, *key);
  if (s == nullptr) return 0;
  // Called again after a HelloRetryRequest with the suite's hash: the one
  // suite allowed always matches, but a key for another hash must not be offered.
  if (md != nullptr && SSL_CIPHER_get_handshake_digest(SSL_SESSION_get0_cipher(s)) != md) {
    SSL_SESSION_free(s);
    return 1;
  }
  *session = s;
  *id = reinterpret_cast<const unsigned char*>(tls_psk_identity.data());
  *id_length = tls_psk_identity.size();
  return 1;
}

// Server: the connection's key for taihu's identity; for any other identity
// no key, so that (without a certificate) the handshake fails.
int find_psk(SSL* ssl, const unsigned char* identity, std::size_t identity_length, SSL_SESSION** session) {
  *session = nullptr;
  const TlsKey* key = key_of(ssl);
  if (key == nullptr) return 0;
  if (std::string_view(reinterpret_cast<const char*>(identity), identity_length) != tls_psk_identity) return 1;
  *session = psk_session(ssl, *key);
  return *session != nullptr ? 1 : 0;
}

}  // namespace

std::string tls_library_version() { return OpenSSL_version(OPENSSL_VERSION); }

std::string_view tls_mode_name(TlsMode mode) {
  switch (mode) {
    case TlsMode::between_hosts: return "between_hosts";
    case TlsMode::always: return "always";
    case TlsMode::off: return "off";
  }
  return "unknown";
}

std::optional<TlsMode> parse_tls_mode(std::string_view name) {
  for (const TlsMode mode : {TlsMode::between_hosts, TlsMode::always, TlsMode::off})
    if (name == tls_mode_name(mode)) return mode;
  return std::nullopt;
}

std::optional<TlsMode> tls_mode_of(std::uint32_t value) {
  for (const TlsMode mode : {TlsMode::between_hosts, TlsMode::always, TlsMode::off})
    if (value == static_cast<std::uint32_t>(mode)) return mode;
  return std::nullopt;
}

TlsKey tls_key(Plane plane, std::string_view secret, Bytes client_nonce, Bytes server_nonce) {
  std::array<std::uint8_t, 64> salt{};
  if (client_nonce.size() + server_nonce.size() > salt.size()) throw Error("tls_key: nonces longer than 32 bytes");
  std::copy(client_nonce.begin(), client_nonce.end(), salt.begin());
  std::copy(server_nonce.begin(), server_nonce.end(), salt.begin() + static_cast<std::ptrdiff_t>(client_nonce.size()));
  TlsKey key{};
  const Bytes nonces(salt.data(), client_nonce.size() + server_nonce.size());
  hkdf_sha256(bytes_of(secret), nonces,
              {bytes_of(plane == Plane::data ? data_plane_psk_label : control_plane_psk_label)}, key);
  return key;
}

namespace {

// OpenSSL's reason for the last failure, or `fallback`.
std::string openssl_reason(const char* fallback) {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return fallback;
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

// Loads the certificates into `ctx` and asks for the peer's, verified
// against the CA file (TlsContext::Verification says when a failure counts).
void use_certificates(SSL_CTX* ctx, const TlsCertificates& c, TlsContext::Verification verification) {
  // The key first: a certificate loaded after it that does not match drops
  // it, which SSL_CTX_check_private_key then reports as such.
  if (SSL_CTX_use_PrivateKey_file(ctx, c.key.c_str(), SSL_FILETYPE_PEM) != 1)
    throw Error("TLS: cannot use the private key '" + c.key + "': " + openssl_reason("unreadable"));
  if (SSL_CTX_use_certificate_chain_file(ctx, c.certificate.c_str()) != 1)
    throw Error("TLS: cannot use the certificate '" + c.certificate + "': " + openssl_reason("unreadable"));
  if (SSL_CTX_check_private_key(ctx) != 1) {
    ERR_clear_error();
    throw Error("TLS: the private key '" + c.key + "' does not belong to the certificate '" + c.certificate + "'");
  }
  if (SSL_CTX_load_verify_locations(ctx, c.ca_file.c_str(), nullptr) != 1)
    throw Error("TLS: cannot use the CA file '" + c.ca_file + "': " + openssl_reason("unreadable"));
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                     verification == TlsContext::Verification::after_handshake ? note_verification_error : nullptr);
}

}  // namespace

std::string certificate_error_text(long error) { return X509_verify_cert_error_string(error); }

long certificate_verdict(ssl_st* ssl) {
  if (const void* first = SSL_get_ex_data(ssl, first_error_index()); first != nullptr)
    return static_cast<long>(reinterpret_cast<std::intptr_t>(first));
  if (const long result = SSL_get_verify_result(ssl); result != X509_V_OK) return result;
  // No certificate at all (SSL_VERIFY_FAIL_IF_NO_PEER_CERT should have ended the handshake).
  if (SSL_is_server(ssl) == 1 && SSL_get0_peer_certificate(ssl) == nullptr) return X509_V_ERR_UNSPECIFIED;
  return X509_V_OK;
}

void check_certificates(const TlsCertificates& c, const std::array<std::string_view, 3>& names) {
  if (!c.given()) return;
  const std::array<const std::string*, 3> files{&c.certificate, &c.key, &c.ca_file};
  for (std::size_t i = 0; i < files.size(); ++i)
    if (files[i]->empty())
      throw Error(fmt::format("{} is missing: certificates need all three of {}, {} and {}", names[i], names[0],
                              names[1], names[2]));
  try {
    check_private_file(c.key, "TLS private key file");
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", names[1], e.what()));
  }
  // Loading them into a context checks that OpenSSL takes them and that the key fits.
  TlsContext client(TlsContext::Role::client, c);
}

TlsContext::TlsContext(Role role, const TlsCertificates& certificates, Verification verification)
    : role_(role),
      with_certificates_(certificates.given()),
      context_(std::make_unique<asio::ssl::context>(role == Role::client ? asio::ssl::context::tlsv13_client
                                                                         : asio::ssl::context::tlsv13_server)) {
  SSL_CTX* ctx = context_->native_handle();
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
      SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1)
    fail("TLS 1.3 only");
  if (SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256") != 1) fail("SSL_CTX_set_ciphersuites");
  // Every connection has its own key: nothing to resume, no tickets to send
  // (they would also be writes the data plane did not ask for).
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  if (SSL_CTX_set_num_tickets(ctx, 0) != 1) fail("SSL_CTX_set_num_tickets");
  if (SSL_CTX_set_max_early_data(ctx, 0) != 1) fail("SSL_CTX_set_max_early_data");
  if (with_certificates_) {
    use_certificates(ctx, certificates, verification);
    return;
  }
  // No certificates: the PSK authenticates both sides.
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  if (role == Role::server) SSL_CTX_set_psk_find_session_callback(ctx, find_psk);
}

TlsContext::~TlsContext() = default;

void TlsContext::bind(ssl_st* ssl, const TlsKey& key) const {
  if (with_certificates_) return;
  if (SSL_set_ex_data(ssl, key_index(), const_cast<TlsKey*>(&key)) != 1) fail("SSL_set_ex_data");
  if (role_ == Role::client) SSL_set_psk_use_session_callback(ssl, use_psk);
}

}  // namespace taihu::transport
