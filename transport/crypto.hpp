#pragma once
// The few cryptographic operations the handshakes need, from OpenSSL
// (libcrypto): HMAC-SHA-256 proofs, HKDF-SHA-256 key derivation (the data
// plane's TLS keys, transport/tls.hpp), constant-time comparison, and random
// nonces and secrets. Nothing here is written by hand; this header only keeps
// OpenSSL's headers out of the transport's sources and gives the operations
// the types the handshakes use.

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>
#include <type_traits>

namespace taihu::transport {

using Bytes = std::span<const std::uint8_t>;
using Digest = std::array<std::uint8_t, 32>;

inline Bytes bytes_of(std::string_view text) { return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()}; }

// The object representation of a fixed-size field (a version, a node id), as
// it goes into a proof; both sides of a handshake run the same binary layout.
// (Not for pointers: a proof over an address would be a silent bug.)
template <class T>
  requires(std::is_trivially_copyable_v<T> && !std::is_pointer_v<T>)
Bytes field_bytes(const T& value) {
  return {reinterpret_cast<const std::uint8_t*>(&value), sizeof value};
}

// HMAC-SHA-256 (RFC 2104) of the concatenation of `parts`, fed to OpenSSL's
// EVP_MAC one by one, so a proof over several fields needs no copy.
Digest hmac_sha256(Bytes key, std::initializer_list<Bytes> parts);
inline Digest hmac_sha256(Bytes key, Bytes message) { return hmac_sha256(key, {message}); }

// HKDF-SHA-256 (RFC 5869, extract then expand) through OpenSSL's EVP_KDF:
// fills `out` (at most 255 * 32 bytes) with key material from `key`, `salt`
// and the concatenation of `info`.
void hkdf_sha256(Bytes key, Bytes salt, std::initializer_list<Bytes> info, std::span<std::uint8_t> out);

// CRYPTO_memcmp: timing says nothing about where two proofs differ.
bool equal_constant_time(Bytes a, Bytes b);

// RAND_bytes (OpenSSL's CSPRNG, seeded by the kernel); throws Error when
// it cannot deliver, rather than handing out a predictable nonce.
void random_bytes(std::span<std::uint8_t> out);

}  // namespace taihu::transport
