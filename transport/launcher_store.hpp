#pragma once
// The key-value store of the launcher that started this process, where it
// has one: PMIx, served by Open MPI's mpirun and by Slurm's srun --mpi=pmix.
// Rank 0 publishes a text (its address, port and the run's secret) and every
// rank reads it, so that the ranks need no shared directory. Built where
// PMIx's development files are (libpmix-dev); without them, or outside a
// PMIx launch, there is no store.

#include <optional>
#include <string>

namespace taihu::transport {

// Whether this process can reach a PMIx server (PMIX_RANK is set and taihu
// was built with PMIx).
bool launcher_store_available();

// "OpenPMIx 4.2.2rc2", or "no PMIx" for a build without it (for --version).
std::string launcher_store_version();

// Collective: every rank of the launch calls it once. Rank 0 passes its text,
// the others nullopt; all get rank 0's text. Throws ConfigError when the
// store fails or rank 0 does not publish within `timeout_seconds`.
std::string share_from_rank0(const std::optional<std::string>& rank0_text, double timeout_seconds);

}  // namespace taihu::transport
