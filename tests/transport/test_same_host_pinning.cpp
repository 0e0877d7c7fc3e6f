// A same-host peer is read only where its probe proved it lives: a frame that
// names another process (a forged or buggy peer steering the receiver's
// process_vm_readv at any process of the same user) is refused with a logged
// protocol error, and nothing of that process reaches a gradient.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include "transport/cluster_secret.hpp"
#include "transport/crypto.hpp"
#include "transport/data_plane.hpp"
#include "support/data_plane_peer.hpp"
#include "support/log_capture.hpp"
#include "support/loopback.hpp"

using namespace taihu;
using namespace taihu::transport;

namespace {

class CountingSink : public FrameSink {
 public:
  Landing land(int, const ChunkHeader&, std::size_t bytes) override {
    auto buffer = std::make_shared<std::vector<char>>(bytes);
    return {buffer->data(), buffer};
  }
  void deliver(int, const ChunkHeader&, Landing) override {
    std::lock_guard lock(mutex_);
    ++delivered_;
    changed_.notify_all();
  }
  void peer_lost(int, const std::string& reason) override {
    std::lock_guard lock(mutex_);
    lost_.push_back(reason);
    changed_.notify_all();
  }
  bool wait_lost() {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(10), [&] { return !lost_.empty(); });
  }
  int delivered() {
    std::lock_guard lock(mutex_);
    return delivered_;
  }
  std::string first_loss() {
    std::lock_guard lock(mutex_);
    return lost_.empty() ? "" : lost_.front();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int delivered_ = 0;
  std::vector<std::string> lost_;
};

using testing::authenticated_client;
using testing::HandPeer;
using testing::probe;
using testing::send_all;

void send_remote_frame(int fd, std::uint32_t pid, const void* address, std::size_t bytes) {
  FrameHeader header;
  header.magic = remote_frame_magic;
  header.total_bytes = bytes;
  const RemoteSpan span{reinterpret_cast<std::uint64_t>(address), pid, 0};
  REQUIRE(send_all(fd, &header, sizeof header));
  REQUIRE(send_all(fd, &span, sizeof span));
}

DataPlaneOptions server_options(const std::string& secret) {
  DataPlaneOptions o;
  o.node = 0;
  o.secret = secret;
  o.same_host_channel = false;  // Remote frames, as a node without channels sends them
  o.tls = TlsMode::off;          // the test's frames in plaintext
  return o;
}

}  // namespace

TEST_SUITE("transport") {
  TEST_CASE("a same-host frame naming another process than the probe's is refused with a protocol error") {
    // A bystander of the same user: a child whose memory holds, at the very
    // address the frame names, bytes the peer never owned.
    static std::array<char, 64> secret_of_bystander{};
    std::strcpy(secret_of_bystander.data(), "bystander's private bytes");
    const pid_t bystander = ::fork();
    REQUIRE(bystander >= 0);
    if (bystander == 0) {
      for (;;) ::pause();
    }
    const std::string secret = random_secret();
    CountingSink sink;
    DataPlane server(server_options(secret), &sink);
    testing::LogCapture log;
    const HandPeer peer = authenticated_client(server.port(), secret, 1);
    const int fd = peer.fd;
    std::array<std::uint8_t, 32> token{};
    random_bytes(token);
    CHECK(probe(peer, token) == 1);  // this process is readable: same host, same user
    send_remote_frame(fd, static_cast<std::uint32_t>(bystander), secret_of_bystander.data(), 64);
    CHECK(sink.wait_lost());
    CHECK(sink.delivered() == 0);
    CHECK(sink.first_loss().find(fmt::format("names process {}, the probe established process {}", bystander,
                                             ::getpid())) != std::string::npos);
    CHECK(log.lines_with("protocol error from node 1") == 1);
    CHECK(testing::read_until_closed(fd, std::chrono::seconds(5)));
    ::close(fd);
    ::kill(bystander, SIGKILL);
    ::waitpid(bystander, nullptr, 0);
  }

  TEST_CASE("a same-host frame on a connection without a successful probe is refused; so is a second probe") {
    const std::string secret = random_secret();
    static std::array<char, 32> bytes{};
    // A probe that offers nothing; then a probe that fails (the token is
    // not where the span says), so no pid is trusted.
    for (const bool failed_probe : {false, true}) {
      CAPTURE(failed_probe);
      CountingSink sink;
      DataPlane server(server_options(secret), &sink);
      const HandPeer peer = authenticated_client(server.port(), secret, 1);
      const int fd = peer.fd;
      if (failed_probe) {
        std::array<std::uint8_t, 32> token{};
        random_bytes(token);
        CHECK(probe(peer, token, bytes.data()) == 0);
      } else {
        CHECK(testing::no_probe(peer) == 0);
      }
      send_remote_frame(fd, static_cast<std::uint32_t>(::getpid()), bytes.data(), bytes.size());
      CHECK(sink.wait_lost());
      CHECK(sink.delivered() == 0);
      CHECK(sink.first_loss().find("without a successful probe") != std::string::npos);
      ::close(fd);
    }
    {
      CountingSink sink;
      DataPlane server(server_options(secret), &sink);
      const HandPeer peer = authenticated_client(server.port(), secret, 1);
      const int fd = peer.fd;
      std::array<std::uint8_t, 32> token{};
      random_bytes(token);
      CHECK(probe(peer, token) == 1);
      // A second probe could re-establish another process: refused.
      FrameHeader header;
      header.magic = probe_frame_magic;
      header.total_bytes = token.size();
      REQUIRE(send_all(fd, &header, sizeof header));
      CHECK(sink.wait_lost());
      CHECK(sink.first_loss().find("a second same-host probe") != std::string::npos);
      ::close(fd);
    }
  }

  TEST_CASE("a same-host frame naming the probed process is read") {
    const std::string secret = random_secret();
    CountingSink sink;
    DataPlane server(server_options(secret), &sink);
    const HandPeer peer = authenticated_client(server.port(), secret, 1);
    const int fd = peer.fd;
    std::array<std::uint8_t, 32> token{};
    random_bytes(token);
    REQUIRE(probe(peer, token) == 1);
    static std::array<float, 16> values{};
    send_remote_frame(fd, static_cast<std::uint32_t>(::getpid()), values.data(), sizeof values);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (sink.delivered() == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(sink.delivered() == 1);
    std::uint64_t ack = 99;
    CHECK(testing::receive_all(fd, &ack, sizeof ack));  // the frame's number, 0: its memory may go
    CHECK(ack == 0);
    ::close(fd);
  }
}
