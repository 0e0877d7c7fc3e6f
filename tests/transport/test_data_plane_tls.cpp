// TLS on the data plane (transport/tls.hpp, transport/stream.hpp): messages
// of every size through TLS, both ways; what a reader on the path sees (a
// relay that records every byte: ciphertext with TLS, the floats without); a
// byte altered on the path ends the connection as a protocol error and
// delivers nothing; a peer that proves the secret and then speaks plaintext
// is refused while the listener keeps serving; nodes of different TLS modes
// are refused at once with a message naming the modes.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "transport/cluster_secret.hpp"
#include "transport/data_plane.hpp"
#include "transport/tls.hpp"
#include "support/data_plane_peer.hpp"
#include "support/eventually.hpp"
#include "support/log_capture.hpp"
#include "support/loopback.hpp"
#include "support/path_tap.hpp"
#include "support/temp_dir.hpp"
#include "support/test_certificates.hpp"

using namespace taihu;
using namespace taihu::transport;

namespace {

class Sink : public FrameSink {
 public:
  Landing land(int, const ChunkHeader&, std::size_t bytes) override {
    auto buffer = std::make_shared<std::vector<float>>(bytes / sizeof(float));
    return {buffer->data(), buffer};
  }
  void deliver(int, const ChunkHeader& header, Landing landing) override {
    std::lock_guard lock(mutex_);
    received_.emplace_back(header, std::move(*std::static_pointer_cast<std::vector<float>>(landing.owner)));
    changed_.notify_all();
  }
  void peer_lost(int, const std::string& reason) override {
    std::lock_guard lock(mutex_);
    lost_.push_back(reason);
    changed_.notify_all();
  }
  bool wait_messages(std::size_t n) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(20), [&] { return received_.size() >= n; });
  }
  bool wait_lost(std::size_t n) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(10), [&] { return lost_.size() >= n; });
  }
  std::vector<std::pair<ChunkHeader, std::vector<float>>> received() {
    std::lock_guard lock(mutex_);
    return received_;
  }
  std::vector<std::string> lost() {
    std::lock_guard lock(mutex_);
    return lost_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::pair<ChunkHeader, std::vector<float>>> received_;
  std::vector<std::string> lost_;
};

DataPlaneOptions options_for(int node, const std::string& secret, TlsMode tls) {
  DataPlaneOptions o;
  o.node = node;
  o.secret = secret;
  o.tls = tls;
  o.handshake_timeout = std::chrono::milliseconds(2000);
  return o;
}

// Node 0 as a sender whose messages all go through the socket, also with
// tls = off or between_hosts (no reads of its memory by a peer on this
// host), so that a path between the nodes carries every byte.
DataPlaneOptions socket_sender(const std::string& secret, TlsMode tls) {
  auto o = options_for(0, secret, tls);
  o.remote_read_min_bytes = 0;
  return o;
}

// Node 0 (a socket_sender) connected to node 1 through a PathTap that may
// flip a byte or hang up. Members in the order they must be built and torn
// down: the sinks outlive the planes, the path goes first.
struct TappedPair {
  explicit TappedPair(TlsMode mode, testing::PathTap::Flip flip = {}, testing::PathTap::HangUp hang_up = {})
      : secret(random_secret()),
        a(socket_sender(secret, mode), &sink_a),
        b(options_for(1, secret, mode), &sink_b),
        relay(b.port(), flip, hang_up) {
    a.connect(1, "127.0.0.1", relay.port());
  }
  std::string secret;
  Sink sink_a, sink_b;
  DataPlane a, b;
  testing::PathTap relay;
};

using taihu::testing::eventually;

// n floats that no other message or protocol field contains: start + i.
std::shared_ptr<std::vector<float>> pattern(std::size_t n, float start) {
  auto values = std::make_shared<std::vector<float>>(n);
  std::iota(values->begin(), values->end(), start);
  return values;
}

std::string connect_error(DataPlane& client, int node, std::uint16_t port) {
  try {
    client.connect(node, "127.0.0.1", port);
  } catch (const NetError& e) {
    return e.what();
  }
  return "<connected>";
}

}  // namespace

TEST_SUITE("transport") {
  TEST_CASE("tls = always: messages of every size arrive whole and in order, both ways, through TLS") {
    const std::string secret = random_secret();
    Sink sink_a, sink_b;
    auto options_a = options_for(0, secret, TlsMode::always);
    options_a.part_bytes = 1000;  // many frames per message
    DataPlane a(options_a, &sink_a);
    DataPlane b(options_for(1, secret, TlsMode::always), &sink_b);  // 8 MB frames: 12 MB is two
    a.connect(1, "127.0.0.1", b.port());
    b.connect(0, "127.0.0.1", a.port());
    const std::vector<std::size_t> a_to_b{0, 1, 250, 251, 2501, 100000, 3, 70000};
    const std::vector<std::size_t> b_to_a{5, 3'000'000, 1, 600'000};
    std::vector<std::weak_ptr<std::vector<float>>> kept;
    for (std::size_t i = 0; i < std::max(a_to_b.size(), b_to_a.size()); ++i) {
      if (i < a_to_b.size()) {
        auto values = pattern(a_to_b[i], static_cast<float>(i) * 1000.0f);
        kept.push_back(values);
        a.send(1, ChunkHeader{7, 0, 1, static_cast<std::uint32_t>(i), 42, 0}, values->data(),
               values->size() * sizeof(float), values);
      }
      if (i < b_to_a.size()) {
        auto values = pattern(b_to_a[i], static_cast<float>(i) * 10.0f + 0.5f);
        kept.push_back(values);
        b.send(0, ChunkHeader{8, 1, 0, static_cast<std::uint32_t>(i), 43, 0}, values->data(),
               values->size() * sizeof(float), values);
      }
    }
    REQUIRE(sink_b.wait_messages(a_to_b.size()));
    REQUIRE(sink_a.wait_messages(b_to_a.size()));
    const auto at_b = sink_b.received(), at_a = sink_a.received();
    for (std::size_t i = 0; i < a_to_b.size(); ++i) {
      CAPTURE(i);
      CHECK(at_b[i].first.seq == i);
      CHECK(at_b[i].second == *pattern(a_to_b[i], static_cast<float>(i) * 1000.0f));
    }
    for (std::size_t i = 0; i < b_to_a.size(); ++i) {
      CAPTURE(i);
      CHECK(at_a[i].first.seq == i);
      CHECK(at_a[i].second == *pattern(b_to_a[i], static_cast<float>(i) * 10.0f + 0.5f));
    }
    CHECK(eventually([&] {
      return std::all_of(kept.begin(), kept.end(), [](const auto& w) { return w.expired(); });
    }));
    // Each node's connection out and in runs TLS; nothing went around it.
    CHECK(a.stats().tls_connections == 2);
    CHECK(b.stats().tls_connections == 2);
    CHECK(a.channels() == 0);
    CHECK(b.stats().messages_read_remotely == 0);
    CHECK(a.stats().messages_read_remotely == 0);
    CHECK(sink_a.lost().empty());
    CHECK(sink_b.lost().empty());
  }

  TEST_CASE("a reader on the path sees the floats only with tls = off") {
    // between_hosts: a node that offers no same-host reads (as between hosts) gets TLS too.
    for (const TlsMode mode : {TlsMode::always, TlsMode::between_hosts, TlsMode::off}) {
      CAPTURE(tls_mode_name(mode));
      TappedPair pair(mode);
      auto values = pattern(100000, 1234567.0f);
      pair.a.send(1, ChunkHeader{1, 0, 1, 0, 0, 0}, values->data(), values->size() * sizeof(float), values);
      REQUIRE(pair.sink_b.wait_messages(1));
      CHECK(pair.sink_b.received()[0].second == *values);
      const bool seen = testing::contains(pair.relay.from_client(), values->data() + 5000, 8 * sizeof(float));
      CHECK(seen == (mode == TlsMode::off));
      CHECK(pair.a.stats().tls_connections == (mode == TlsMode::off ? 0u : 1u));
    }
  }

  TEST_CASE("a byte altered on the path ends a TLS connection as a protocol error; nothing altered is delivered") {
    // The flipped byte lies well inside the message (the handshakes take
    // about 1 KB). Without TLS the same flip goes unnoticed: that is what
    // this test would see if TLS were not there.
    for (const TlsMode mode : {TlsMode::always, TlsMode::off}) {
      CAPTURE(tls_mode_name(mode));
      testing::LogCapture log;
      TappedPair pair(mode, {testing::PathTap::Direction::from_client, 200'000});
      auto values = pattern(262'144, 1.0f);  // 1 MB
      pair.a.send(1, ChunkHeader{1, 0, 1, 0, 0, 0}, values->data(), values->size() * sizeof(float), values);
      if (mode == TlsMode::off) {
        REQUIRE(pair.sink_b.wait_messages(1));
        CHECK(pair.relay.flipped());
        CHECK(pair.sink_b.received()[0].second != *values);  // altered, and nobody knows
        continue;
      }
      REQUIRE(pair.sink_b.wait_lost(1));
      CHECK(pair.relay.flipped());
      CHECK(pair.sink_b.lost()[0].find("protocol error: TLS") != std::string::npos);
      CHECK(log.lines_with("protocol error from node 0") == 1);
      CHECK(pair.sink_a.wait_lost(1));  // the sender hears of it too (TLS's alert, or the close)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      CHECK(pair.sink_b.received().empty());
    }
  }

  TEST_CASE("a peer that hangs up while messages are being written: lost once, every message's memory released once") {
    // The sender reads the end of the stream while its writes still complete
    // (the path drains them), so completions of writes finished before the
    // loss run after it. They once took front() of the emptied queue and
    // released a message's memory a second time: here that frees a buffer
    // the test still holds, which `released` counts.
    for (const TlsMode mode : {TlsMode::always, TlsMode::off}) {
      CAPTURE(tls_mode_name(mode));
      TappedPair pair(mode, {}, testing::PathTap::HangUp{64 * 1024});
      constexpr int messages = 4000;
      const auto values = pattern(256, 1.0f);  // 1 KB each
      std::atomic<int> released{0};
      std::vector<std::shared_ptr<const void>> held;
      for (int i = 0; i < messages; ++i) {
        held.emplace_back(values->data(), [values, &released](const void*) { ++released; });
        pair.a.send(1, ChunkHeader{1, 0, 1, static_cast<std::uint32_t>(i), 0, 0}, values->data(),
                    values->size() * sizeof(float), held.back());
      }
      REQUIRE(pair.sink_a.wait_lost(1));
      CHECK(pair.sink_b.wait_lost(1));  // the path passes the sender's close on
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // what was queued has run
      CHECK(released == 0);  // the test holds every message: none was released twice
      CHECK(pair.sink_a.lost().size() == 1);
      CHECK(pair.sink_b.lost().size() == 1);
      held.clear();
      CHECK(eventually([&] { return released == messages; }));  // and the plane keeps none
    }
  }

  TEST_CASE("a peer that proves the secret but then speaks plaintext where TLS is expected is refused") {
    const std::string secret = random_secret();
    Sink sink;
    auto options = options_for(0, secret, TlsMode::always);
    options.handshake_timeout = std::chrono::milliseconds(300);
    DataPlane server(options, &sink);
    testing::LogCapture log;
    // A frame in plaintext right after the probe.
    {
      const auto peer = testing::authenticated_client(server.port(), secret, 1, TlsMode::always);
      CHECK(testing::no_probe(peer) == 0);
      FrameHeader header;
      header.part_bytes = 8;
      header.total_bytes = 8;
      const float values[2] = {1.5f, 2.5f};
      REQUIRE(testing::send_all(peer.fd, &header, sizeof header));
      REQUIRE(testing::send_all(peer.fd, values, sizeof values));
      CHECK(testing::read_until_closed(peer.fd, std::chrono::seconds(5)));
      ::close(peer.fd);
    }
    CHECK(eventually([&] { return server.stats().refused_tls == 1; }));
    CHECK(log.lines_with("node 1: TLS handshake failed") == 1);
    // Silence where the TLS handshake should be: closed after the handshake timeout.
    {
      const auto peer = testing::authenticated_client(server.port(), secret, 2, TlsMode::always);
      CHECK(testing::no_probe(peer) == 0);
      CHECK(testing::read_until_closed(peer.fd, std::chrono::seconds(5)));
      ::close(peer.fd);
    }
    CHECK(eventually([&] { return server.stats().refused_tls == 2; }));
    CHECK(sink.received().empty());
    CHECK(sink.lost().empty());  // never connected, so never lost
    // The listener still serves an honest node.
    Sink client_sink;
    DataPlane client(options_for(3, secret, TlsMode::always), &client_sink);
    client.connect(0, "127.0.0.1", server.port());
    const std::vector<float> values{1.5f, 2.5f};
    client.send(0, ChunkHeader{1, 3, 0, 0, 0, 0}, values.data(), sizeof(float) * 2, nullptr);
    REQUIRE(sink.wait_messages(1));
    CHECK(sink.received()[0].second == values);
    const auto stats = server.stats();
    CHECK(stats.accepted == 1);
    CHECK(stats.tls_connections == 1);
  }

  TEST_CASE("nodes of different TLS modes are refused at once, with a message naming the modes") {
    const std::string secret = random_secret();
    const std::vector<std::pair<TlsMode, TlsMode>> pairs{
        {TlsMode::always, TlsMode::off}, {TlsMode::off, TlsMode::always}, {TlsMode::between_hosts, TlsMode::always}};
    for (const auto& [client_mode, server_mode] : pairs) {
      const std::string client_name(tls_mode_name(client_mode)), server_name(tls_mode_name(server_mode));
      CAPTURE(client_name);
      CAPTURE(server_name);
      Sink server_sink, client_sink;
      auto slow = options_for(0, secret, server_mode);
      slow.handshake_timeout = std::chrono::seconds(30);  // a hang would show as one
      DataPlane server(slow, &server_sink);
      auto client_options = options_for(1, secret, client_mode);
      client_options.handshake_timeout = std::chrono::seconds(30);
      DataPlane client(client_options, &client_sink);
      testing::LogCapture log;
      const auto start = std::chrono::steady_clock::now();
      const std::string error = connect_error(client, 0, server.port());
      CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
      CHECK(error.find("another TLS mode than this node's tls = " + client_name) != std::string::npos);
      CHECK(error.find("[cluster] tls") != std::string::npos);
      CHECK(!client.connected(0));
      CHECK(eventually([&] { return server.stats().refused_tls == 1; }));
      CHECK(log.lines_with(fmt::format("node 1 uses tls = {}, this node tls = {}", client_name, server_name)) == 1);
    }
  }

  TEST_CASE("TLS modes are named as in the config; a connection's key depends on both nonces") {
    for (const TlsMode mode : {TlsMode::between_hosts, TlsMode::always, TlsMode::off}) {
      CHECK(parse_tls_mode(tls_mode_name(mode)) == mode);
      CHECK(tls_mode_of(static_cast<std::uint32_t>(mode)) == mode);
    }
    CHECK(!parse_tls_mode("on"));
    CHECK(!parse_tls_mode("Always"));
    CHECK(!tls_mode_of(0));
    std::array<std::uint8_t, 32> n1{}, n2{}, n3{};
    random_bytes(n1);
    random_bytes(n2);
    random_bytes(n3);
    const TlsKey key = tls_key(Plane::data, "secret", n1, n2);
    CHECK(key == tls_key(Plane::data, "secret", n1, n2));
    CHECK(key != tls_key(Plane::data, "secret", n1, n3));
    CHECK(key != tls_key(Plane::data, "secret", n3, n2));
    CHECK(key != tls_key(Plane::data, "secret", n2, n1));
    CHECK(key != tls_key(Plane::data, "secreT", n1, n2));
    CHECK(key != tls_key(Plane::control, "secret", n1, n2));  // the planes' keys differ
  }

  TEST_CASE("certificates: nodes of the cluster's CA exchange messages through TLS; a node of another CA is refused") {
    testing::TempDir dir;
    testing::CertificateAuthority cluster(dir.path(), "cluster"), other(dir.path(), "other");
    const std::string secret = random_secret();
    Sink sink_a, sink_b, sink_c;
    auto options_a = options_for(0, secret, TlsMode::always);
    options_a.certificates = cluster.issue("a");
    auto options_b = options_for(1, secret, TlsMode::always);
    options_b.certificates = cluster.issue("b");
    DataPlane a(options_a, &sink_a);
    DataPlane b(options_b, &sink_b);
    testing::PathTap tap(b.port());
    a.connect(1, "127.0.0.1", tap.port());
    auto values = pattern(100000, 7.0f);
    a.send(1, ChunkHeader{1, 0, 1, 0, 0, 0}, values->data(), values->size() * sizeof(float), values);
    REQUIRE(sink_b.wait_messages(1));
    CHECK(sink_b.received()[0].second == *values);
    CHECK_FALSE(testing::contains(tap.from_client(), values->data() + 5000, 8 * sizeof(float)));
    // It holds the secret, but its certificate is another CA's: the TLS handshake fails.
    auto options_c = options_for(2, secret, TlsMode::always);
    options_c.certificates = other.issue("c");
    DataPlane c(options_c, &sink_c);
    testing::LogCapture log;
    CHECK(connect_error(c, 1, b.port()) != "<connected>");
    CHECK(!c.connected(1));
    CHECK(eventually([&] { return b.stats().refused_tls == 1; }));
    CHECK(sink_b.received().size() == 1);
  }

  TEST_CASE("certificates: an incomplete set, a key others may read, a key of another certificate are named") {
    testing::TempDir dir;
    testing::CertificateAuthority cluster(dir.path(), "cluster");
    const std::array<std::string_view, 3> names{"--certificate", "--key", "--ca-file"};
    auto error_of = [&](const TlsCertificates& c) -> std::string {
      try {
        check_certificates(c, names);
      } catch (const Error& e) {
        return e.what();
      }
      return "<accepted>";
    };
    const TlsCertificates good = cluster.issue("a"), second = cluster.issue("b");
    CHECK(error_of(good) == "<accepted>");
    CHECK(error_of({}) == "<accepted>");  // none: the pre-shared key
    CHECK(error_of({good.certificate, "", good.ca_file}) ==
          "--key is missing: certificates need all three of --certificate, --key and --ca-file");
    CHECK(error_of({good.certificate, second.key, good.ca_file}).find("does not belong to the certificate") !=
          std::string::npos);
    const auto garbage = dir.write("garbage.pem", "not a certificate\n");
    CHECK(error_of({garbage.string(), good.key, good.ca_file}).find("cannot use the certificate") != std::string::npos);
    ::chmod(good.key.c_str(), 0644);
    const std::string readable = error_of(good);
    CHECK(readable.find("--key: the TLS private key file") != std::string::npos);
    CHECK(readable.find("chmod 600") != std::string::npos);
  }
}
