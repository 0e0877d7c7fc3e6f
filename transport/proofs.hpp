#pragma once
// The MACs of the data plane's handshake (transport/wire.hpp), as both sides
// and the tests that play a peer compute them: HMAC-SHA-256 keyed with the
// cluster secret over a label naming the message, the protocol version, the
// client's node, what the message says, and both nonces (the sender's
// first). So no MAC can be reflected to the other side, replayed on another
// connection, or moved to another message.

#include <array>
#include <cstdint>
#include <string_view>

#include "transport/crypto.hpp"
#include "transport/wire.hpp"

namespace taihu::transport {

using Nonce = std::array<std::uint8_t, nonce_bytes>;

// Proof ("taihu-dp client", client nonce first) and Welcome ("taihu-dp server").
inline Digest handshake_proof(std::string_view secret, std::string_view role, std::uint32_t version, std::int32_t node,
                              const Nonce& first, const Nonce& second) {
  return hmac_sha256(bytes_of(secret), {bytes_of(role), field_bytes(version), field_bytes(node), first, second});
}

// The client's Probe: where its token is and the token itself.
inline Digest probe_mac(std::string_view secret, std::uint32_t version, std::int32_t node, const RemoteSpan& span,
                        Bytes token, const Nonce& client_nonce, const Nonce& server_nonce) {
  return hmac_sha256(bytes_of(secret), {bytes_of("taihu-dp probe"), field_bytes(version), field_bytes(node),
                                        field_bytes(span), token, client_nonce, server_nonce});
}

// The server's Answer to it: the byte that decides same-host reads, the
// channel, and with them whether TLS follows.
inline Digest answer_mac(std::string_view secret, std::uint32_t version, std::int32_t node, std::uint8_t answer,
                         const Nonce& server_nonce, const Nonce& client_nonce) {
  return hmac_sha256(bytes_of(secret), {bytes_of("taihu-dp answer"), field_bytes(version), field_bytes(node),
                                        field_bytes(answer), server_nonce, client_nonce});
}

}  // namespace taihu::transport
