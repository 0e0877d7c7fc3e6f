#include "apps/launched_cluster.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <fstream>
#include <sstream>
#include <vector>

#include "actors/compute/cluster.hpp"
#include "apps/actor_system.hpp"
#include "apps/version.hpp"
#include "core/blas/kernel_selection.hpp"
#include "core/common/check.hpp"
#include "core/common/error.hpp"
#include "transport/addresses.hpp"
#include "transport/cluster_secret.hpp"
#include "transport/net_error.hpp"
#include "transport/launcher_store.hpp"

namespace taihu::app {
namespace {

using Clock = std::chrono::steady_clock;

// Writes `text` to `path` readable by its owner only, atomically: a reader
// sees the whole file or none.
void write_private_file(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path partial = path.string() + fmt::format(".tmp.{}", ::getpid());
  const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  require<ConfigError>(fd >= 0, "cluster launch: cannot write '{}': {}", partial.string(), std::strerror(errno));
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!written) ::unlink(partial.c_str());
  require<ConfigError>(written, "cluster launch: cannot write '{}'", partial.string());
  std::filesystem::rename(partial, path);
}

// The text of a file once it exists and is not empty (the writers rename
// whole files into place), waiting until `deadline`; ConfigError naming the
// file and what writes it after that. `stop` ends the wait early (nullopt).
std::optional<std::string> wait_for_file(const std::filesystem::path& path, Clock::time_point deadline,
                                         std::string_view writer, const std::atomic<bool>* stop = nullptr) {
  for (;;) {
    std::ifstream in(path);
    std::stringstream text;
    if (in && (text << in.rdbuf()) && !text.str().empty()) {
      std::string s = text.str();
      while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
      return s;
    }
    if (stop != nullptr && stop->load()) return std::nullopt;
    if (Clock::now() > deadline)
      raise<ConfigError>("cluster launch: '{}' did not appear in time ({} writes it): every rank must see the "
                         "rendezvous directory ([cluster] rendezvous, by default the output directory)",
                         path.string(), writer);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::uint16_t parse_port(const std::string& text, const std::filesystem::path& from) {
  const auto port = config::parse_value<int>(text);
  require<ConfigError>(port && *port > 0 && *port <= 65535, "cluster launch: '{}' holds no port ('{}')", from.string(),
                       text);
  return static_cast<std::uint16_t>(*port);
}

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000));
}

// The address to listen on: [cluster] interface's, else every interface.
std::string listen_address(const config::Section& cluster) {
  const std::string interface = cluster.get_or<std::string>("interface", "");
  if (interface.empty()) return "0.0.0.0";
  try {
    return transport::interface_address(interface);
  } catch (const ConfigError& e) {
    throw cluster.error("interface", e.what());
  }
}

// A path key of [cluster], resolved against the config file ("" when unset).
std::string cluster_path(const config::Document& doc, const char* key) {
  const std::string text = doc.section("cluster").get_or<std::string>(key, "");
  return text.empty() ? text : std::filesystem::absolute(doc.resolve(text)).string();
}

// How many node processes share this host's cores: the launcher's ranks on
// it, unless the launcher bound each to cores of its own (srun and mpirun
// can), which the affinity mask then shows.
int processes_on_host(const transport::LaunchEnvironment& launch) {
  const auto online = static_cast<int>(std::thread::hardware_concurrency());
  return blas::available_cores() < online ? 1 : std::max(1, launch.local_size);
}

// torchrun passes no secret: every rank reads the configured file.
void require_secret_file(const transport::LaunchEnvironment& launch, const std::filesystem::path& secret_file) {
  require<ConfigError>(!secret_file.empty(),
                       "cluster launch: {} has no store to pass a secret through: give [cluster] secret_file, "
                       "a file every rank can read (and only you)",
                       launch.launcher);
}

// torchrun names rank 0's address and port; PMIx launchers (mpirun, srun
// --mpi=pmix) carry them in their store; the others need a shared directory.
Meeting meeting_of(const transport::LaunchEnvironment& launch) {
  if (launch.head_port) return Meeting::launcher_address;
  if (transport::launcher_store_available()) return Meeting::launcher_store;
  return Meeting::directory;
}

// What rank 0 shares through the store: host, port and secret, a line each.
std::string store_text(const std::string& host, std::uint16_t port, const std::string& secret) {
  return fmt::format("{}\n{}\n{}", host, port, secret);
}

// What every rank's node takes from the local config's [cluster] and the launch.
compute::NodeOptions node_options(const transport::LaunchEnvironment& launch, const config::Document& doc) {
  const config::Section& cluster = doc.section("cluster");
  compute::NodeOptions o;
  o.join_timeout = cluster.get_or<double>("join_timeout", o.join_timeout);
  o.heartbeat = cluster.get_or<double>("heartbeat", o.heartbeat);
  o.dead_after = cluster.get_or<double>("dead_after", o.dead_after);
  o.data_listen = listen_address(cluster);
  o.name = fmt::format("rank{}@{}", launch.rank, transport::host_name());
  o.processes_on_host = processes_on_host(launch);
  o.build = build_id();
  o.place = launch.rank;
  // This rank's own mode, which rank 0's coordinator must share: a rank
  // started with tls = always must not run in plaintext because rank 0 has off.
  o.tls = compute::read_tls_mode(cluster, compute::ClusterSettings{}.tls);
  o.certificates = {cluster_path(doc, "certificate"), cluster_path(doc, "key"), cluster_path(doc, "ca_file")};
  transport::check_certificates(o.certificates, {"[cluster] certificate", "[cluster] key", "[cluster] ca_file"});
  return o;
}

}  // namespace

Rendezvous Rendezvous::of(const transport::LaunchEnvironment& launch, const config::Document& doc) {
  Rendezvous r;
  const std::string configured = doc.section("cluster").get_or<std::string>("rendezvous", "");
  r.directory = std::filesystem::absolute(
      configured.empty() ? std::filesystem::path(doc.section("output").get_or<std::string>("dir", "out"))
                         : doc.resolve(configured));
  const char* override_job = std::getenv("TAIHU_JOB_ID");
  r.job = override_job != nullptr && *override_job != '\0' ? override_job : launch.job_id;
  require<ConfigError>(!r.job.empty(),
                       "cluster launch: {} names no job, so the ranks' rendezvous files would have no name of "
                       "their own: set TAIHU_JOB_ID to a name unique to this launch",
                       launch.launcher);
  for (char& ch : r.job)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '.') ch = '_';
  std::filesystem::create_directories(r.directory);
  return r;
}

LaunchedCoordinator::LaunchedCoordinator(const transport::LaunchEnvironment& launch, config::Document& doc) {
  const config::Section& root = doc.root();
  const int nodes = root.get_or<int>("nodes", 0);
  if (nodes != 0 && nodes != launch.size)
    throw root.error("nodes", fmt::format("is {}, but {} started {} ranks (leave nodes unset under a launcher)",
                                          nodes, launch.launcher, launch.size));
  const config::Section& cluster = doc.section("cluster");
  const std::string listen = listen_address(cluster);
  join_timeout_ = cluster.get_or<double>("join_timeout", join_timeout_);
  secret_path_ = cluster_path(doc, "secret_file");
  own_node_ = node_options(launch, doc);

  doc.apply_override(fmt::format("nodes={}", launch.size));
  doc.apply_override("cluster.listen=" + listen);
  meeting_ = meeting_of(launch);
  advertised_host_ = transport::reachable_address(listen);
  // Where the coordinator tells its port; only this process reads it, unless the ranks meet in a directory.
  port_file_ = std::filesystem::temp_directory_path() / fmt::format("taihu-launch-{}.port", ::getpid());
  switch (meeting_) {
    case Meeting::launcher_address:
      require_secret_file(launch, secret_path_);
      advertised_host_ = launch.head_address;
      doc.apply_override(fmt::format("cluster.port={}", *launch.head_port));
      break;
    case Meeting::launcher_store:
      if (secret_path_.empty()) {
        // For this rank's own node only; the other ranks get the secret from the store.
        secret_path_ = std::filesystem::temp_directory_path() / fmt::format("taihu-launch-{}.secret", ::getpid());
        write_private_file(secret_path_, transport::random_secret() + "\n");
        generated_secret_ = true;
        doc.apply_override("cluster.secret_file=" + secret_path_.string());
      }
      doc.apply_override("cluster.port=0");
      break;
    case Meeting::directory:
      rendezvous_ = Rendezvous::of(launch, doc);
      for (const auto& stale : {rendezvous_.port_file(), rendezvous_.host_file(), rendezvous_.secret_file()})
        std::filesystem::remove(stale);
      if (secret_path_.empty()) {
        secret_path_ = rendezvous_.secret_file();
        write_private_file(secret_path_, transport::random_secret() + "\n");
        generated_secret_ = true;
        doc.apply_override("cluster.secret_file=" + secret_path_.string());
      }
      write_private_file(rendezvous_.host_file(), advertised_host_ + "\n");
      doc.apply_override("cluster.port=0");
      port_file_ = rendezvous_.port_file();
      break;
  }
  std::filesystem::remove(port_file_);
  doc.apply_override("cluster.port_file=" + port_file_.string());
  try {
    own_node_.secret = transport::read_secret_file(secret_path_);  // for its data plane
  } catch (const transport::NetError& e) {
    throw ConfigError(std::string("cluster launch: ") + e.what());
  }
  if (transport::is_wildcard_address(own_node_.data_listen)) own_node_.data_advertise = advertised_host_;
  spdlog::info("cluster launch: {}; this rank coordinates {} nodes at {} and is node 0; the ranks meet {}",
               launch.describe(), launch.size, advertised_host_,
               meeting_ == Meeting::launcher_address ? "at " + launch.head_address + ":MASTER_PORT"
               : meeting_ == Meeting::launcher_store ? std::string("through the launcher's PMIx store")
                                                     : "in " + rendezvous_.directory.string());
  // The others learn the port once the coordinator listens (in the rendezvous
  // directory the coordinator's port file is theirs to read already).
  if (meeting_ != Meeting::launcher_store) return;
  std::promise<void> ended;
  shared_ = ended.get_future();
  sharer_ = std::thread([ended = std::move(ended), stopping = stopping_, port_file = port_file_,
                         host = advertised_host_, secret = own_node_.secret, timeout = join_timeout_]() mutable {
    try {
      auto text = wait_for_file(port_file, deadline_after(timeout), "this rank's coordinator", stopping.get());
      if (text) transport::share_from_rank0(store_text(host, parse_port(*text, port_file), secret), timeout);
    } catch (const std::exception& e) {
      spdlog::error("cluster launch: could not tell the other ranks where the coordinator listens: {}", e.what());
    }
    ended.set_value();
  });
}

compute::NodeOptions LaunchedCoordinator::own_node() const { return own_node_; }

LaunchedCoordinator::~LaunchedCoordinator() {
  *stopping_ = true;
  // The sharer ends at once (its wait for the port file looks at stopping_
  // every 0.1 s), unless it waits in the PMIx fence for ranks that have not
  // come (up to join_timeout), which nothing can cancel: a run stopped then
  // (SIGTERM) leaves it behind rather than wait.
  if (sharer_.joinable()) {
    if (shared_.wait_for(std::chrono::milliseconds(250)) == std::future_status::ready)
      sharer_.join();
    else
      sharer_.detach();
  }
  std::error_code ignored;
  std::filesystem::remove(port_file_, ignored);
  if (generated_secret_) std::filesystem::remove(secret_path_, ignored);
  if (meeting_ == Meeting::directory) std::filesystem::remove(rendezvous_.host_file(), ignored);
}

int run_launched_node(const transport::LaunchEnvironment& launch, config::Document& doc) {
  compute::NodeOptions o = node_options(launch, doc);
  std::filesystem::path secret = cluster_path(doc, "secret_file");
  const auto deadline = deadline_after(o.join_timeout);
  switch (meeting_of(launch)) {
    case Meeting::launcher_address:
      require_secret_file(launch, secret);
      o.coordinator_host = launch.head_address;
      o.coordinator_port = *launch.head_port;
      break;
    case Meeting::launcher_store: {
      const std::string text = transport::share_from_rank0(std::nullopt, o.join_timeout);
      const auto first = text.find('\n'), second = text.find('\n', first + 1);
      require<ConfigError>(first != std::string::npos && second != std::string::npos,
                           "cluster launch: rank 0's entry in the launcher's store is malformed");
      o.coordinator_host = text.substr(0, first);
      o.coordinator_port = parse_port(text.substr(first + 1, second - first - 1), "the launcher's store");
      o.secret = text.substr(second + 1);
      break;
    }
    case Meeting::directory: {
      const Rendezvous r = Rendezvous::of(launch, doc);
      o.coordinator_host = *wait_for_file(r.host_file(), deadline, "rank 0");
      o.coordinator_port = parse_port(*wait_for_file(r.port_file(), deadline, "rank 0's coordinator"), r.port_file());
      if (secret.empty()) {
        secret = r.secret_file();
        wait_for_file(secret, deadline, "rank 0");
      }
      break;
    }
  }
  if (o.secret.empty()) {
    try {
      o.secret = transport::read_secret_file(secret);
    } catch (const transport::NetError& e) {
      throw ConfigError(std::string("cluster launch: ") + e.what());
    }
  }
  spdlog::info("cluster launch: {}; joining the coordinator at {}:{}", launch.describe(), o.coordinator_host,
               o.coordinator_port);
  return run_node_process(o);
}

}  // namespace taihu::app
