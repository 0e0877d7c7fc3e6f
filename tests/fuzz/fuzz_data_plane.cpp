// The data plane's server side: the handshake parser (inputs as a stranger's
// first bytes) and, behind it, the frame parser (the same inputs after a
// valid handshake and probe, as an authenticated but buggy or hostile peer
// sends them: frames, probes, same-host descriptors; in plaintext, tls =
// off, since behind TLS every altered byte is dropped by OpenSSL). Any bytes end in a refusal or a
// protocol error, never a crash, an oversized allocation or a hang.
#include <spdlog/spdlog.h>

#include <array>
#include <cerrno>
#include <string>

#include "fuzz_socket.hpp"
#include "fuzz_support.hpp"
#include "transport/crypto.hpp"
#include "transport/data_plane.hpp"
#include "transport/proofs.hpp"

namespace {

using namespace taihu::transport;

const std::string secret = "fuzzing secret";

class DiscardingSink : public FrameSink {
 public:
  Landing land(int, const ChunkHeader&, std::size_t bytes) override {
    auto buffer = std::make_shared<std::string>(bytes, '\0');
    return {buffer->data(), buffer};
  }
  void deliver(int, const ChunkHeader&, Landing) override {}
  void peer_lost(int, const std::string&) override {}
};

// A valid handshake (the proof answers this connection's fresh server nonce)
// and a probe that offers no same-host reads, then `frames` as the
// authenticated peer's bytes.
bool handshaken(std::uint16_t port, std::string_view frames) {
  const int fd = taihu::testing::connect_loopback(port);
  if (fd < 0) std::abort();
  Hello hello;
  hello.node = 1;
  hello.detail = static_cast<std::uint32_t>(TlsMode::off);
  random_bytes(hello.nonce);
  Hello challenge;
  // (the loopback helpers carry on after libFuzzer's timer interrupts them)
  if (!taihu::testing::send_all(fd, &hello, sizeof hello) ||
      !taihu::testing::receive_all(fd, &challenge, sizeof challenge))
    std::abort();
  const Digest proof = handshake_proof(secret, "taihu-dp client", hello.version, hello.node, hello.nonce, challenge.nonce);
  Digest welcome{};
  if (!taihu::testing::send_all(fd, proof.data(), proof.size()) ||
      !taihu::testing::receive_all(fd, welcome.data(), welcome.size()))
    std::abort();
  struct {
    FrameHeader header{probe_frame_magic, 0, 32, 0, {}};
    RemoteSpan span{};
    std::array<std::uint8_t, 32> token{};
    Digest mac{};
  } probe;
  probe.mac = probe_mac(secret, hello.version, hello.node, probe.span, probe.token, hello.nonce, challenge.nonce);
  std::array<std::uint8_t, 33> answer{};
  if (!taihu::testing::send_all(fd, &probe, sizeof probe) ||
      !taihu::testing::receive_all(fd, answer.data(), answer.size()))
    std::abort();
  std::size_t sent = 0;
  while (sent < frames.size()) {
    const ssize_t n = ::send(fd, frames.data() + sent, frames.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  const bool closed = taihu::testing::read_until_closed(fd, std::chrono::milliseconds(2000));
  ::close(fd);
  return closed;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static DiscardingSink sink;
  static DataPlane* server = [] {
    spdlog::set_level(spdlog::level::off);
    DataPlaneOptions o;
    o.node = 0;
    o.secret = secret;
    o.handshake_timeout = std::chrono::milliseconds(500);
    o.max_message_bytes = std::size_t{1} << 20;  // a fuzzer's message need not be large to be wrong
    o.tls = TlsMode::off;
    return new DataPlane(o, &sink);
  }();
  if (size == 0) return 0;
  const auto input = taihu::fuzz::text_of(data + 1, size - 1);
  const bool closed = data[0] % 2 == 0 ? taihu::fuzz::exchange(server->port(), {}, input)
                                       : handshaken(server->port(), input);
  if (!closed) std::abort();
  return 0;
}
