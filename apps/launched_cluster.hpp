#pragma once
// taihu-train started by a cluster launcher (srun, mpirun, torchrun; see
// transport/launch_environment.hpp): the launcher's ranks form the cluster by
// themselves, with no wrapper script and no idle task.
//
//   rank 0      the coordinator (nodes = the launcher's size) and, in the
//               same process and actor system, node 0 for rank 0's own
//               share of the training;
//   rank k > 0  node k, joining rank 0's coordinator (node index = rank, so
//               that logs and the MPI transport speak of the same k).
//
// How they meet (Meeting below): rank 0 listens on a free port (torchrun:
// MASTER_PORT) and hands its address, the port and the run's secret to the
// others through the launcher's PMIx store where it serves one
// (transport/launcher_store.hpp), else through files in the rendezvous
// directory every rank must see: [cluster] rendezvous, by default the output
// directory, named by the launcher's job (Slurm job and step, Open MPI's job;
// TAIHU_JOB_ID overrides), readable by their owner only, written atomically,
// and removed at the end. torchrun has no store that other programs can
// read: there the secret comes from [cluster] secret_file.
// Every process listens on [cluster] interface's address when one is named
// (e.g. ib0), else on all interfaces, and tells its peers the address by
// which it reached the coordinator.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "actors/compute/cluster.hpp"
#include "core/config/config.hpp"
#include "transport/launch_environment.hpp"

namespace taihu::app {

// How rank 0 tells the others where its coordinator listens, and the secret.
enum class Meeting {
  launcher_address,  // torchrun: MASTER_ADDR:MASTER_PORT; the secret from [cluster] secret_file
  launcher_store,    // PMIx (mpirun, srun --mpi=pmix): rank 0 puts them in the launcher's store
  directory,         // otherwise: files in the rendezvous directory
};

// Where the ranks of one launch leave their address, port and secret.
struct Rendezvous {
  std::filesystem::path directory;
  std::string job;  // names the files: one launch's, not another's

  std::filesystem::path secret_file() const { return directory / (".taihu-" + job + ".secret"); }
  std::filesystem::path port_file() const { return directory / (".taihu-" + job + ".port"); }
  std::filesystem::path host_file() const { return directory / (".taihu-" + job + ".host"); }

  // From [cluster] rendezvous (else [output] dir) and the launch's job.
  static Rendezvous of(const transport::LaunchEnvironment& launch, const config::Document& doc);
};

// Rank 0. Configures `doc` as the coordinator of the launch's ranks and, once
// its control port is open, tells the other ranks where it is (the store or
// the rendezvous files). The destructor removes the files.
class LaunchedCoordinator {
 public:
  LaunchedCoordinator(const transport::LaunchEnvironment& launch, config::Document& doc);
  ~LaunchedCoordinator();
  LaunchedCoordinator(const LaunchedCoordinator&) = delete;
  LaunchedCoordinator& operator=(const LaunchedCoordinator&) = delete;

  // Node 0, which the coordinator runs beside itself (ClusterSettings::own_node).
  compute::NodeOptions own_node() const;

 private:

  Meeting meeting_ = Meeting::directory;
  Rendezvous rendezvous_;
  std::string advertised_host_;  // how the nodes reach the coordinator
  std::filesystem::path secret_path_;
  std::filesystem::path port_file_;  // the coordinator writes its port there once it listens
  compute::NodeOptions own_node_;
  bool generated_secret_ = false;
  double join_timeout_ = 60;
  // Hands the address to the PMIx store, with what it uses (it may outlive
  // this object: see the destructor).
  std::shared_ptr<std::atomic<bool>> stopping_ = std::make_shared<std::atomic<bool>>(false);
  std::future<void> shared_;  // ready once the sharer has ended
  std::thread sharer_;
};

// Ranks 1 and up: joins rank 0's coordinator as a node, with the timeouts and
// certificates of the local config's [cluster]; returns taihu-node's exit code.
int run_launched_node(const transport::LaunchEnvironment& launch, config::Document& doc);

}  // namespace taihu::app
