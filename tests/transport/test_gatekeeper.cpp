// The control plane's gatekeeper (transport/gatekeeper.hpp) and the accept
// loop every port shares (transport/listener.hpp): both sides prove the
// secret before a socket is handed on; wrong secrets, other versions, garbage
// and idle strangers are refused or closed; strangers holding connections
// cannot lock a real client out.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "transport/cluster_secret.hpp"
#include "transport/gatekeeper.hpp"
#include "transport/tls_relay.hpp"
#include "support/eventually.hpp"
#include "support/log_capture.hpp"
#include "support/loopback.hpp"
#include "support/path_tap.hpp"
#include "support/temp_dir.hpp"
#include "support/test_certificates.hpp"

using namespace taihu;
using namespace taihu::transport;
using namespace std::chrono_literals;
using taihu::testing::eventually;

namespace {

// Admitted connections, handed over on the gatekeeper's thread.
struct Doorway {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<Admitted> admitted;

  std::function<void(Admitted)> callback() {
    return [this](Admitted a) {
      std::lock_guard lock(mutex);
      admitted.push_back(std::move(a));
      changed.notify_all();
    };
  }
  bool wait_for(std::size_t n) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, 5s, [&] { return admitted.size() >= n; });
  }
  ~Doorway() {
    for (auto& a : admitted) ::close(a.fd);
  }
};

GatekeeperOptions options(const std::string& secret) {
  GatekeeperOptions o;
  o.what = "test gate";
  o.secret = secret;
  o.version = 7;
  o.handshake_timeout = 300ms;
  o.max_pending = 4;
  return o;
}

GateClientOptions client(std::uint16_t port, const std::string& secret, std::uint32_t version = 7) {
  GateClientOptions c;
  c.host = "127.0.0.1";
  c.port = port;
  c.secret = secret;
  c.version = version;
  c.name = "node-a";
  c.timeout = 2s;
  return c;
}

// The relays of the tests' TLS connections.
IoThread& relay_thread() {
  static IoThread thread;
  return thread;
}

GateConnection admit(const GateClientOptions& c) { return admit_through_gate(c, relay_thread()); }

int raw_connect(std::uint16_t port) {
  const int fd = testing::connect_loopback(port);
  REQUIRE(fd >= 0);
  return fd;
}

// n bytes of text in which every 32-byte window occurs once.
std::string pattern(std::string_view tag, std::size_t n) {
  std::string text;
  for (int i = 0; text.size() < n; ++i) text += fmt::format("{} {:08d};", tag, i);
  text.resize(n);
  return text;
}

void make_blocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK); }

// Sends `text` at `from` (on a thread of its own: the way may hold less than
// it) and reads it at `to`, until `to` closes; what arrived. (Sockets that
// Asio ran operations on come out of it non-blocking.)
std::string carry(int from, int to, const std::string& text) {
  make_blocking(from);
  make_blocking(to);
  std::thread writer([&] { testing::send_all(from, text.data(), text.size()); });
  std::string got(text.size(), '\0');
  std::size_t n = 0;
  while (n < got.size()) {
    const ssize_t r = ::recv(to, got.data() + n, got.size() - n, 0);
    if (r <= 0) break;
    n += static_cast<std::size_t>(r);
  }
  writer.join();
  got.resize(n);
  return got;
}

// A client played by hand up to the welcome, which it checks: it proves the
// secret, claiming (hello's detail) whether it sees the server on its host.
struct HandClient {
  int fd = -1;
  GateMessage hello, challenge, welcome;
  HandClient(std::uint16_t port, const std::string& secret, std::uint32_t version, std::uint32_t detail)
      : fd(raw_connect(port)) {
    hello.version = version;
    hello.kind = static_cast<std::uint32_t>(GateKind::hello);
    hello.detail = detail;
    random_bytes(hello.nonce);
    REQUIRE(testing::send_all(fd, &hello, sizeof hello));
    REQUIRE(testing::receive_all(fd, &challenge, sizeof challenge));
    GateMessage proof;
    proof.version = version;
    proof.kind = static_cast<std::uint32_t>(GateKind::proof);
    proof.proof = gate_proof(secret, "taihu-cp client", hello, hello.detail, hello.nonce, challenge.nonce);
    REQUIRE(testing::send_all(fd, &proof, sizeof proof));
    REQUIRE(testing::receive_all(fd, &welcome, sizeof welcome));
    REQUIRE(welcome.kind == static_cast<std::uint32_t>(GateKind::welcome));
    REQUIRE(welcome.proof == gate_proof(secret, "taihu-cp server", hello, welcome.detail, challenge.nonce, hello.nonce));
  }
  ~HandClient() { ::close(fd); }
};

}  // namespace

TEST_SUITE("net") {
  TEST_CASE("gatekeeper: a client with the secret is admitted, both ends get the connected socket") {
    const std::string secret = random_secret();
    Doorway door;
    Gatekeeper gate(options(secret), door.callback());
    const int fd = admit(client(gate.port(), secret)).fd;
    REQUIRE(door.wait_for(1));
    CHECK(door.admitted[0].name == "node-a");
    CHECK_FALSE(door.admitted[0].tls);  // between_hosts, and both ends on this host
    CHECK(door.admitted[0].peer.rfind("127.0.0.1:", 0) == 0);
    // The two sockets are the two ends of one connection, with nothing left over from the handshake.
    const char hello[] = "basp";
    REQUIRE(::send(fd, hello, sizeof hello, 0) == static_cast<ssize_t>(sizeof hello));
    char got[sizeof hello] = {};
    REQUIRE(::recv(door.admitted[0].fd, got, sizeof got, MSG_WAITALL) == static_cast<ssize_t>(sizeof got));
    CHECK(std::memcmp(got, hello, sizeof hello) == 0);
    ::close(fd);
    CHECK(gate.stats().admitted == 1);
  }

  TEST_CASE("gatekeeper: a wrong secret and another version are refused, naming why; nothing is handed on") {
    const std::string secret = random_secret();
    Doorway door;
    Gatekeeper gate(options(secret), door.callback());
    CHECK_THROWS_WITH_AS(admit(client(gate.port(), "not the secret")),
                         doctest::Contains("refused: wrong cluster secret"), GateRefused);
    CHECK_THROWS_WITH_AS(admit(client(gate.port(), secret, 8)),
                         doctest::Contains("refused: protocol version 8 (the coordinator speaks 7)"), GateRefused);
    const auto stats = gate.stats();
    CHECK(stats.refused_secret == 1);
    CHECK(stats.refused_version == 1);
    CHECK(door.admitted.empty());
    // And it still serves.
    ::close(admit(client(gate.port(), secret)).fd);
    CHECK(door.wait_for(1));
  }

  TEST_CASE("gatekeeper: a client refuses a server that does not prove the secret (a fake coordinator)") {
    // A server that answers the hello with a challenge and any proof with a made-up welcome.
    const int listen_fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listen_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(listen_fd, 4) == 0);
    socklen_t len = sizeof a;
    ::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&a), &len);
    std::thread fake([listen_fd] {
      const int fd = ::accept(listen_fd, nullptr, nullptr);
      GateMessage m;
      ::recv(fd, &m, sizeof m, MSG_WAITALL);
      m.kind = static_cast<std::uint32_t>(GateKind::challenge);
      ::send(fd, &m, sizeof m, 0);
      ::recv(fd, &m, sizeof m, MSG_WAITALL);
      m.kind = static_cast<std::uint32_t>(GateKind::welcome);
      m.proof.fill(0x42);
      ::send(fd, &m, sizeof m, 0);
      char rest;
      ::recv(fd, &rest, 1, 0);
      ::close(fd);
    });
    CHECK_THROWS_WITH_AS(admit(client(ntohs(a.sin_port), random_secret())),
                         doctest::Contains("does not hold the cluster secret"), GateRefused);
    fake.join();
    ::close(listen_fd);
  }

  TEST_CASE("gatekeeper: garbage and a huge CAF header are closed at once, an idle stranger after the timeout") {
    Doorway door;
    Gatekeeper gate(options(random_secret()), door.callback());
    const int garbage = raw_connect(gate.port());
    const unsigned char basp[32] = {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};  // 4 GB announced
    ::send(garbage, basp, sizeof basp, 0);
    CHECK(testing::read_until_closed(garbage, 1000ms));
    ::close(garbage);
    const int idle = raw_connect(gate.port());
    const auto start = std::chrono::steady_clock::now();
    CHECK(testing::read_until_closed(idle, 3000ms));
    CHECK(std::chrono::steady_clock::now() - start >= 250ms);
    ::close(idle);
    CHECK(gate.stats().refused_garbage == 2);
    CHECK(door.admitted.empty());
  }

  TEST_CASE("listener: strangers holding connections cannot lock a client out; the oldest makes room") {
    const std::string secret = random_secret();
    Doorway door;
    auto o = options(secret);
    o.handshake_timeout = 10s;  // the strangers would hold their places all along
    Gatekeeper gate(o, door.callback());
    std::vector<int> strangers;
    for (int i = 0; i < 12; ++i) strangers.push_back(raw_connect(gate.port()));
    std::this_thread::sleep_for(100ms);
    ::close(admit(client(gate.port(), secret)).fd);
    CHECK(door.wait_for(1));
    CHECK(gate.stats().over_limit >= 8);  // 12 + 1 connections, at most 4 kept
    for (int fd : strangers) ::close(fd);
  }

  TEST_CASE("gatekeeper, tls = always: CAF's bytes cross the path as TLS records only, both ways, whole") {
    // between_hosts and off on loopback: both ends are on this host, so no TLS.
    for (const TlsMode mode : {TlsMode::always, TlsMode::between_hosts, TlsMode::off}) {
      CAPTURE(tls_mode_name(mode));
      const std::string secret = random_secret();
      Doorway door;
      auto o = options(secret);
      o.tls = mode;
      Gatekeeper gate(o, door.callback());
      testing::PathTap tap(gate.port());
      const GateConnection c = admit(client(tap.port(), secret));
      REQUIRE(door.wait_for(1));
      const bool tls = mode == TlsMode::always;
      CHECK(c.tls == tls);
      CHECK(door.admitted[0].tls == tls);
      // 300 KB each way: many TLS records, many turns of the relays.
      const std::string up = pattern("up", 300'000), down = pattern("down", 300'000);
      const bool up_whole = carry(c.fd, door.admitted[0].fd, up) == up;
      const bool down_whole = carry(door.admitted[0].fd, c.fd, down) == down;
      CHECK(up_whole);
      CHECK(down_whole);
      CHECK(testing::contains(tap.from_client(), up.data() + 100'000, 32) == !tls);
      CHECK(testing::contains(tap.from_server(), down.data() + 100'000, 32) == !tls);
      if (tls) {
        // Right after the gate's two messages: a TLS handshake record (ClientHello).
        const auto bytes = tap.from_client();
        REQUIRE(bytes.size() > 2 * sizeof(GateMessage));
        CHECK(bytes[2 * sizeof(GateMessage)] == 0x16);
      }
      ::close(c.fd);
      CHECK(gate.stats().tls == (tls ? 1u : 0u));
    }
  }

  TEST_CASE("gatekeeper: a byte altered on the path ends a TLS connection at both ends; nothing altered arrives") {
    const std::string secret = random_secret();
    Doorway door;
    auto o = options(secret);
    o.tls = TlsMode::always;
    Gatekeeper gate(o, door.callback());
    testing::LogCapture log;
    // Well inside the application data: the TLS handshake takes a few hundred bytes.
    testing::PathTap tap(gate.port(), {testing::PathTap::Direction::from_client, 2 * sizeof(GateMessage) + 50'000});
    const GateConnection c = admit(client(tap.port(), secret));
    REQUIRE(door.wait_for(1));
    const std::string up = pattern("up", 300'000);
    const std::string got = carry(c.fd, door.admitted[0].fd, up);  // ends early: the relay closed CAF's end
    CHECK(tap.flipped());
    CHECK(got.size() < 50'000);
    const bool nothing_altered = got == up.substr(0, got.size());
    CHECK(nothing_altered);
    CHECK(testing::read_until_closed(c.fd, 2000ms));  // the client's side closes too
    CHECK(log.lines_with("test gate: node 'node-a'") == 1);  // the server's relay: "... protocol error: TLS"
    ::close(c.fd);
  }

  TEST_CASE("gatekeeper: nobody on the path can talk a client out of TLS; the welcome's flag is in its proof") {
    const std::string secret = random_secret();
    Doorway door;
    auto o = options(secret);
    o.tls = TlsMode::always;
    Gatekeeper gate(o, door.callback());
    // The second message from the server is the welcome: clear its TLS flag.
    testing::PathTap tap(gate.port(), {testing::PathTap::Direction::from_server,
                                       sizeof(GateMessage) + offsetof(GateMessage, detail)});
    CHECK_THROWS_WITH_AS(admit(client(tap.port(), secret)), doctest::Contains("altered on the way"), GateRefused);
    CHECK(tap.flipped());
    CHECK(door.admitted.empty());
  }

  TEST_CASE("gatekeeper: a client off this host gets TLS with between_hosts; proving the secret without TLS is refused") {
    const std::string secret = random_secret();
    Doorway door;
    Gatekeeper gate(options(secret), door.callback());  // between_hosts
    testing::LogCapture log;
    {
      HandClient stranger(gate.port(), secret, 7, /*detail: not on this host*/ 0);
      CHECK(stranger.welcome.detail == 1);
      const char plaintext[] = "BASP, not a TLS ClientHello ..............................";
      REQUIRE(testing::send_all(stranger.fd, plaintext, sizeof plaintext));
      CHECK(testing::read_until_closed(stranger.fd, 2000ms));
    }
    CHECK(gate.stats().refused_tls == 1);
    CHECK(log.lines_with("proved the secret but failed the TLS handshake") == 1);
    CHECK(door.admitted.empty());
    HandClient neighbour(gate.port(), secret, 7, /*detail: on this host*/ 1);
    CHECK(neighbour.welcome.detail == 0);
    CHECK(door.wait_for(1));
  }

  TEST_CASE("gatekeeper with certificates: the cluster CA's nodes get TLS verified both ways; others are refused") {
    testing::TempDir dir;
    testing::CertificateAuthority cluster(dir.path(), "cluster"), other(dir.path(), "other");
    const std::string secret = random_secret();
    Doorway door;
    auto o = options(secret);
    o.tls = TlsMode::always;
    o.certificates = cluster.issue("coordinator");
    Gatekeeper gate(o, door.callback());
    testing::PathTap tap(gate.port());
    auto with = [&](TlsCertificates certificates) {
      auto c = client(tap.port(), secret);
      c.certificates = std::move(certificates);
      return c;
    };
    const GateConnection c = admit(with(cluster.issue("node-a")));
    REQUIRE(door.wait_for(1));
    CHECK(c.tls);
    CHECK(c.certificates);
    const std::string up = pattern("up", 50'000);
    const bool whole = carry(c.fd, door.admitted[0].fd, up) == up;
    CHECK(whole);
    CHECK_FALSE(testing::contains(tap.from_client(), up.data() + 10'000, 32));
    ::close(c.fd);
    // No certificates: refused after proving the secret, naming what to give.
    CHECK_THROWS_WITH_AS(admit(with({})), doctest::Contains("taihu-node --certificate, --key, --ca-file"),
                         GateRefused);
    // Its CA file does not hold the coordinator's CA: it rejects the coordinator (which sends its CA
    // along), naming OpenSSL's reason, at once.
    CHECK_THROWS_WITH_AS(admit(with(other.issue("intruder"))),
                         doctest::Contains("TLS failed: certificate verify failed (SSL routines); the coordinator's "
                                           "certificate: self-signed certificate in certificate chain; this node's "
                                           "CA file must hold the CA that signed it"),
                         GateRefused);
    CHECK(eventually([&] { return gate.stats().refused_tls == 2; }));
    CHECK(door.admitted.size() == 1);
  }

  TEST_CASE("gatekeeper with certificates: a node whose certificate the coordinator rejects is refused, naming why") {
    // Issue 50: such a node trusts the coordinator, so its own TLS 1.3 handshake ends well (before the
    // coordinator has verified its certificate), and it saw only a closed connection: it tried again
    // five times a second until its join_timeout (exit 4). The coordinator's verdict now says why.
    testing::TempDir dir;
    testing::CertificateAuthority cluster(dir.path(), "cluster"), other(dir.path(), "other");
    const std::string secret = random_secret();
    testing::LogCapture log;
    Doorway door;
    auto o = options(secret);
    o.tls = TlsMode::always;
    o.certificates = cluster.issue("coordinator");
    Gatekeeper gate(o, door.callback());
    const auto trusting = [&](TlsCertificates own) {
      own.ca_file = cluster.ca_file().string();  // it accepts the coordinator's certificate
      auto c = client(gate.port(), secret);
      c.certificates = std::move(own);
      return c;
    };
    const std::vector<std::pair<TlsCertificates, std::string>> rejected{
        {other.issue("intruder"), "unable to get local issuer certificate"},
        {cluster.self_signed("self"), "self-signed certificate"},
        {cluster.issue("late", testing::expired), "certificate has expired"}};
    for (const auto& entry : rejected) {
      const auto& [own, reason] = entry;
      CAPTURE(entry.second);
      const std::string expected = "the coordinator proved the secret, but rejected this node's certificate: " + reason +
                                   "; give this node a certificate that the cluster's CA";
      CHECK_THROWS_WITH_AS(admit(trusting(own)), doctest::Contains(expected.c_str()), GateRefused);
    }
    // Logged by the coordinator too (at most once a second: the first of the three, at least).
    CHECK(log.lines_with("its certificate failed verification: unable to get local issuer certificate") == 1);
    CHECK(eventually([&] { return gate.stats().refused_tls == 3; }));
    // A certificate of the cluster's CA is still admitted, and nothing else was.
    ::close(admit(trusting(cluster.issue("node-a"))).fd);
    CHECK(door.wait_for(1));
    CHECK(door.admitted.size() == 1);
  }

  TEST_CASE("gatekeeper: a client that names its own TLS mode is refused by a coordinator of another, naming both") {
    // Issue 50: a launcher's rank with tls = always silently ran with rank 0's off.
    const std::string secret = random_secret();
    testing::LogCapture log;
    Doorway door;
    auto o = options(secret);
    o.tls = TlsMode::off;
    Gatekeeper gate(o, door.callback());
    auto c = client(gate.port(), secret);
    c.tls = TlsMode::always;
    CHECK_THROWS_WITH_AS(admit(c),
                         doctest::Contains("refused: this node uses [cluster] tls = always, the coordinator tls = off"),
                         GateRefused);
    CHECK(gate.stats().refused_tls_mode == 1);
    CHECK(log.lines_with("refused node 'node-a' (127.0.0.1:") == 1);
    CHECK(log.lines_with("it uses [cluster] tls = always, this side tls = off") == 1);
    CHECK(door.admitted.empty());
    // The same mode, or none named (taihu-node takes the coordinator's): admitted.
    c.tls = TlsMode::off;
    ::close(admit(c).fd);
    c.tls.reset();
    ::close(admit(c).fd);
    CHECK(door.wait_for(2));
  }
}
