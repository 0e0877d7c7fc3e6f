// The Asio data plane (actors/net): SHA-256 / HMAC against published vectors,
// framed and chunked transfer over loopback, the handshake's refusals (wrong
// secret, wrong version, garbage bytes) with the listener still serving, lost
// peers, a sender in another process, same-host messages read in place
// (released when read; a killed sender's memory is reported unreadable) and
// the same-host channel (polled, or woken by doorbells; a full ring) and the
// shared arena its messages are read from in place.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <csignal>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <cstring>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "transport/cluster_secret.hpp"
#include "transport/data_plane.hpp"
#include "transport/shared_arena.hpp"
#include "transport/shm_channel.hpp"
#include "transport/status_server.hpp"
#include "support/eventually.hpp"
#include "support/log_capture.hpp"
#include "support/loopback.hpp"

using namespace taihu;
using namespace taihu::transport;

namespace {

struct Received {
  int from;
  ChunkHeader header;
  std::vector<float> values;
};

// Collects messages; waits for them with a deadline.
class CollectingSink : public FrameSink {
 public:
  Landing land(int, const ChunkHeader&, std::size_t bytes) override {
    auto buffer = std::make_shared<std::vector<float>>(bytes / sizeof(float));
    return {buffer->data(), buffer};
  }
  void deliver(int from, const ChunkHeader& header, Landing landing) override {
    auto values = std::static_pointer_cast<std::vector<float>>(landing.owner);
    std::lock_guard lock(mutex_);
    received_.push_back({from, header, std::move(*values)});
    changed_.notify_all();
  }
  void peer_lost(int node, const std::string& reason) override {
    std::lock_guard lock(mutex_);
    lost_.push_back(node);
    lost_reasons_.push_back(reason);
    changed_.notify_all();
  }
  bool wait_messages(std::size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return received_.size() >= n; });
  }
  bool wait_lost(std::size_t n, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return lost_.size() >= n; });
  }
  std::vector<Received> received() {
    std::lock_guard lock(mutex_);
    return received_;
  }
  std::vector<int> lost() {
    std::lock_guard lock(mutex_);
    return lost_;
  }
  std::vector<std::string> lost_reasons() {
    std::lock_guard lock(mutex_);
    return lost_reasons_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Received> received_;
  std::vector<int> lost_;
  std::vector<std::string> lost_reasons_;
};

// Keeps same-host messages where they are, to be read later by the test.
class InPlaceSink : public CollectingSink {
 public:
  bool take_remote(int, const ChunkHeader& header, RemoteMessage message) override {
    std::lock_guard lock(mutex_);
    taken_.push_back({header, std::move(message)});
    changed_.notify_all();
    return true;
  }
  bool wait_taken(std::size_t n) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(10), [&] { return taken_.size() >= n; });
  }
  std::vector<std::pair<ChunkHeader, RemoteMessage>> take() {
    std::lock_guard lock(mutex_);
    return std::move(taken_);
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::pair<ChunkHeader, RemoteMessage>> taken_;
};

DataPlaneOptions options_for(int node, const std::string& secret) {
  DataPlaneOptions o;
  o.node = node;
  o.secret = secret;
  o.handshake_timeout = std::chrono::milliseconds(300);
  return o;
}

using taihu::testing::eventually;

std::string connect_error(DataPlane& client, int node, std::uint16_t port) {
  try {
    client.connect(node, "127.0.0.1", port);
  } catch (const NetError& e) {
    return e.what();
  }
  return "<connected>";
}

// Writes `bytes` to the port and waits for the server to close.
bool server_closes_after(std::uint16_t port, const std::vector<char>& bytes) {
  const int fd = testing::connect_loopback(port);
  if (fd < 0) return false;
  if (!bytes.empty()) (void)!::write(fd, bytes.data(), bytes.size());
  const bool closed = testing::read_until_closed(fd, std::chrono::seconds(5));
  ::close(fd);
  return closed;
}

// Sends `request` to the port and returns everything the server answers.
std::string http_exchange(std::uint16_t port, const std::string& request) {
  const int fd = testing::connect_loopback(port);
  if (fd < 0) return "<no connection>";
  (void)!::write(fd, request.data(), request.size());
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

// Forks a peer process that runs `body(port)` (its exit status) once the
// parent has told it the server's port (tell_port): the parent starts the
// server, and its I/O thread, after the fork. A child forked while another
// thread holds an allocator lock hangs in its first malloc (AddressSanitizer's
// allocator in GCC 12 takes no lock around fork), so nothing but idle threads
// may run at the fork.
template <class Body>
pid_t fork_peer(int& port_writer, Body body) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(fds[1]);
    std::uint16_t port = 0;
    if (::read(fds[0], &port, sizeof port) != static_cast<ssize_t>(sizeof port)) ::_exit(4);
    ::_exit(body(port));
  }
  ::close(fds[0]);
  port_writer = fds[1];
  return child;
}

void tell_port(int port_writer, std::uint16_t port) {
  REQUIRE(::write(port_writer, &port, sizeof port) == static_cast<ssize_t>(sizeof port));
  ::close(port_writer);
}

}  // namespace

TEST_SUITE("net") {
  TEST_CASE("the status server answers GET for its pages and refuses the rest") {
    int renders = 0;
    StatusServer server("127.0.0.1", 0,
                        {{"/metrics", {"text/plain; version=0.0.4", [&] { return "taihu_iteration " + std::to_string(++renders) + "\n"; }}},
                         {"/boom", {"text/plain", []() -> std::string { throw std::runtime_error("no data"); }}}});
    const std::string ok = http_exchange(server.port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(ok.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
    CHECK(ok.find("Content-Type: text/plain; version=0.0.4\r\n") != std::string::npos);
    CHECK(ok.find("Content-Length: 18\r\n") != std::string::npos);
    CHECK(ok.ends_with("\r\n\r\ntaihu_iteration 1\n"));
    CHECK(http_exchange(server.port(), "GET /metrics?x=1 HTTP/1.0\r\n\r\n").ends_with("taihu_iteration 2\n"));
    CHECK(http_exchange(server.port(), "GET /other HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0) == 0);
    CHECK(http_exchange(server.port(), "POST /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0) == 0);
    CHECK(http_exchange(server.port(), "hello there\r\n\r\n").rfind("HTTP/1.1 400", 0) == 0);
    const std::string failed = http_exchange(server.port(), "GET /boom HTTP/1.1\r\n\r\n");
    CHECK(failed.rfind("HTTP/1.1 500", 0) == 0);
    CHECK(failed.find("no data") != std::string::npos);
    CHECK(http_exchange(server.port(), std::string(9000, 'x')).rfind("HTTP/1.1 431", 0) == 0);
  }

  TEST_CASE("messages arrive whole, in order, split into frames and straight from the sender's memory") {
    // Through the socket only; with the large messages read across
    // processes' memory (here: the same process, which the probe accepts);
    // and with every message's descriptor in the same-host channel. The
    // first two run TLS.
    for (const int mode : {0, 1, 2}) {
      CAPTURE(mode);
      const std::size_t remote_min = mode == 0 ? 0 : std::size_t{64} << 10;
      const std::string secret = random_secret();
      CollectingSink sink_a, sink_b;
      auto options_a = options_for(0, secret);
      options_a.part_bytes = 1000;  // forces multi-frame messages
      options_a.remote_read_min_bytes = remote_min;
      options_a.same_host_channel = mode == 2;
      DataPlane a(options_a, &sink_a);
      DataPlane b(options_for(1, secret), &sink_b);
      a.connect(1, "127.0.0.1", b.port());
      CHECK(a.connected(1));
      const std::vector<std::size_t> sizes{0, 1, 250, 251, 2501, 100000, 3, 70000};
      std::vector<std::weak_ptr<std::vector<float>>> kept;
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        auto values = std::make_shared<std::vector<float>>(sizes[i]);
        std::iota(values->begin(), values->end(), static_cast<float>(i) * 1000.0f);
        kept.push_back(values);
        ChunkHeader h{7, 0, 1, static_cast<std::uint32_t>(i), 42, 100 * i};
        a.send(1, h, values->data(), values->size() * sizeof(float), values);
      }
      REQUIRE(sink_b.wait_messages(sizes.size()));
      const auto got = sink_b.received();
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        CAPTURE(i);
        CHECK(got[i].from == 0);
        CHECK(got[i].header.bucket == 7);
        CHECK(got[i].header.receiver == 1);
        CHECK(got[i].header.seq == i);
        CHECK(got[i].header.iteration == 42);
        CHECK(got[i].header.offset == 100 * i);
        std::vector<float> expected(sizes[i]);
        std::iota(expected.begin(), expected.end(), static_cast<float>(i) * 1000.0f);
        CHECK(got[i].values == expected);
      }
      // The data plane released each sender buffer once written (or, read
      // remotely, once the receiver acknowledged it).
      CHECK(eventually([&] {
        for (auto& w : kept)
          if (!w.expired()) return false;
        return true;
      }));
      const std::size_t total = std::accumulate(sizes.begin(), sizes.end(), std::size_t{0}) * sizeof(float);
      CHECK(eventually([&] { return a.stats().bytes_sent == total; }));
      const auto sa = a.stats(), sb = b.stats();
      CHECK(sa.messages_sent == sizes.size());
      CHECK(sb.bytes_received == total);
      CHECK(sb.messages_received == sizes.size());
      CHECK(sb.messages_read_remotely == (mode == 0 ? 0u : mode == 1 ? 2u : sizes.size()));  // 1: 400 and 280 KB
      CHECK(a.channels() == (mode == 2 ? 1 : 0));
      CHECK(sb.accepted == 1);
      // tls = between_hosts (the default): TLS unless the connection has a same-host channel.
      CHECK(sa.tls_connections == (mode == 2 ? 0u : 1u));
      CHECK(sb.tls_connections == sa.tls_connections);
    }
  }

  TEST_CASE("a same-host message is read where it is consumed; its memory is released when its reader is done") {
    for (const bool channel : {false, true}) {
    CAPTURE(channel);
    const std::string secret = random_secret();
    CollectingSink sink_a;
    InPlaceSink sink_b;
    auto options_a = options_for(0, secret);
    options_a.same_host_channel = channel;
    DataPlane a(options_a, &sink_a);
    DataPlane b(options_for(1, secret), &sink_b);
    a.connect(1, "127.0.0.1", b.port());
    // Floats; without a channel, 100 goes through the socket.
    const std::vector<std::size_t> sizes{20000, 100, 30000, 50000};
    std::vector<std::weak_ptr<std::vector<float>>> kept;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      auto values = std::make_shared<std::vector<float>>(sizes[i]);
      std::iota(values->begin(), values->end(), static_cast<float>(i) * 100000.0f);
      kept.push_back(values);
      a.send(1, ChunkHeader{1, 0, 1, static_cast<std::uint32_t>(i), 5, 0}, values->data(),
             values->size() * sizeof(float), values);
    }
    const std::size_t remote = channel ? 4 : 3;
    REQUIRE(sink_b.wait_taken(remote));
    if (!channel) {
      REQUIRE(sink_b.wait_messages(1));
      CHECK(sink_b.received()[0].header.seq == 1);
    }
    auto taken = sink_b.take();
    REQUIRE(taken.size() == remote);
    // Nothing was copied yet, so the sender still holds every large buffer.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(!kept[0].expired());
    CHECK(!kept[2].expired());
    CHECK(!kept[3].expired());
    // Read in reverse order, in pieces, and release one by one: the sender
    // frees exactly the buffer whose reader is done.
    for (std::size_t k = taken.size(); k-- > 0;) {
      auto& [header, message] = taken[k];
      const std::size_t i = header.seq;
      CAPTURE(i);
      REQUIRE(message.bytes() == sizes[i] * sizeof(float));
      std::vector<float> got(sizes[i]);
      const std::size_t half = sizes[i] / 2;
      message.read(half * sizeof(float), (sizes[i] - half) * sizeof(float), got.data() + half);
      message.read(0, half * sizeof(float), got.data());
      std::vector<float> expected(sizes[i]);
      std::iota(expected.begin(), expected.end(), static_cast<float>(i) * 100000.0f);
      CHECK(got == expected);
      CHECK_THROWS_AS(message.read(1, message.bytes(), got.data()), NetError);
      CHECK(!kept[i].expired());
      taken[k].second = RemoteMessage{};  // done: acknowledge
      CHECK(eventually([&] { return kept[i].expired(); }));
      for (std::size_t j = 0; j < k; ++j) CHECK(!kept[taken[j].first.seq].expired());
    }
    const std::size_t total = std::accumulate(sizes.begin(), sizes.end(), std::size_t{0}) * sizeof(float);
    CHECK(eventually([&] { return a.stats().bytes_sent == total; }));
    CHECK(b.stats().messages_read_remotely == remote);
    }
  }

  TEST_CASE("a same-host channel's rings keep order, fill up, wrap around, and refuse what is not a channel") {
    auto sender = ShmChannel::create();
    REQUIRE(sender->fd() >= 0);
    auto receiver = ShmChannel::open(static_cast<std::uint32_t>(::getpid()), static_cast<std::uint32_t>(sender->fd()));
    bool corrupt = false;
    CHECK(!receiver->pop_message(&corrupt));
    // Three times around the ring, a full ring's worth at a time.
    std::uint64_t next = 0, expected = 0;
    for (int lap = 0; lap < 3; ++lap) {
      while (sender->push_message(MessageDescriptor{ChunkHeader{}, 0x1000, 4, next, 0})) ++next;
      CHECK(next == (lap + 1) * std::uint64_t{ShmChannel::message_slots});
      while (auto m = receiver->pop_message(&corrupt)) CHECK(m->number == expected++);
      CHECK(expected == next);
    }
    CHECK(!corrupt);
    // Acknowledgements go the other way.
    for (std::uint64_t a = 0; a < 5; ++a) CHECK(receiver->push_ack(a * 7));
    for (std::uint64_t a = 0; a < 5; ++a) CHECK(sender->pop_ack(&corrupt) == a * 7);
    CHECK(!sender->pop_ack(&corrupt));
    // A doorbell is rung once until the consumer clears it, and never while it polls.
    CHECK(needs_bell(receiver->receiver_polling(), receiver->message_bell()));
    CHECK(!needs_bell(sender->receiver_polling(), sender->message_bell()));
    receiver->message_bell().store(0);
    receiver->receiver_polling().store(1);
    CHECK(!needs_bell(sender->receiver_polling(), sender->message_bell()));
    // Not a channel: a descriptor of the wrong kind, or no such descriptor.
    CHECK_THROWS_AS(ShmChannel::open(static_cast<std::uint32_t>(::getpid()), 0), NetError);
    CHECK_THROWS_AS(ShmChannel::open(static_cast<std::uint32_t>(::getpid()), 100000), NetError);
    // Sealed at its size (neither side's loads can fault); an unsealed copy
    // of the same segment is refused.
    CHECK(::ftruncate(sender->fd(), 0) != 0);
    struct stat st {};
    REQUIRE(::fstat(sender->fd(), &st) == 0);
    std::vector<char> bytes(static_cast<std::size_t>(st.st_size));
    REQUIRE(::pread(sender->fd(), bytes.data(), bytes.size(), 0) == st.st_size);
    const int unsealed = ::memfd_create("not-a-channel", MFD_CLOEXEC);
    REQUIRE(unsealed >= 0);
    REQUIRE(::pwrite(unsealed, bytes.data(), bytes.size(), 0) == st.st_size);
    CHECK_THROWS_AS(ShmChannel::open(static_cast<std::uint32_t>(::getpid()), static_cast<std::uint32_t>(unsealed)),
                    NetError);
    ::close(unsealed);
  }

  TEST_CASE("the shared arena hands out, merges and reuses its space; a peer maps it read-only") {
    SharedArena& arena = SharedArena::install();
    CHECK(SharedArena::installed() == &arena);
    const std::size_t before = arena.used_bytes();
    auto* a = static_cast<float*>(arena.allocate(100000));  // rounds up to two granules
    auto* b = static_cast<float*>(arena.allocate(SharedArena::granule));
    REQUIRE(a != nullptr);
    REQUIRE(b != nullptr);
    CHECK(arena.used_bytes() == before + 3 * SharedArena::granule);
    std::iota(a, a + 25000, 0.0f);
    std::iota(b, b + SharedArena::granule / sizeof(float), 7.0f);
    // A mapping of the arena (here: this process's own) sees the same floats, read-only.
    auto view = ArenaView::open(static_cast<std::uint32_t>(::getpid()), static_cast<std::uint32_t>(arena.fd()),
                                arena.base());
    const auto* seen = static_cast<const float*>(view->at(reinterpret_cast<std::uint64_t>(a), 100000));
    REQUIRE(seen != nullptr);
    CHECK(seen != a);
    CHECK(seen[24999] == 24999.0f);
    a[5] = -1.0f;
    CHECK(seen[5] == -1.0f);  // shared, not a copy
    CHECK(view->at(arena.base() - 4, 8) == nullptr);
    CHECK(view->at(arena.base() + SharedArena::reserved_bytes - 4, 8) == nullptr);
    // Released space is merged and handed out again.
    arena.release(a, 100000);
    auto* c = static_cast<float*>(arena.allocate(2 * SharedArena::granule));
    CHECK(c == a);
    arena.release(b, SharedArena::granule);
    arena.release(c, 2 * SharedArena::granule);
    CHECK(arena.used_bytes() == before);
    CHECK_THROWS(ArenaView::open(static_cast<std::uint32_t>(::getpid()), 0, 0));
    // Sealed at its size: not even the owner can cut pages from under a
    // reader's mapping, and a reader refuses a memfd that is not sealed so.
    CHECK(sealed_at_size(arena.fd()));
    CHECK(::ftruncate(arena.fd(), 0) != 0);
    const int unsealed = ::memfd_create("not-an-arena", MFD_CLOEXEC);
    REQUIRE(unsealed >= 0);
    REQUIRE(::ftruncate(unsealed, static_cast<off_t>(SharedArena::reserved_bytes)) == 0);
    CHECK(!sealed_at_size(unsealed));
    CHECK_THROWS_WITH(ArenaView::open(static_cast<std::uint32_t>(::getpid()), static_cast<std::uint32_t>(unsealed), 0),
                      doctest::Contains("not sealed"));
    ::close(unsealed);
  }

  TEST_CASE("a child made by fork() writes to a private copy of its parent's arena and installs its own") {
    SharedArena& arena = SharedArena::install();
    auto* mine = static_cast<float*>(arena.allocate(SharedArena::granule));
    REQUIRE(mine != nullptr);
    mine[0] = 1.0f;
    const pid_t child = ::fork();
    if (child == 0) {
      mine[0] = 2.0f;  // the parent must not see this
      const bool fresh = SharedArena::installed() == nullptr && &SharedArena::install() != &arena;
      ::_exit(fresh ? 0 : 1);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    CHECK(mine[0] == 1.0f);
    arena.release(mine, SharedArena::granule);
  }

  TEST_CASE("a message in the sender's shared arena is read in place, through a read-only mapping") {
    const std::string secret = random_secret();
    CollectingSink sink_a;
    InPlaceSink sink_b;
    DataPlane a(options_for(0, secret), &sink_a);  // installs the arena
    DataPlane b(options_for(1, secret), &sink_b);
    a.connect(1, "127.0.0.1", b.port());
    SharedArena* arena = SharedArena::installed();
    REQUIRE(arena != nullptr);
    const std::size_t n = 50000;
    std::shared_ptr<float> in_arena(static_cast<float*>(arena->allocate(n * sizeof(float))),
                                    [arena](float* p) { arena->release(p, n * sizeof(float)); });
    std::iota(in_arena.get(), in_arena.get() + n, 3.0f);
    auto on_heap = std::make_shared<std::vector<float>>(n, 5.0f);
    a.send(1, ChunkHeader{1, 0, 1, 0, 0, 0}, in_arena.get(), n * sizeof(float), in_arena);
    a.send(1, ChunkHeader{1, 0, 1, 1, 0, 0}, on_heap->data(), n * sizeof(float), on_heap);
    REQUIRE(sink_b.wait_taken(2));
    auto taken = sink_b.take();
    REQUIRE(taken.size() == 2);
    const auto* mapped = static_cast<const float*>(taken[0].second.data());
    REQUIRE(mapped != nullptr);  // readable where it is
    CHECK(mapped != in_arena.get());
    CHECK(mapped[0] == 3.0f);
    CHECK(mapped[n - 1] == 3.0f + static_cast<float>(n - 1));
    std::vector<float> copy(n);
    taken[0].second.read(0, n * sizeof(float), copy.data());
    CHECK(copy[n - 1] == mapped[n - 1]);
    CHECK(taken[1].second.data() == nullptr);  // heap memory: read through the kernel
    taken[1].second.read(0, n * sizeof(float), copy.data());
    CHECK(copy[n - 1] == 5.0f);
  }

  TEST_CASE("a receiver that polls takes same-host messages itself; one that does not is woken by a doorbell") {
    const std::string secret = random_secret();
    CollectingSink sink_a, sink_b;
    DataPlane a(options_for(0, secret), &sink_a);
    DataPlane b(options_for(1, secret), &sink_b);
    a.connect(1, "127.0.0.1", b.port());
    REQUIRE(a.channels() == 1);
    REQUIRE(eventually([&] { return b.channels() == 1; }));
    std::uint32_t seq = 0;
    std::vector<std::weak_ptr<std::vector<float>>> kept;
    auto send = [&](std::size_t floats) {
      auto values = std::make_shared<std::vector<float>>(floats);
      std::iota(values->begin(), values->end(), static_cast<float>(seq));
      kept.push_back(values);
      a.send(1, ChunkHeader{3, 0, 1, seq++, 9, 0}, values->data(), values->size() * sizeof(float), values);
    };
    auto all_released = [&] {
      for (auto& w : kept)
        if (!w.expired()) return false;
      return true;
    };

    // b holds polling: a rings no bell, so nothing arrives until b polls.
    b.hold_polling(true);
    for (std::size_t floats : {1, 1000, 100000}) send(floats);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(sink_b.received().empty());
    CHECK(b.poll() == 3);
    const auto polled = sink_b.received();
    REQUIRE(polled.size() == 3);  // delivered on this thread, before poll() returned
    for (std::uint32_t i = 0; i < 3; ++i) {
      const auto& got = polled[i];
      CHECK(got.header.seq == i);
      CHECK(got.values.front() == static_cast<float>(i));
      CHECK(got.values.back() == static_cast<float>(i) + static_cast<float>(got.values.size() - 1));
    }
    CHECK(a.stats().doorbells_sent == 0);
    CHECK(b.stats().messages_polled == 3);
    // a does not poll: b's acknowledgements ring a's bell, and a's I/O thread frees the memory.
    CHECK(eventually(all_released));
    CHECK(b.stats().doorbells_sent >= 1);

    // Released: the next message wakes b's I/O thread.
    b.hold_polling(false);
    send(10);
    REQUIRE(sink_b.wait_messages(4));
    CHECK(a.stats().doorbells_sent == 1);
    CHECK(b.stats().messages_polled == 3);

    // More messages than the ring holds while b neither polls nor listens:
    // the rest wait at a, in order, and follow as b makes room. (First let
    // b's I/O thread finish the drain that delivered the last message.)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    b.hold_polling(true);
    const std::size_t many = ShmChannel::message_slots + 500;
    for (std::size_t i = 0; i < many; ++i) send(2);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(sink_b.received().size() == 4);
    // a holds too: b's acknowledgements wait in the ring until a polls.
    a.hold_polling(true);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (sink_b.received().size() < 4 + many && std::chrono::steady_clock::now() < deadline) {
      b.poll();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    const auto got = sink_b.received();
    REQUIRE(got.size() == 4 + many);
    for (std::uint32_t i = 0; i < got.size(); ++i) CHECK(got[i].header.seq == i);
    CHECK(!all_released());
    a.poll();
    CHECK(all_released());
    a.hold_polling(false);
    b.hold_polling(false);
    const auto sa = a.stats();
    CHECK(sa.messages_sent == 4 + many);
    CHECK(b.stats().messages_read_remotely == 4 + many);
  }

  TEST_CASE("garbage in a same-host channel's rings drops that connection with a protocol error; the rest go on") {
    // The newest channel segment of this process (a connection's, made by connect()).
    auto newest_channel = [] {
      int newest = -1;
      for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        const auto target = std::filesystem::read_symlink(entry.path(), ec).string();
        if (!ec && target.find("memfd:taihu-channel") != std::string::npos)
          newest = std::max(newest, std::stoi(entry.path().filename().string()));
      }
      REQUIRE(newest >= 0);
      return ShmChannel::open(static_cast<std::uint32_t>(::getpid()), static_cast<std::uint32_t>(newest));
    };
    const std::string secret = random_secret();
    CollectingSink sink_a, sink_b, sink_c;
    DataPlane a(options_for(0, secret), &sink_a);
    DataPlane b(options_for(1, secret), &sink_b);
    DataPlane c(options_for(2, secret), &sink_c);
    // A descriptor out of sequence, as if a (buggy or hostile) sender wrote it.
    a.connect(1, "127.0.0.1", b.port());
    REQUIRE(eventually([&] { return b.channels() == 1; }));
    auto forged = newest_channel();
    REQUIRE(forged->push_message(MessageDescriptor{ChunkHeader{}, 0x1000, 4, 999, 0}));
    b.poll();
    CHECK(sink_b.wait_lost(1));
    CHECK(sink_a.wait_lost(1));
    CHECK(sink_b.received().empty());
    // Reported once: the doorbell read still pending when the poller's error
    // closed the connection completes afterwards, aborted, with nothing new.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(sink_b.lost().size() == 1);
    // An acknowledgement of a message never sent, back to c.
    c.connect(1, "127.0.0.1", b.port());
    REQUIRE(eventually([&] { return b.channels() == 1 && c.channels() == 1; }));
    auto values = std::make_shared<std::vector<float>>(10, 2.0f);
    c.send(1, ChunkHeader{1, 2, 1, 0, 0, 0}, values->data(), values->size() * sizeof(float), values);
    REQUIRE(sink_b.wait_messages(1));  // b, the listener, still serves
    auto forged_ack = newest_channel();
    REQUIRE(forged_ack->push_ack(12345));
    c.poll();
    CHECK(sink_c.wait_lost(1));
  }

  TEST_CASE("a wrong secret, another protocol version and garbage bytes are refused; the listener keeps serving") {
    const std::string secret = random_secret();
    CollectingSink server_sink, client_sink;
    DataPlane server(options_for(0, secret), &server_sink);

    DataPlane stranger(options_for(5, "not the secret"), &client_sink);
    const std::string wrong_secret = connect_error(stranger, 0, server.port());
    CHECK(wrong_secret.find("wrong cluster secret") != std::string::npos);
    CHECK_FALSE(stranger.connected(0));

    auto other_version = options_for(6, secret);
    other_version.version = protocol_version + 1;
    DataPlane newer(other_version, &client_sink);
    const std::string wrong_version = connect_error(newer, 0, server.port());
    CHECK(wrong_version.find("protocol version mismatch") != std::string::npos);

    std::vector<char> garbage(200);
    for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<char>(i * 37 + 11);
    CHECK(server_closes_after(server.port(), garbage));
    const std::string http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    CHECK(server_closes_after(server.port(), std::vector<char>(http.begin(), http.end())));
    // A client that says nothing is dropped after the handshake timeout.
    CHECK(server_closes_after(server.port(), {}));

    CHECK(eventually([&] {
      const auto s = server.stats();
      return s.refused_secret == 1 && s.refused_version == 1 && s.refused_garbage == 3;  // two strangers, one silent
    }));
    // Nothing reached the sink, and an honest node still gets in.
    DataPlane friendly(options_for(7, secret), &client_sink);
    friendly.connect(0, "127.0.0.1", server.port());
    const std::vector<float> values{1.5f, 2.5f};
    friendly.send(0, ChunkHeader{1, 7, 0, 0, 3, 0}, values.data(), sizeof(float) * 2, nullptr);
    REQUIRE(server_sink.wait_messages(1));
    CHECK(server_sink.received().size() == 1);
    CHECK(server_sink.received()[0].from == 7);
    CHECK(server_sink.received()[0].values == values);
    CHECK(server.stats().accepted == 1);
  }

  TEST_CASE("refused connections are logged at most once a second, with a count of the rest") {
    // Before: one warning per refused connection (200 lines for 200 strangers).
    const std::string secret = random_secret();
    CollectingSink server_sink;
    DataPlane server(options_for(0, secret), &server_sink);
    testing::LogCapture log;
    const std::vector<char> garbage(64, 'x');
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 60; ++i) CHECK(server_closes_after(server.port(), garbage));
    CHECK(eventually([&] { return server.stats().refused_garbage == 60; }));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const int lines = log.lines_with("refused connection from");
    CAPTURE(seconds);
    CHECK(lines >= 1);
    CHECK(lines <= static_cast<int>(seconds) + 2);
  }

  TEST_CASE("a client that does not hold the secret learns nothing about the server's") {
    // The server proves itself only after the client proved itself: a client
    // with a wrong secret sees a refusal, never a Welcome digest.
    const std::string secret = random_secret();
    CollectingSink s1, s2;
    DataPlane server(options_for(0, secret), &s1);
    DataPlane client(options_for(1, secret + "x"), &s2);
    CHECK(connect_error(client, 0, server.port()).find("refused by the server") != std::string::npos);
  }

  TEST_CASE("connecting to a port nobody listens on fails with a message") {
    CollectingSink sink;
    DataPlane a(options_for(0, "s"), &sink);
    std::uint16_t free_port;
    {
      CollectingSink s;
      DataPlane gone(options_for(1, "s"), &s);
      free_port = gone.port();
    }
    const std::string error = connect_error(a, 1, free_port);
    CHECK(error.find("cannot connect to node 1") != std::string::npos);
    CHECK_THROWS_AS(a.send(1, ChunkHeader{}, nullptr, 0, nullptr), NetError);
  }

  TEST_CASE("both sides notice a lost peer") {
    const std::string secret = random_secret();
    CollectingSink sink_a, sink_b;
    auto a = std::make_unique<DataPlane>(options_for(0, secret), &sink_a);
    auto b = std::make_unique<DataPlane>(options_for(1, secret), &sink_b);
    a->connect(1, "127.0.0.1", b->port());
    b->connect(0, "127.0.0.1", a->port());
    b.reset();
    REQUIRE(sink_a.wait_lost(2));  // its outbound and its inbound connection
    for (int node : sink_a.lost()) CHECK(node == 1);
  }

  TEST_CASE("a sender in another process") {
    const std::string secret = random_secret();
    const std::size_t n = 3'000'000;  // 12 MB, several frames
    int port_pipe = -1;
    const pid_t child = fork_peer(port_pipe, [&](std::uint16_t port) {
      int status = 1;
      try {
        CollectingSink child_sink;
        DataPlane client(options_for(1, secret), &child_sink);
        client.connect(0, "127.0.0.1", port);
        auto values = std::make_shared<std::vector<float>>(n);
        for (std::size_t i = 0; i < n; ++i) (*values)[i] = static_cast<float>(i % 1000) * 0.5f;
        client.send(0, ChunkHeader{3, 1, 0, 9, 5, 0}, values->data(), n * sizeof(float), values);
        status = eventually([&] { return client.stats().messages_sent == 1; }, std::chrono::seconds(20)) ? 0 : 2;
      } catch (...) {
        status = 3;
      }
      return status;
    });
    CollectingSink sink;
    DataPlane server(options_for(0, secret), &sink);
    tell_port(port_pipe, server.port());
    const bool got = sink.wait_messages(1, std::chrono::seconds(30));
    int status = -1;
    ::waitpid(child, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    REQUIRE(got);
    const auto r = sink.received()[0];
    CHECK(r.from == 1);
    CHECK(r.header.seq == 9);
    REQUIRE(r.values.size() == n);
    bool same = true;
    for (std::size_t i = 0; i < n; ++i) same = same && r.values[i] == static_cast<float>(i % 1000) * 0.5f;
    CHECK(same);
  }

  TEST_CASE("a message left in a killed sender's memory: reading it fails naming the node, which is reported lost") {
    const std::string secret = random_secret();
    const std::size_t n = 100'000;
    int port_pipe = -1;
    const pid_t child = fork_peer(port_pipe, [&](std::uint16_t port) {
      try {
        CollectingSink child_sink;
        DataPlane client(options_for(1, secret), &child_sink);
        client.connect(0, "127.0.0.1", port);
        auto values = std::make_shared<std::vector<float>>(n, 2.5f);
        client.send(0, ChunkHeader{3, 1, 0, 0, 5, 0}, values->data(), n * sizeof(float), values);
        for (;;) ::pause();  // until killed; the server has not read (or acknowledged) the message
      } catch (...) {
      }
      return 3;
    });
    InPlaceSink sink;
    DataPlane server(options_for(0, secret), &sink);
    tell_port(port_pipe, server.port());
    REQUIRE(sink.wait_taken(1));
    auto taken = sink.take();
    REQUIRE(taken.size() == 1);
    RemoteMessage& message = taken[0].second;
    std::vector<float> got(n);
    message.read(0, 16, got.data());  // alive: readable
    CHECK(got[0] == 2.5f);
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    CHECK(WIFSIGNALED(status));
    try {
      message.read(0, n * sizeof(float), got.data());
      FAIL("read a dead process's memory");
    } catch (const NetError& e) {
      CHECK(std::string(e.what()).find("cannot read node 1's memory") != std::string::npos);
      // The sender is reported lost before the reader hears of it, so that a
      // cluster blames the sender, not the reader (whatever the I/O thread
      // has noticed of the closed connection by now).
      const auto reasons = sink.lost_reasons();
      CHECK(std::any_of(reasons.begin(), reasons.end(),
                        [](const std::string& r) { return r.find("cannot read node 1's memory") != std::string::npos; }));
    }
    CHECK(sink.wait_lost(1));  // and the connection's loss is reported
  }
}
