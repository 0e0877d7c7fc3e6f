#pragma once
// SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), for the data plane's
// challenge-response handshake. Written here rather than taken from OpenSSL so
// that a node needs no TLS development headers; the handshake hashes a few
// hundred bytes per connection, so speed does not matter.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace taihu::transport {

using Digest = std::array<std::uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  void update(std::span<const std::uint8_t> bytes);
  void update(std::string_view text) {
    update({reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
  }
  Digest finish();

 private:
  void compress(const std::uint8_t* block);

  std::array<std::uint32_t, 8> state_;
  std::array<std::uint8_t, 64> block_{};
  std::size_t used_ = 0;
  std::uint64_t total_ = 0;  // bytes
};

Digest sha256(std::span<const std::uint8_t> bytes);
Digest hmac_sha256(std::span<const std::uint8_t> key, std::span<const std::uint8_t> message);

// Compares without an early exit, so timing says nothing about where they differ.
bool equal_constant_time(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b);

// Fills `out` from the operating system's random source (nonces, secrets).
void random_bytes(std::span<std::uint8_t> out);

}  // namespace taihu::transport
