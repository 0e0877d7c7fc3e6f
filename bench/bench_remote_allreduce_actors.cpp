// Allreduce across P processes on loopback by the shard actors over the data
// plane (actors/chunk_link/chunk_link.hpp): each process is one rank, with its own
// CAF system, its shard actor of one bucket and its data plane; chunks for
// other ranks go over authenticated TCP connections (and, between processes
// of this host, their shared-memory channels). Each run starts after a
// barrier in shared memory, as allreduce_mpi.c's after MPI_Barrier. Time per
// allreduce is the slowest rank's own start → result, as
// bench/mpi/allreduce_mpi.c times MPI (the span from the first start to the
// last result is printed too);
// algorithm bandwidth = bucket bytes / time (MPI's "algbw").
//
//   bench_remote_allreduce_actors [--ranks=4] [--mb=1,16,100] [--runs=7] [--algorithm=ring,direct]
//                                 [--poll-us=N]  (a waiting shard's polling budget; 0 = sleep at once)
//                                 [--pin=1]      (rank r on core r mod cores)
//                                 [--stats=1]    (each rank's messages: received, polled, doorbells)
//                                 [--tls=between_hosts,always,off]  ([cluster] tls; several alternate)
//                                 [--same-host=0]  (no same-host channels or reads: every byte
//                                                   through the sockets, as between hosts)
//
// Compare with OpenMPI: bench/allreduce_vs_mpi.sh runs both side by side.

#include <caf/all.hpp>
#include <fmt/format.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "transport/cluster_secret.hpp"
#include "actors/chunk_link/arena_allocator.hpp"
#include "actors/chunk_link/chunk_link.hpp"
#include "collectives/algorithms.hpp"
#include "actors/sync/shard_actor.hpp"
#include "bench/bench_args.hpp"
#include "messages/type_ids.hpp"

using namespace taihu;
using Clock = std::chrono::steady_clock;

namespace {

using taihu::bench::arg_value;
using taihu::bench::number_list;


void write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::write(fd, p, n);
    if (k <= 0) throw std::runtime_error("pipe write failed");
    p += k;
    n -= static_cast<std::size_t>(k);
  }
}

void read_all(int fd, void* data, std::size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t k = ::read(fd, p, n);
    if (k <= 0) throw std::runtime_error("pipe read failed");
    p += k;
    n -= static_cast<std::size_t>(k);
  }
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// Median seconds per allreduce over the runs, measured two ways.
struct Timing {
  double slowest_rank = 0;  // the slowest rank's own start → result (as allreduce_mpi.c times MPI)
  double span = 0;          // the first rank's start → the last rank's result (adds the start skew)
};

bool pin_ranks = false;    // rank r runs on core r mod cores (--pin=1)
bool print_stats = false;  // each rank prints its data plane's counters (--stats=1)
bool same_host = true;     // same-host channels and reads (--same-host=0: none)

// A barrier across the rank processes in shared memory, as MPI_Barrier
// before MPI_Wtime in allreduce_mpi.c: the ranks start each run together
// rather than as the parent's "go" bytes wake them, one after another.
struct StartBarrier {
  std::atomic<std::uint64_t> arrived{0};
};

void wait_at(StartBarrier& barrier, int ranks, std::uint64_t run) {
  barrier.arrived.fetch_add(1);
  const std::uint64_t all = static_cast<std::uint64_t>(ranks) * (run + 1);
  while (barrier.arrived.load() < all) std::this_thread::yield();
}

// One rank's process.
int rank_main(int rank, int ranks, std::size_t elements, int runs, collectives::Algorithm algorithm, const std::string& secret,
              int poll_us, transport::TlsMode tls, StartBarrier& barrier, int from_parent, int to_parent) {
  caf::actor_system_config cfg;
  cfg.add_message_types<caf::id_block::taihu>();
  // One rank per process: never more scheduler threads than its share of the cores.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  cfg.set("scheduler.max-threads", static_cast<int>(std::max(1u, cores / static_cast<unsigned>(ranks))));
  cfg.set("scheduler.policy", caf::atom("sharing"));
  caf::actor_system system{cfg};
  transport::DataPlaneOptions options;
  options.node = rank;
  options.secret = secret;
  options.tls = tls;
  if (!same_host) {
    options.remote_read_min_bytes = 0;
    options.same_host_channel = false;
  }
  if (poll_us >= 0) options.poll_budget = std::chrono::microseconds(poll_us);
  std::vector<int> rank_node(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) rank_node[static_cast<std::size_t>(r)] = r;
  static std::atomic<bool> closing{false};
  // As a node does: the gradients and the shards' copies live in the shared
  // arena, so that the ranks on this host read each other's in place.
  const auto allocator = std::make_shared<transport::ArenaAllocator>(transport::SharedArena::install());
  auto link = std::make_shared<transport::ChunkLink>(
      options, rank_node,
      [rank](int node, const std::string& why) {
        if (!closing) std::fprintf(stderr, "rank %d lost node %d: %s\n", rank, node, why.c_str());
      },
      allocator);
  const std::uint16_t port = link->port();
  write_all(to_parent, &port, sizeof port);
  std::vector<std::uint16_t> ports(static_cast<std::size_t>(ranks));
  read_all(from_parent, ports.data(), ports.size() * sizeof(std::uint16_t));
  for (int r = 0; r < ranks; ++r)
    if (r != rank) link->plane().connect(r, "127.0.0.1", ports[static_cast<std::size_t>(r)]);

  const auto topology = collectives::Topology::uniform(ranks, collectives::Link{30e-6, 3e9}, 6e9);
  const auto schedule = collectives::make_allreduce(algorithm, topology, elements);
  auto spec = sync::shard_specs(schedule, 0)[static_cast<std::size_t>(rank)];
  const sync::shard_actor shard = sync::spawn_shard(system, std::move(spec), link);
  link->attach(0, rank, caf::actor_cast<sync::shard_actor>(shard));
  // The shard's owner is an actor on the same scheduler, as a worker actor
  // is in training: it takes the start time when it hands the gradients over
  // and the end time when they come back, so the main thread's wake-ups
  // (to start a run, to hear it ended) stay outside the measured interval.
  struct Run {
    msg::TensorPayload buffer;
    std::int64_t start = 0, end = 0;
    std::promise<void> done;
  };
  Run current;
  current.buffer = msg::TensorPayload::allocate(elements, allocator.get());
  std::fill_n(current.buffer.mutable_data(), elements, static_cast<float>(rank + 1));
  auto driver = system.spawn([shard, ranks, &barrier, &current](caf::event_based_actor* self) -> caf::behavior {
    return {
        [self, shard, ranks, &barrier, &current](std::uint64_t run) {
          wait_at(barrier, ranks, run);
          current.start = now_ns();
          self->send(shard, msg::GradientReady{0, run, std::move(current.buffer)});
        },
        [&current](msg::Reduced& r) {
          current.end = now_ns();
          current.buffer = std::move(r.buffer);
          current.done.set_value();
        },
    };
  });
  std::vector<msg::chunk_receiver> peers(static_cast<std::size_t>(ranks));
  peers[static_cast<std::size_t>(rank)] = shard;
  // The driver is untyped: it also takes the run to start.
  caf::anon_send(shard, msg::ShardInit{0, peers, caf::actor_cast<msg::reduced_receiver>(driver)});

  std::vector<std::int64_t> times;
  for (int run = 0; run < runs; ++run) {
    char c = 'r';
    write_all(to_parent, &c, 1);
    read_all(from_parent, &c, 1);  // go
    current.done = std::promise<void>{};
    auto done = current.done.get_future();
    caf::anon_send(driver, static_cast<std::uint64_t>(run));
    if (done.wait_for(std::chrono::seconds(60)) != std::future_status::ready) return 3;
    times.push_back(current.start);
    times.push_back(current.end);
  }
  const msg::TensorPayload& buffer = current.buffer;
  // Every element is sum(r + 1) * P^(runs - 1), exactly (small integers in float).
  const double expected = ranks * (ranks + 1) / 2.0 * std::pow(ranks, runs - 1);
  int status = 0;
  for (std::size_t i = 0; i < elements; i += 997)
    if (buffer[i] != static_cast<float>(expected)) status = 4;
  if (print_stats) {
    const auto st = link->plane().stats();
    std::fprintf(stderr, "rank %d: received %llu, polled %llu, doorbells sent %llu\n", rank,
                 (unsigned long long)st.messages_received, (unsigned long long)st.messages_polled,
                 (unsigned long long)st.doorbells_sent);
  }
  closing = true;  // from here on, peers leave
  write_all(to_parent, times.data(), times.size() * sizeof(std::int64_t));
  // Leave only when every rank is done: our last sends may still be queued.
  char bye;
  read_all(from_parent, &bye, 1);
  caf::anon_send_exit(shard, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(driver, caf::exit_reason::user_shutdown);
  link->detach_all();
  return status;
}

// Median seconds per allreduce (after one warm-up run).
Timing measure(int ranks, std::size_t elements, int runs, collectives::Algorithm algorithm, int poll_us,
               transport::TlsMode tls) {
  const std::string secret = transport::random_secret();
  void* shared = ::mmap(nullptr, sizeof(StartBarrier), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) throw std::runtime_error("mmap");
  auto* barrier = new (shared) StartBarrier{};
  std::vector<int> to_child(static_cast<std::size_t>(ranks)), from_child(static_cast<std::size_t>(ranks));
  std::vector<pid_t> children;
  for (int r = 0; r < ranks; ++r) {
    int down[2], up[2];
    if (::pipe(down) != 0 || ::pipe(up) != 0) throw std::runtime_error("pipe");
    const pid_t pid = ::fork();
    if (pid == 0) {
      if (pin_ranks) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(r % static_cast<int>(std::max(1u, std::thread::hardware_concurrency())), &set);
        ::sched_setaffinity(0, sizeof set, &set);
      }
      int status = 1;
      try {
        status = rank_main(r, ranks, elements, runs + 1, algorithm, secret, poll_us, tls, *barrier, down[0], up[1]);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", r, e.what());
      }
      ::_exit(status);
    }
    ::close(down[0]);
    ::close(up[1]);
    to_child[static_cast<std::size_t>(r)] = down[1];
    from_child[static_cast<std::size_t>(r)] = up[0];
    children.push_back(pid);
  }
  std::vector<std::uint16_t> ports(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) read_all(from_child[static_cast<std::size_t>(r)], &ports[static_cast<std::size_t>(r)], 2);
  for (int r = 0; r < ranks; ++r) write_all(to_child[static_cast<std::size_t>(r)], ports.data(), ports.size() * 2);
  for (int run = 0; run <= runs; ++run) {
    char c;
    for (int r = 0; r < ranks; ++r) read_all(from_child[static_cast<std::size_t>(r)], &c, 1);
    for (int r = 0; r < ranks; ++r) write_all(to_child[static_cast<std::size_t>(r)], "g", 1);
  }
  std::vector<std::vector<std::int64_t>> times(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    times[static_cast<std::size_t>(r)].resize(static_cast<std::size_t>(2 * (runs + 1)));
    read_all(from_child[static_cast<std::size_t>(r)], times[static_cast<std::size_t>(r)].data(),
             times[static_cast<std::size_t>(r)].size() * sizeof(std::int64_t));
  }
  for (int r = 0; r < ranks; ++r) write_all(to_child[static_cast<std::size_t>(r)], "x", 1);
  bool ok = true;
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }
  for (int r = 0; r < ranks; ++r) {
    ::close(to_child[static_cast<std::size_t>(r)]);
    ::close(from_child[static_cast<std::size_t>(r)]);
  }
  ::munmap(shared, sizeof(StartBarrier));
  if (!ok) throw std::runtime_error("a rank failed (wrong result or timeout)");
  std::vector<double> slowest, span;
  for (int run = 1; run <= runs; ++run) {
    std::int64_t start = INT64_MAX, end = 0, longest = 0;
    for (const auto& t : times) {
      const std::int64_t b = t[static_cast<std::size_t>(2 * run)], e = t[static_cast<std::size_t>(2 * run + 1)];
      start = std::min(start, b);
      end = std::max(end, e);
      longest = std::max(longest, e - b);
    }
    slowest.push_back(static_cast<double>(longest) * 1e-9);
    span.push_back(static_cast<double>(end - start) * 1e-9);
  }
  auto median = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return {median(slowest), median(span)};
}

}  // namespace

int main(int argc, char** argv) {
  const int ranks = std::stoi(arg_value(argc, argv, "ranks", "4"));
  const auto sizes = number_list(arg_value(argc, argv, "mb", "1,16,100"));
  const int runs = std::stoi(arg_value(argc, argv, "runs", "7"));
  const auto algorithms_text = arg_value(argc, argv, "algorithm", "ring,rabenseifner,direct");
  // How long a waiting shard polls its same-host channels (-1: the data plane's default).
  const int poll_us = std::stoi(arg_value(argc, argv, "poll-us", "-1"));
  pin_ranks = arg_value(argc, argv, "pin", "0") == "1";
  print_stats = arg_value(argc, argv, "stats", "0") == "1";
  same_host = arg_value(argc, argv, "same-host", "1") != "0";
  std::vector<collectives::Algorithm> algorithms;
  {
    std::stringstream in(algorithms_text);
    for (std::string item; std::getline(in, item, ',');) algorithms.push_back(collectives::parse_algorithm(item));
  }
  std::vector<transport::TlsMode> modes;
  {
    std::stringstream in(arg_value(argc, argv, "tls", "between_hosts"));
    for (std::string item; std::getline(in, item, ',');) {
      const auto mode = transport::parse_tls_mode(item);
      if (!mode) {
        fmt::print(stderr, "--tls: between_hosts, always or off, not '{}'\n", item);
        return 2;
      }
      modes.push_back(*mode);
    }
  }
  fmt::print("allreduce across {} processes on loopback (shard actors over the data plane{}), median of {} runs\n",
             ranks, same_host ? "" : "; no same-host channels: every byte through the sockets", runs);
  fmt::print("time: the slowest rank's own start → result, as allreduce_mpi.c times MPI_Allreduce; span: the\n"
             "first rank's start → the last rank's result (adds the ranks' start skew)\n");
  fmt::print("| MB | algorithm | tls | time ms | algbw GB/s | span ms |\n|---|---|---|---|---|---|\n");
  std::fflush(stdout);  // before the ranks are forked, or each would inherit and print it again
  for (double mb : sizes) {
    const auto elements = static_cast<std::size_t>(mb * 1024 * 1024 / sizeof(float));
    for (auto a : algorithms)
      for (auto mode : modes) {
        const Timing t = measure(ranks, elements, runs, a, poll_us, mode);
        fmt::print("| {} | {} | {} | {:.2f} | {:.3f} | {:.2f} |\n", mb, collectives::name(a),
                   transport::tls_mode_name(mode), t.slowest_rank * 1e3,
                   static_cast<double>(elements * sizeof(float)) / t.slowest_rank / 1e9, t.span * 1e3);
        std::fflush(stdout);
      }
  }
  return 0;
}
