// Allreduce across the ranks of one mpirun, three ways side by side in the
// same processes, alternating run by run:
//   plane    the shard actors over taihu's data plane (actors/chunk_link/,
//            transport/data_plane.hpp), as [cluster] transport = taihu;
//   mpi      the same shard actors over the MPI transport
//            (transport/mpi_transport.hpp), as [cluster] transport = mpi;
//   MPI_Allreduce  Open MPI's own collective on the same floats.
// Each run starts after an MPI_Barrier; its time is the slowest rank's own
// start → result (as bench/mpi/allreduce_mpi.c times MPI_Allreduce); the
// median over the runs is printed, with algorithm bandwidth = bytes / time.
// The ranks may be on several hosts: each data plane listens on all addresses
// and its peers connect by host name (as launched ranks do).
//
//   mpirun -np 4 bench_mpi_transport_actors [--mb=1,16,100] [--runs=7] [--algorithm=ring] [--ways=plane,mpi]
//              [--tls=between_hosts]   (the data plane's [cluster] tls; a list runs one plane per mode)
//              [--link-gbps=G]         (each host's link rate: every time also as a share of the
//                                       ring's bound 2(N-1)/N x bytes / rate)
//              [--samples=FILE]        (every run as a JSON line, below) [--baseline=no] (no MPI_Allreduce)
//
// bench/mpi_transport.sh runs it and the LeNet comparison; bench/multihost_allreduce.sh across
// the hosts of the multi-host test bed.

#include <caf/all.hpp>
#include <fmt/format.h>
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "actors/chunk_link/arena_allocator.hpp"
#include "actors/chunk_link/chunk_link.hpp"
#include "actors/sync/shard_actor.hpp"
#include "bench/bench_args.hpp"
#include "bench/process_usage.hpp"
#include "collectives/algorithms.hpp"
#include "messages/type_ids.hpp"
#include "transport/cluster_secret.hpp"
#include "transport/mpi_transport.hpp"
#include "transport/shared_arena.hpp"

using namespace taihu;
using Clock = std::chrono::steady_clock;

namespace {

using taihu::bench::arg_value;
using taihu::bench::number_list;

// One bucket's shard on one link, and the actor that owns it: it takes the
// start time when it hands the gradients over and the end time when they come
// back (as a worker would), so the main thread's wake-ups stay outside.
class ShardRun {
 public:
  ShardRun(caf::actor_system& system, const std::shared_ptr<transport::ChunkLink>& link, std::uint32_t bucket,
           collectives::Algorithm algorithm, int rank, int ranks, std::size_t elements,
           const msg::PayloadAllocator* allocator)
      : rank_(rank), ranks_(ranks), allocator_(allocator), elements_(elements) {
    const auto topology = collectives::Topology::uniform(ranks, collectives::Link{30e-6, 3e9}, 6e9);
    auto spec = sync::shard_specs(collectives::make_allreduce(algorithm, topology, elements), bucket)
        [static_cast<std::size_t>(rank)];
    shard_ = sync::spawn_shard(system, std::move(spec), link);
    link->attach(bucket, rank, shard_);
    driver_ = system.spawn([this, bucket](caf::event_based_actor* self) -> caf::behavior {
      return {
          [this, self, bucket](std::uint64_t run) {
            start_ = Clock::now();
            self->send(shard_, msg::GradientReady{bucket, run, std::move(buffer_)});
          },
          [this](msg::Reduced& r) {
            end_ = Clock::now();
            buffer_ = std::move(r.buffer);
            done_.set_value();
          },
      };
    });
    std::vector<msg::chunk_receiver> peers(static_cast<std::size_t>(ranks));
    peers[static_cast<std::size_t>(rank)] = shard_;
    // The driver is untyped: it also takes the run to start.
    caf::anon_send(shard_, msg::ShardInit{bucket, peers, caf::actor_cast<msg::reduced_receiver>(driver_)});
  }
  ~ShardRun() {
    caf::anon_send_exit(shard_, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(driver_, caf::exit_reason::user_shutdown);
  }

  // Fills this rank's gradients (outside the time).
  void prepare() {
    if (buffer_.size() != elements_) buffer_ = msg::TensorPayload::allocate(elements_, allocator_);
    std::fill_n(buffer_.mutable_data(), elements_, static_cast<float>(rank_ + 1));
  }
  // One allreduce; this rank's seconds.
  double run(std::uint64_t iteration) {
    done_ = std::promise<void>{};
    auto done = done_.get_future();
    caf::anon_send(driver_, iteration);
    if (done.wait_for(std::chrono::seconds(120)) != std::future_status::ready)
      throw std::runtime_error("an allreduce did not finish within 120 s");
    return std::chrono::duration<double>(end_ - start_).count();
  }
  // The last run's start and end on this host's steady clock, in seconds.
  std::pair<double, double> stamps() const {
    return {std::chrono::duration<double>(start_.time_since_epoch()).count(),
            std::chrono::duration<double>(end_.time_since_epoch()).count()};
  }
  // Every element is sum(r + 1), exactly.
  bool correct() const {
    const float expected = static_cast<float>(ranks_ * (ranks_ + 1) / 2);
    for (std::size_t i = 0; i < elements_; i += 997)
      if (buffer_[i] != expected) return false;
    return true;
  }

 private:
  int rank_, ranks_;
  const msg::PayloadAllocator* allocator_;
  std::size_t elements_;
  sync::shard_actor shard_;
  caf::actor driver_;
  msg::TensorPayload buffer_;
  Clock::time_point start_, end_;
  std::promise<void> done_;
};

double slowest(transport::MpiSession& mpi, double mine) {
  double all = 0;
  mpi.call([&] { MPI_Allreduce(&mine, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); });
  return all;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const auto sizes = number_list(arg_value(argc, argv, "mb", "1,16,100"));
  const int runs = std::stoi(arg_value(argc, argv, "runs", "7"));
  const auto algorithm = collectives::parse_algorithm(arg_value(argc, argv, "algorithm", "ring"));
  const std::string ways = arg_value(argc, argv, "ways", "plane,mpi");  // the shard actors' transports to run
  std::vector<transport::TlsMode> tls_modes;
  {
    std::stringstream list(arg_value(argc, argv, "tls", "between_hosts"));
    for (std::string item; std::getline(list, item, ',');) {
      const auto mode = transport::parse_tls_mode(item);
      if (!mode) {
        fmt::print(stderr, "--tls: between_hosts, always or off, not '{}'\n", item);
        return 2;
      }
      tls_modes.push_back(*mode);
    }
  }
  const double link_gbps = std::stod(arg_value(argc, argv, "link-gbps", "0"));
  // --samples=FILE: rank 0 writes every run of every way as a JSON line: the time as in the
  // table, and, for ranks that share one clock (one machine: the multi-host test bed), the time
  // from the last rank's start to the last result and the spread of the starts; and the CPU time
  // all ranks' processes used meanwhile (user + system, all threads).
  const std::string samples_path = arg_value(argc, argv, "samples", "");
  // --baseline=no: no Open MPI MPI_Allreduce runs (no column for it; "speed vs" shows -).
  const bool baseline = arg_value(argc, argv, "baseline", "yes") != "no";
  transport::MpiSession mpi;
  const int rank = mpi.rank(), ranks = mpi.size();
  const bool sampling = !samples_path.empty();  // every rank takes part in the gathers
  std::FILE* samples = nullptr;                  // rank 0's file
  if (sampling && rank == 0 && !(samples = std::fopen(samples_path.c_str(), "w"))) {
    std::fprintf(stderr, "--samples: cannot write %s\n", samples_path.c_str());
    return 2;
  }
  int local_ranks = 1;
  mpi.call([&] {
    MPI_Comm host;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
    MPI_Comm_size(host, &local_ranks);
    MPI_Comm_free(&host);
  });

  caf::actor_system_config cfg;
  cfg.add_message_types<caf::id_block::taihu>();
  // One rank per process: no more scheduler threads than its share of the cores.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cfg.set("scheduler.max-threads", std::max(1, cores / local_ranks));
  cfg.set("scheduler.policy", caf::atom("sharing"));
  caf::actor_system system{cfg};

  // taihu's data plane, as a node opens it: a secret from rank 0, the ports exchanged, the arena for same-host reads.
  std::string secret = rank == 0 ? transport::random_secret() : std::string();
  mpi.call([&] {
    int length = static_cast<int>(secret.size());
    MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
    secret.resize(static_cast<std::size_t>(length));
    MPI_Bcast(secret.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
  });
  std::vector<int> rank_node(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) rank_node[static_cast<std::size_t>(r)] = r;
  static std::atomic<bool> closing{false};  // from then on, peers leave
  auto report_loss = [rank](int node, const std::string& why) {
    if (!closing) std::fprintf(stderr, "rank %d lost node %d: %s\n", rank, node, why.c_str());
  };
  const auto arena = std::make_shared<transport::ArenaAllocator>(transport::SharedArena::install());
  // Every rank's host name, for its peers to connect to.
  std::array<char, 256> host{};
  ::gethostname(host.data(), host.size() - 1);
  std::vector<char> hosts(host.size() * static_cast<std::size_t>(ranks));
  mpi.call([&] {
    MPI_Allgather(host.data(), static_cast<int>(host.size()), MPI_CHAR, hosts.data(), static_cast<int>(host.size()),
                  MPI_CHAR, MPI_COMM_WORLD);
  });
  // One data plane per TLS mode, each with its own connections.
  std::vector<std::shared_ptr<transport::ChunkLink>> plane_links;
  for (const transport::TlsMode mode : tls_modes) {
    transport::DataPlaneOptions options;
    options.node = rank;
    options.secret = secret;
    options.listen_address = "0.0.0.0";
    options.tls = mode;
    auto link = std::make_shared<transport::ChunkLink>(options, rank_node, report_loss, arena);
    std::vector<int> ports(static_cast<std::size_t>(ranks));
    int port = link->port();
    mpi.call([&] { MPI_Allgather(&port, 1, MPI_INT, ports.data(), 1, MPI_INT, MPI_COMM_WORLD); });
    for (int r = 0; r < ranks; ++r)
      if (r != rank)
        link->data_plane()->connect(r, &hosts[host.size() * static_cast<std::size_t>(r)],
                                    static_cast<std::uint16_t>(ports[static_cast<std::size_t>(r)]));
    plane_links.push_back(std::move(link));
  }
  auto mpi_link = std::make_shared<transport::ChunkLink>(
      rank, rank_node,
      [rank, ranks](transport::FrameSink* sink) { return std::make_unique<transport::MpiTransport>(rank, ranks, sink); },
      report_loss);

  if (rank == 0) {
    fmt::print("allreduce across {} MPI ranks ({} on this host), {}; median of {} runs after a warm-up, the three\n"
               "ways alternating; time: the slowest rank's own start → result\n",
               ranks, local_ranks, transport::mpi_library_version(), runs);
    if (link_gbps > 0)
      fmt::print("links of {} Gbit/s: the ring's bound is 2(N-1)/N x bytes / rate\n", link_gbps);
    fmt::print("| MB | way | time ms | algbw GB/s | speed vs MPI_Allreduce | of link bound |\n"
               "|---|---|---|---|---|---|\n");
    std::fflush(stdout);
  }
  bool ok = true;
  std::uint32_t bucket = 0;
  for (double mb : sizes) {
    const auto elements = static_cast<std::size_t>(mb * 1024 * 1024 / sizeof(float));
    const std::string shards(collectives::name(algorithm));
    // The ways in the order they run and print: a data plane per TLS mode, then the MPI transport.
    std::vector<std::pair<std::string, std::unique_ptr<ShardRun>>> shard_ways;
    if (ways.find("plane") != std::string::npos)
      for (std::size_t i = 0; i < plane_links.size(); ++i)
        shard_ways.emplace_back(fmt::format("taihu, data plane, tls = {} ({})", transport::tls_mode_name(tls_modes[i]),
                                            shards),
                                std::make_unique<ShardRun>(system, plane_links[i], bucket, algorithm, rank, ranks,
                                                           elements, arena.get()));
    if (ways.find("mpi") != std::string::npos)
      shard_ways.emplace_back("taihu, MPI transport (" + shards + ")",
                              std::make_unique<ShardRun>(system, mpi_link, bucket, algorithm, rank, ranks, elements,
                                                         nullptr));
    ++bucket;
    std::vector<float> in(elements, static_cast<float>(rank + 1)), out(elements);
    std::map<std::string, std::vector<double>> times;
    for (int run = 0; run <= runs; ++run) {
      for (auto& [label, way] : shard_ways) {
        way->prepare();
        mpi.call([] { MPI_Barrier(MPI_COMM_WORLD); });
        const double cpu_before = bench::ProcessUsage::now().cpu_seconds();  // the kernel's TCP work counted
        const double mine = way->run(static_cast<std::uint64_t>(run));
        const double cpu_used = bench::ProcessUsage::now().cpu_seconds() - cpu_before;
        const double t = slowest(mpi, mine);
        if (sampling) {
          // Every rank's start and end: on one machine (the test bed's hosts) one clock.
          const auto [started, ended] = way->stamps();
          const double stamp[3] = {started, ended, cpu_used};
          std::vector<double> all(3 * static_cast<std::size_t>(ranks));
          mpi.call([&] { MPI_Gather(stamp, 3, MPI_DOUBLE, all.data(), 3, MPI_DOUBLE, 0, MPI_COMM_WORLD); });
          if (samples) {
            double first = all[0], last = all[0], end = all[1], cpu = 0;
            for (std::size_t r = 0; r < static_cast<std::size_t>(ranks); ++r) {
              first = std::min(first, all[3 * r]);
              last = std::max(last, all[3 * r]);
              end = std::max(end, all[3 * r + 1]);
              cpu += all[3 * r + 2];
            }
            std::fprintf(samples,
                         "{\"mb\": %g, \"way\": \"%s\", \"run\": %d, \"seconds\": %.9g, \"from_last_start\": %.9g, "
                         "\"start_skew\": %.9g, \"cpu_seconds\": %.9g}\n",
                         mb, label.c_str(), run, t, end - last, last - first, cpu);
            std::fflush(samples);
          }
        }
        ok = ok && way->correct();
        if (run > 0) times[label].push_back(t);
      }
      double t = 0;
      if (!baseline) continue;
      mpi.call([&] {
        MPI_Barrier(MPI_COMM_WORLD);
        const double start = MPI_Wtime();
        MPI_Allreduce(in.data(), out.data(), static_cast<int>(elements), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        const double mine = MPI_Wtime() - start;
        MPI_Allreduce(&mine, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      });
      ok = ok && out[0] == static_cast<float>(ranks * (ranks + 1) / 2);
      if (run > 0) times["Open MPI MPI_Allreduce"].push_back(t);
    }
    const double mpi_time = baseline ? median(times["Open MPI MPI_Allreduce"]) : 0.0;
    const double bytes = static_cast<double>(elements * sizeof(float));
    const double bound = link_gbps > 0 ? 2.0 * (ranks - 1) / ranks * bytes * 8 / (link_gbps * 1e9) : 0;
    std::vector<std::string> labels;
    for (const auto& [label, way] : shard_ways) labels.push_back(label);
    if (baseline) labels.push_back("Open MPI MPI_Allreduce");
    for (const std::string& label : labels) {
      const double t = median(times[label]);
      if (rank == 0)
        fmt::print("| {} | {} | {:.2f} | {:.3f} | {} | {} |\n", mb, label, t * 1e3, bytes / t / 1e9,
                   baseline ? fmt::format("{:.2f}", mpi_time / t) : std::string("-"),
                   bound > 0 ? fmt::format("{:.2f}", bound / t) : std::string("-"));
    }
    if (rank == 0) std::fflush(stdout);
    mpi.call([] { MPI_Barrier(MPI_COMM_WORLD); });
  }
  closing = true;
  mpi.call([] { MPI_Barrier(MPI_COMM_WORLD); });  // every rank's last chunks are in before the links close
  for (const auto& link : plane_links) link->detach_all();
  mpi_link->detach_all();
  if (samples) std::fclose(samples);
  if (!ok) std::fprintf(stderr, "rank %d: a wrong sum\n", rank);
  return ok ? 0 : 1;
}
