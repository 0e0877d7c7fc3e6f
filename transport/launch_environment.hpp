#pragma once
// Where a process stands when a cluster launcher started it: its rank, the
// number of ranks, its rank on its host, and where rank 0 runs, read from the
// variables each launcher sets:
//
//   torchrun style  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
//   Open MPI        OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE (mpirun)
//   Slurm           SLURM_PROCID, SLURM_STEP_NUM_TASKS (or SLURM_NTASKS), SLURM_LOCALID,
//                   SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST), inside a job step (srun)
//   PMI / PMIx      PMI_RANK, PMI_SIZE (MPICH's Hydra); PMIX_RANK alone names no size
//
// The first family whose rank variable is set wins, in that order (mpirun
// inside a Slurm allocation is Open MPI's ranks, not Slurm's). A family that
// is set only in part (Open MPI's or PMI's size without its rank, Slurm's
// SLURM_PROCID outside any job and step too), or with values that do not
// parse, is an error naming the variable: a rank that guessed would wait for
// peers that never come, or train alone.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taihu::transport {

struct LaunchEnvironment {
  std::string launcher;  // "torchrun", "Open MPI", "Slurm", "PMI"
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;                 // ranks on this host (1 when the launcher does not say)
  std::vector<std::string> hosts;     // the job's hosts in rank-0-first order, where the launcher names them
  std::string head_address;           // rank 0's host, where the launcher names it (else empty)
  std::optional<std::uint16_t> head_port;  // MASTER_PORT
  std::string job_id;                 // Slurm's job.step, Open MPI's job id, TORCHELASTIC_RUN_ID (may be empty)

  // "rank 3 of 4 (Slurm, local rank 1 of 2)".
  std::string describe() const;
};

// Reads a variable; nullopt when it is not set.
using EnvironmentLookup = std::function<std::optional<std::string>(std::string_view name)>;
// The process's own environment.
EnvironmentLookup process_environment();

// The launcher's view, or nullopt when no launcher started this process (or
// started only one rank). Throws ConfigError naming the variable for a
// partial or malformed environment.
std::optional<LaunchEnvironment> detect_launch(const EnvironmentLookup& env);

// Slurm's compressed host list ("node[01-03,07],login2") expanded in order.
// Throws ConfigError naming `variable` for malformed text.
std::vector<std::string> expand_host_list(std::string_view list, std::string_view variable);

// Slurm's tasks per node ("2(x3),1" is 2, 2, 2, 1), one count per node of the
// step in node order; ConfigError naming `variable` when malformed.
std::vector<int> expand_tasks_per_node(std::string_view list, std::string_view variable);

}  // namespace taihu::transport
