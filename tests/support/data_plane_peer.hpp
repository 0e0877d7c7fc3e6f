#pragma once
// A data-plane client that speaks the wire format by hand (transport/wire.hpp),
// for tests that play an authenticated but misbehaving peer: it proves the
// secret as a real node would, probes (or not), then the test sends what it
// likes on the plain socket.

#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <string>

#include "transport/crypto.hpp"
#include "transport/proofs.hpp"
#include "transport/tls.hpp"
#include "transport/wire.hpp"
#include "support/loopback.hpp"

namespace taihu::testing {

struct HandPeer {
  int fd = -1;
  std::string secret;
  transport::Hello hello, challenge;
};

// Connects and completes Hello, Challenge, Proof and Welcome in `mode`.
inline HandPeer authenticated_client(std::uint16_t port, const std::string& secret, std::int32_t node,
                                     transport::TlsMode mode = transport::TlsMode::off) {
  using namespace transport;
  HandPeer p;
  p.secret = secret;
  p.fd = connect_loopback(port);
  REQUIRE(p.fd >= 0);
  p.hello.node = node;
  p.hello.detail = static_cast<std::uint32_t>(mode);
  random_bytes(p.hello.nonce);
  REQUIRE(send_all(p.fd, &p.hello, sizeof p.hello));
  REQUIRE(receive_all(p.fd, &p.challenge, sizeof p.challenge));
  REQUIRE(p.challenge.kind == 0);
  const Digest proof =
      handshake_proof(secret, "taihu-dp client", p.hello.version, node, p.hello.nonce, p.challenge.nonce);
  REQUIRE(send_all(p.fd, proof.data(), proof.size()));
  Digest welcome{};
  REQUIRE(receive_all(p.fd, welcome.data(), welcome.size()));
  CHECK(welcome == handshake_proof(secret, "taihu-dp server", p.hello.version, node, p.challenge.nonce, p.hello.nonce));
  return p;
}

// The probe every connection starts with: `token` at `where` in this process
// (by default where it is; pid 0 with offer = false: no same-host reads
// offered). Returns the server's answer, whose MAC it checks.
inline std::uint8_t probe(const HandPeer& p, const std::array<std::uint8_t, 32>& token, const void* where = nullptr,
                          bool offer = true) {
  using namespace transport;
  FrameHeader header;
  header.magic = probe_frame_magic;
  header.total_bytes = token.size();
  const RemoteSpan span = offer ? RemoteSpan{reinterpret_cast<std::uint64_t>(where ? where : token.data()),
                                             static_cast<std::uint32_t>(::getpid()), 0}
                                : RemoteSpan{};
  const Digest mac =
      probe_mac(p.secret, p.hello.version, p.hello.node, span, token, p.hello.nonce, p.challenge.nonce);
  REQUIRE(send_all(p.fd, &header, sizeof header));
  REQUIRE(send_all(p.fd, &span, sizeof span));
  REQUIRE(send_all(p.fd, token.data(), token.size()));
  REQUIRE(send_all(p.fd, mac.data(), mac.size()));
  std::uint8_t answer = 255;
  Digest answer_tag{};
  REQUIRE(receive_all(p.fd, &answer, 1));
  REQUIRE(receive_all(p.fd, answer_tag.data(), answer_tag.size()));
  CHECK(answer_tag == answer_mac(p.secret, p.hello.version, p.hello.node, answer, p.challenge.nonce, p.hello.nonce));
  return answer;
}

inline std::uint8_t no_probe(const HandPeer& p) { return probe(p, std::array<std::uint8_t, 32>{}, nullptr, false); }

}  // namespace taihu::testing
