// The control plane's gatekeeper (transport/gatekeeper.hpp) and the accept
// loop every port shares (transport/listener.hpp): both sides prove the
// secret before a socket is handed on; wrong secrets, other versions, garbage
// and idle strangers are refused or closed; strangers holding connections
// cannot lock a real client out.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "transport/cluster_secret.hpp"
#include "transport/gatekeeper.hpp"
#include "support/loopback.hpp"

using namespace taihu;
using namespace taihu::transport;
using namespace std::chrono_literals;

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

int raw_connect(std::uint16_t port) {
  const int fd = testing::connect_loopback(port);
  REQUIRE(fd >= 0);
  return fd;
}

}  // namespace

TEST_SUITE("net") {
  TEST_CASE("gatekeeper: a client with the secret is admitted, both ends get the connected socket") {
    const std::string secret = random_secret();
    Doorway door;
    Gatekeeper gate(options(secret), door.callback());
    const int fd = admit_through_gate(client(gate.port(), secret));
    REQUIRE(door.wait_for(1));
    CHECK(door.admitted[0].name == "node-a");
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
    CHECK_THROWS_WITH_AS(admit_through_gate(client(gate.port(), "not the secret")),
                         doctest::Contains("refused: wrong cluster secret"), GateRefused);
    CHECK_THROWS_WITH_AS(admit_through_gate(client(gate.port(), secret, 8)),
                         doctest::Contains("refused: protocol version 8 (the coordinator speaks 7)"), GateRefused);
    const auto stats = gate.stats();
    CHECK(stats.refused_secret == 1);
    CHECK(stats.refused_version == 1);
    CHECK(door.admitted.empty());
    // And it still serves.
    ::close(admit_through_gate(client(gate.port(), secret)));
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
    CHECK_THROWS_WITH_AS(admit_through_gate(client(ntohs(a.sin_port), random_secret())),
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
    ::close(admit_through_gate(client(gate.port(), secret)));
    CHECK(door.wait_for(1));
    CHECK(gate.stats().over_limit >= 8);  // 12 + 1 connections, at most 4 kept
    for (int fd : strangers) ::close(fd);
  }
}
