// Point-to-point tensor throughput between two processes on loopback: the
// data plane (transport/data_plane.hpp: handshake, framed messages, gather
// writes from the sender's tensor, reads straight into the receiver's) against
// a plain blocking TCP socket copy of the same bytes (write() from one buffer,
// read() into one buffer). The sender is a forked child; the receiver times
// from the first byte to the last.
//
//   bench_transport [--mb=1,16,64] [--total-mb=1024] [--runs=5] [--fresh=0|1] [--tls=off,always]
//
// --fresh=1 lands every message in a newly allocated buffer (as the shard
// actors' receive path does) instead of reusing one.
// --tls=MODE,... measures the data plane once per TLS mode (transport/tls.hpp)
// instead of with its defaults, each through the socket (no same-host reads or
// channel, which would bypass it), the modes' runs alternating; a last column
// compares the last mode with the first.

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "transport/cluster_secret.hpp"
#include "transport/data_plane.hpp"
#include "bench/bench_args.hpp"

using namespace taihu;
using Clock = std::chrono::steady_clock;

namespace {

using taihu::bench::arg_value;
using taihu::bench::number_list;


double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The child process: runs `body`, exits with its status (never returns).
template <class F>
pid_t spawn_child(F body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    int status = 0;
    try {
      status = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "sender: %s\n", e.what());
      status = 1;
    }
    ::_exit(status);
  }
  return pid;
}

void wait_child(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("the sender process failed");
}

// Plain TCP: the child connects and writes `count` messages of `bytes` each.
double plain_socket(std::size_t bytes, std::size_t count) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || ::listen(listener, 1) != 0)
    throw std::runtime_error("cannot listen");
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  const pid_t child = spawn_child([&] {
    ::close(listener);
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) return 2;
    std::vector<char> buffer(bytes, 1);
    for (std::size_t m = 0; m < count; ++m) {
      std::size_t done = 0;
      while (done < bytes) {
        const ssize_t n = ::write(fd, buffer.data() + done, bytes - done);
        if (n <= 0) return 3;
        done += static_cast<std::size_t>(n);
      }
    }
    ::close(fd);
    return 0;
  });
  const int fd = ::accept(listener, nullptr, nullptr);
  std::vector<char> buffer(bytes);
  std::memset(buffer.data(), 0, bytes);
  std::size_t total = 0;
  Clock::time_point start;
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data() + total % bytes, bytes - total % bytes);
    if (n <= 0) break;
    if (total == 0) start = Clock::now();
    total += static_cast<std::size_t>(n);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ::close(fd);
  ::close(listener);
  wait_child(child);
  if (total != bytes * count) throw std::runtime_error("plain socket: short transfer");
  return static_cast<double>(total) / seconds;
}

class TimingSink : public transport::FrameSink {
 public:
  TimingSink(std::size_t bytes, std::size_t count, bool fresh) : count_(count), fresh_(fresh), reused_(bytes) {
    std::memset(reused_.data(), 0, bytes);
  }
  transport::Landing land(int, const transport::ChunkHeader&, std::size_t bytes) override {
    if (!started_) {
      started_ = true;
      start_ = Clock::now();
    }
    if (fresh_) {
      auto buffer = std::shared_ptr<char[]>(new char[bytes]);
      return {buffer.get(), buffer};
    }
    return {reused_.data(), nullptr};
  }
  void deliver(int, const transport::ChunkHeader&, transport::Landing) override {
    if (++delivered_ == count_) {
      std::lock_guard lock(mutex_);
      end_ = Clock::now();
      done_.notify_all();
    }
  }
  double wait_seconds() {
    std::unique_lock lock(mutex_);
    if (!done_.wait_for(lock, std::chrono::seconds(120), [&] { return delivered_ == count_; }))
      throw std::runtime_error("data plane: transfer did not finish");
    return std::chrono::duration<double>(end_ - start_).count();
  }

 private:
  std::size_t count_;
  bool fresh_;
  std::vector<char> reused_;
  bool started_ = false;
  Clock::time_point start_, end_;
  std::atomic<std::size_t> delivered_{0};
  std::mutex mutex_;
  std::condition_variable done_;
};

// mode: the TLS mode, every message through the socket; none: the data
// plane's defaults (same-host channel).
double data_plane(std::size_t bytes, std::size_t count, bool fresh, std::optional<transport::TlsMode> mode) {
  auto configure = [&](transport::DataPlaneOptions& options) {
    if (!mode) return;
    options.tls = *mode;
    options.remote_read_min_bytes = 0;
  };
  const std::string secret = transport::random_secret();
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) throw std::runtime_error("pipe");
  // Fork before any thread exists in this process; the port comes through the pipe.
  const pid_t child = spawn_child([&] {
    std::uint16_t port = 0;
    if (::read(pipe_fds[0], &port, sizeof port) != sizeof port) return 2;
    TimingSink unused(1, 1, false);
    transport::DataPlaneOptions options;
    options.node = 1;
    options.secret = secret;
    configure(options);
    transport::DataPlane plane(options, &unused);
    plane.connect(0, "127.0.0.1", port);
    auto buffer = std::make_shared<std::vector<float>>(bytes / sizeof(float), 1.0f);
    for (std::size_t m = 0; m < count; ++m)
      plane.send(0, transport::ChunkHeader{0, 1, 0, static_cast<std::uint32_t>(m), 0, 0}, buffer->data(), bytes, buffer);
    while (plane.stats().messages_sent < count) std::this_thread::sleep_for(std::chrono::microseconds(200));
    return 0;
  });
  TimingSink sink(bytes, count, fresh);
  transport::DataPlaneOptions options;
  options.node = 0;
  options.secret = secret;
  configure(options);
  double seconds;
  {
    transport::DataPlane plane(options, &sink);
    const std::uint16_t port = plane.port();
    (void)!::write(pipe_fds[1], &port, sizeof port);
    seconds = sink.wait_seconds();
  }
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  wait_child(child);
  return static_cast<double>(bytes * count) / seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const auto sizes = number_list(arg_value(argc, argv, "mb", "1,16,64"));
  const double total_mb = std::stod(arg_value(argc, argv, "total-mb", "1024"));
  const int runs = std::stoi(arg_value(argc, argv, "runs", "5"));
  const bool fresh = arg_value(argc, argv, "fresh", "0") == "1";
  spdlog::set_level(spdlog::level::err);  // not tls = off's warning in every run's table
  std::vector<std::optional<transport::TlsMode>> modes;
  std::stringstream mode_list(arg_value(argc, argv, "tls", ""));
  for (std::string name; std::getline(mode_list, name, ',');) {
    const auto mode = transport::parse_tls_mode(name);
    if (!mode) {
      std::fprintf(stderr, "--tls: unknown mode '%s' (between_hosts, always, off)\n", name.c_str());
      return 2;
    }
    modes.push_back(mode);
  }
  if (modes.empty()) modes.push_back(std::nullopt);
  fmt::print("point-to-point loopback throughput, median of {} runs, {} MB per run{}\n", runs, total_mb,
             fresh ? ", fresh receive buffer per message" : "");
  std::string head = "| message MB | plain TCP GB/s |", rule = "|---|---|";
  for (const auto& mode : modes) {
    head += mode ? fmt::format(" tls = {} GB/s |", transport::tls_mode_name(*mode)) : std::string(" data plane GB/s |");
    rule += "---|";
  }
  fmt::print("{} ratio |\n{}---|\n", head, rule);
  // Before every fork: a child's log line (tls = off warns) would flush its copy of the buffer again.
  std::fflush(stdout);
  for (double mb : sizes) {
    const auto bytes = static_cast<std::size_t>(mb * 1024 * 1024) / sizeof(float) * sizeof(float);
    const auto count = std::max<std::size_t>(1, static_cast<std::size_t>(total_mb / mb));
    std::vector<double> plain;
    std::vector<std::vector<double>> ours(modes.size());
    for (int r = 0; r < runs; ++r) {
      plain.push_back(plain_socket(bytes, count));
      for (std::size_t m = 0; m < modes.size(); ++m) ours[m].push_back(data_plane(bytes, count, fresh, modes[m]));
    }
    const double p = median(plain);
    std::string row = fmt::format("| {} | {:.2f} |", mb, p / 1e9);
    for (const auto& runs_of_mode : ours) row += fmt::format(" {:.2f} |", median(runs_of_mode) / 1e9);
    // One mode: against plain TCP; several: the last against the first.
    const double ratio = modes.size() == 1 ? median(ours[0]) / p : median(ours.back()) / median(ours.front());
    fmt::print("{} {:.2f} |\n", row, ratio);
    std::fflush(stdout);
  }
  return 0;
}
